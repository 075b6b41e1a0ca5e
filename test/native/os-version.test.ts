// src-native/platform/os_version.h: which macOS version host_darwin.mm reports. kern.osproductversion wins; NSProcessInfo's
// answer is the fallback, with macOS 26's compatibility number 16 read as 26. The header is compiled on its own
// here with a small driver (the sysctl and NSProcessInfo calls themselves run only on a Mac).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeSim, root } from '../support/helpers.js';

const DRIVER = `#include <cstdio>
#include <cstdlib>
#include "os_version.h"
int main(int argc, char **argv) {
  for (int i = 1; i + 3 < argc; i += 4) {
    std::printf("%s\\n", mcs::macosVersion(argv[i], std::atol(argv[i + 1]), std::atol(argv[i + 2]), std::atol(argv[i + 3])).c_str());
  }
  return 0;
}
`;

describeSim('the macOS version host_darwin.mm reports', () => {
  it('sysctl first; NSProcessInfo only without it, 16.x read as 26.x; the patch shown when not 0', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-os-version-'));
    writeFileSync(path.join(dir, 'driver.cc'), DRIVER);
    const bin = path.join(dir, 'driver');
    execFileSync('clang++-14', [
      '-std=c++17',
      '-fno-exceptions',
      `-I${path.join(root, 'src-native', 'platform')}`,
      path.join(dir, 'driver.cc'),
      '-o',
      bin,
    ]);
    const cases = [
      ['26.5.2', '16', '5', '2'], // sysctl answers: NSProcessInfo's compatibility number is ignored
      ['15.6', '15', '6', '0'],
      ['', '16', '5', '2'], // no sysctl answer: 16 is macOS 26
      ['', '16', '0', '0'],
      ['', '15', '7', '1'],
      ['', '17', '0', '0'], // a later major is taken as it is
      ['', '10', '16', '0'],
      ['not a version', '16', '1', '0'],
    ];
    const out = execFileSync(bin, cases.flat(), { encoding: 'utf8' }).trim().split('\n');
    expect(out).toEqual(['26.5.2', '15.6', '26.5.2', '26.0', '15.7.1', '17.0', '10.16', '26.1']);
  });
});
