// Globals the hooks touch must never be destroyed: exit() runs static destructors while other threads may still
// query a hooked device, install or restore. On macOS, libc++'s std::mutex has a real destructor (a destroyed one
// makes a later lock throw, and the process aborts); with glibc it is trivial, so a missing [[clang::no_destroy]] on
// a mutex cannot show here (the README's "what only a Mac can verify"). What Linux can show: a global with a
// destructor, such as a std::vector or std::string, registers that destructor with __cxa_atexit.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { describeSim, requireSimBuild, root } from './helpers.js';

// The shipped native sources as the Linux test build compiles them (build-sim.mjs: one folder per target).
const objects = ['addon', 'inject'].flatMap((target) => {
  const dir = path.join(root, 'build', 'obj', target);
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.o')).map((f) => path.join(target, f)) : [];
});

describeSim('static destructors in the native engine', () => {
  beforeAll(requireSimBuild);

  it('covers every shipped source file', () => {
    const sources = readdirSync(path.join(root, 'src-native')).filter((f) => f.endsWith('.mm') && f !== 'host_darwin.mm');
    const compiled = new Set(objects.map((o) => `${path.basename(o, '.o')}.mm`));
    expect(sources.filter((s) => !compiled.has(s))).toEqual([]);
  });

  it('no object file registers a destructor for a global (__cxa_atexit)', () => {
    const registering = objects.filter((o) =>
      execFileSync('nm', ['-u', path.join(root, 'build', 'obj', o)], { encoding: 'utf8' })
        .split('\n')
        .some((line) => /\b__cxa_atexit\b/.test(line)),
    );
    expect(registering).toEqual([]);
  });
});
