import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { majorsOption, NODE_MAJORS, NODE_MAJORS_FILES } from '../../scripts/build/node-versions.mjs';
import { root } from '../support/helpers.js';

// scripts/build/node-versions.mjs: the Node majors besides the test command's, the files rerun on them, and how .ci/run
// shares them out between the native coverage run and the package checks.

/** The majors each of .ci/run's two runs is given, read from its command lines. */
function ciMajors(): { coverage: string[]; packageChecks: string[] } {
  const lines = readFileSync(path.join(root, '.ci', 'run'), 'utf8')
    .split('\n')
    .filter((l) => !l.startsWith('#'));
  const one = (pattern: RegExp) => {
    const found = lines.filter((l) => pattern.test(l));
    expect(found).toHaveLength(1);
    return found[0]!.split(/\s+/);
  };
  const coverage = one(/npm run test:native-coverage/);
  const packageChecks = one(/npm run check:package/);
  return {
    coverage: majorsOption(coverage, '--node-major', []),
    packageChecks: majorsOption(packageChecks, '--node-majors', NODE_MAJORS),
  };
}

describe('the other Node majors', () => {
  it('are 22 and 24, and every file rerun on them exists', () => {
    expect(NODE_MAJORS).toEqual(['22', '24']);
    expect(NODE_MAJORS_FILES.filter((f) => !existsSync(path.join(root, f)))).toEqual([]);
    expect(new Set(NODE_MAJORS_FILES).size).toBe(NODE_MAJORS_FILES.length);
  });

  it('.ci/run gives each major to one run exactly: Node 22 to the native coverage run, Node 24 to the package checks', () => {
    const { coverage, packageChecks } = ciMajors();
    expect({ coverage, packageChecks }).toEqual({ coverage: ['22'], packageChecks: ['24'] });
    expect([...coverage, ...packageChecks].sort()).toEqual([...NODE_MAJORS]);
  });

  it('an option names known majors once each; without it, the fallback', () => {
    expect(majorsOption(['--node-majors', '22,24'], '--node-majors', [])).toEqual(['22', '24']);
    expect(majorsOption(['x', '--node-majors', '24'], '--node-majors', NODE_MAJORS)).toEqual(['24']);
    expect(majorsOption([], '--node-majors', NODE_MAJORS)).toEqual(['22', '24']);
    expect(majorsOption(['--node-major', '22'], '--node-majors', ['24'])).toEqual(['24']);
    expect(() => majorsOption(['--node-major', '20'], '--node-major', [])).toThrow(
      '--node-major 20: 20 is not one of 22, 24',
    );
    for (const argv of [['--node-majors'], ['--node-majors', ''], ['--node-majors', '--json']]) {
      expect(() => majorsOption(argv, '--node-majors', NODE_MAJORS)).toThrow(
        '--node-majors needs a value: one or more of 22, 24, comma-separated',
      );
    }
    expect(() => majorsOption(['--node-majors', '24,,22'], '--node-majors', [])).toThrow(
      '--node-majors 24,,22:  is not one of 22, 24',
    );
    expect(() => majorsOption(['--node-majors', '24,24'], '--node-majors', [])).toThrow(
      '--node-majors 24,24: a major is named twice',
    );
  });

  it('both scripts refuse an unknown major before doing anything (exit 2, the message)', () => {
    const coverage = spawnSync(
      process.execPath,
      [path.join(root, 'scripts', 'measure', 'native-coverage.mjs'), '--node-major', '22,24'],
      { encoding: 'utf8' },
    );
    const checks = spawnSync(
      process.execPath,
      [path.join(root, 'scripts', 'check', 'check-package.mjs'), '--node-majors', '18'],
      { encoding: 'utf8' },
    );
    expect([coverage.status, coverage.stdout, coverage.stderr]).toEqual([
      2,
      '',
      'native-coverage: --node-major 22,24: name one major\n',
    ]);
    const noSuite = spawnSync(
      process.execPath,
      [path.join(root, 'scripts', 'measure', 'native-coverage.mjs'), '--node-major', '22', '--fuzz-only'],
      { encoding: 'utf8' },
    );
    expect([noSuite.status, noSuite.stdout, noSuite.stderr]).toEqual([
      2,
      '',
      'native-coverage: --node-major chooses the Node the suite runs on, and --skip-suite or --fuzz-only runs none: drop one\n',
    ]);
    expect([checks.status, checks.stdout, checks.stderr]).toEqual([
      2,
      '',
      'check-package: --node-majors 18: 18 is not one of 22, 24\n',
    ]);
  });
});
