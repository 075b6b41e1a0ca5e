// Setting up the simulated Metal: the toolchain check's one line (scripts/build/sim-toolchain.mjs) in build-sim.mjs
// and `npm run sim` (scripts/build/sim.mjs), the progress lines of scripts/build/progress.mjs, and `npm run sim` on a
// checkout that is already built.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProgress, inPlace } from '../../scripts/build/progress.mjs';
import { onPath } from '../../scripts/build/sim-toolchain.mjs';
import { buildConsumer, describeSim, requireSimBuild, root } from '../support/helpers.js';

const script = (name: string) => path.join(root, 'scripts', 'build', name);

/** Runs a script of scripts/build with `env` over ours (PATH replaced when given), its output piped (not a terminal). */
function runScript(name: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [script(name), ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 120_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describeSim('the toolchain check: one line, the packages and the command, exit 1, nothing built', () => {
  let bin: string;
  let bare: string;
  beforeAll(() => {
    // A PATH with every tool of the build but the compiler, and one with Node alone.
    bin = mkdtempSync(path.join(tmpdir(), 'mcs-sim-path-'));
    for (const tool of ['node', 'gcc', 'gnustep-config']) symlinkSync(onPath(tool)!, path.join(bin, tool));
    bare = mkdtempSync(path.join(tmpdir(), 'mcs-sim-bare-'));
    symlinkSync(process.execPath, path.join(bare, 'node'));
  });
  afterAll(() => {
    rmSync(bin, { recursive: true, force: true });
    rmSync(bare, { recursive: true, force: true });
  });

  it('build:sim without clang++-14', () => {
    expect(runScript('build-sim.mjs', [], { PATH: bin })).toEqual({
      status: 1,
      stdout: '',
      stderr: 'build:sim: missing clang++-14 (clang-14); install it with: sudo apt-get install -y clang-14\n',
    });
  });

  it('npm run sim without clang++-14: the same line, before npm, tsup or the compiler run', () => {
    expect(runScript('sim.mjs', [], { PATH: bin })).toEqual({
      status: 1,
      stdout: '',
      stderr: 'npm run sim: missing clang++-14 (clang-14); install it with: sudo apt-get install -y clang-14\n',
    });
  });

  it('with Node alone on PATH: every package a PATH search decides, in one line', () => {
    expect(runScript('build-sim.mjs', [], { PATH: bare })).toEqual({
      status: 1,
      stdout: '',
      stderr:
        "build:sim: missing clang++-14 (clang-14), gcc (gcc), GCC's objc/runtime.h (libobjc-12-dev), " +
        'gnustep-config (gnustep-make); install them with: sudo apt-get install -y clang-14 gcc libobjc-12-dev ' +
        'gnustep-make\n',
    });
  });

  it('--packages, for scripts/test.sh: the packages missing, space-separated; an empty line when none is', () => {
    expect(runScript('sim-toolchain.mjs', ['--packages'], { PATH: bin })).toEqual({
      status: 0,
      stdout: 'clang-14\n',
      stderr: '',
    });
    expect(runScript('sim-toolchain.mjs', ['--packages', '--sanitize'])).toEqual({
      status: 0,
      stdout: '\n',
      stderr: '',
    });
    expect(runScript('sim-toolchain.mjs', [])).toEqual({
      status: 2,
      stdout: '',
      stderr: 'usage: node scripts/build/sim-toolchain.mjs --packages [--sanitize]\n',
    });
  });
});

describe('progress lines', () => {
  /** A clock the test moves, and everything written. */
  function harness(tty: boolean, columns = 80) {
    let t = 1000;
    const written: string[] = [];
    const progress = createProgress({ total: 12, write: (s) => written.push(s), now: () => t, tty, columns });
    return { progress, written, at: (seconds: number) => (t = 1000 + seconds * 1000) };
  }

  it('not on a terminal: one plain line per finished step, with the step, the total and the time since the start', () => {
    const { progress, written, at } = harness(false);
    progress.start('src-native/a.mm (addon)');
    progress.start('src-native/b.mm (addon)');
    at(1.25);
    progress.done('src-native/b.mm (addon)', 'compiled');
    at(61.04);
    progress.done('src-native/a.mm (addon)', 'compiled');
    progress.start('build/Release/x.node', 'linking');
    at(123.4);
    progress.done('build/Release/x.node', 'linked');
    progress.end();
    expect(written).toEqual([
      '[ 1/12]   1.3s  compiled src-native/b.mm (addon)\n',
      '[ 2/12]  61.0s  compiled src-native/a.mm (addon)\n',
      '[ 3/12] 123.4s  linked build/Release/x.node\n',
    ]);
  });

  it('on a terminal: one line rewritten in place with what runs now, cut to the width, cleared at the end', () => {
    const { progress, written, at } = harness(true, 60);
    progress.start('a.mm');
    progress.start('b.mm');
    at(2);
    progress.start('c.mm');
    progress.start('a-much-longer-name-of-a-source-file.mm');
    at(3.5);
    progress.done('a.mm', 'compiled');
    progress.end();
    expect(written).toEqual([
      '\r\x1b[K[ 0/12]   0.0s  compiling a.mm',
      '\r\x1b[K[ 0/12]   0.0s  compiling a.mm, compiling b.mm',
      '\r\x1b[K[ 0/12]   2.0s  compiling a.mm, compiling b.mm, 1 more',
      '\r\x1b[K[ 0/12]   2.0s  compiling a.mm, compiling b.mm, 2 more',
      '\r\x1b[K[ 1/12]   3.5s  compiling b.mm, compiling c.mm, 1 more',
      '\r\x1b[K',
    ]);
    // 29 characters on 30 columns: a line that wrapped could not be rewritten in place.
    const narrow = harness(true, 30);
    narrow.progress.start('a-much-longer-name-of-a-source-file.mm');
    expect(narrow.written).toEqual(['\r\x1b[K[ 0/12]   0.0s  compiling a-m']);
  });

  it('in place only on a terminal outside CI', () => {
    expect(inPlace({ isTTY: true } as NodeJS.WriteStream, {})).toBe(true);
    expect(inPlace({ isTTY: true } as NodeJS.WriteStream, { CI: 'true' })).toBe(false);
    expect(inPlace({ isTTY: false } as NodeJS.WriteStream, {})).toBe(false);
    expect(inPlace({} as NodeJS.WriteStream, {})).toBe(false);
  });
});

describeSim('npm run sim on a checkout that is built', () => {
  beforeAll(() => {
    requireSimBuild();
    buildConsumer();
  });

  it('checks, finds nothing to do, and prints the commands to try', () => {
    const vm = 'METAL_CAP_SHIM_SIM_SNAPSHOT=vz-guest-m1-ultra-tahoe-stock';
    expect(runScript('sim.mjs', [])).toEqual({
      status: 0,
      stdout: [
        'npm run sim: the native test build (npm run build:sim)',
        'up to date  build/sim-metal/lib/libMetal.so',
        'up to date  build/Release/metal_cap_shim.node',
        'up to date  build/Release/libmetal_cap_shim_inject.so',
        'up to date  build/test/sim_fixture.node',
        'up to date  build/test/sim_control.node',
        'npm run sim: ready. Try, in this folder (docs/simulation.md says what each shows):',
        `  ${vm} node dist/cli.js probe --short`,
        `  ${vm} build/test/consumer | grep -o '"1007":[a-z]*'`,
        `  ${vm} node dist/cli.js exec -- build/test/consumer | grep -o '"1007":[a-z]*'`,
        '',
      ].join('\n'),
      stderr: '',
    });
  });
});
