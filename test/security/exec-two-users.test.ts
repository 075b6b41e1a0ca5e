// exec against another user on the same machine (issue: files in shared folders, inherited descriptors and PATH). Each
// attack is replayed in one user's terms: what the attacker would plant in a shared folder (a symbolic link, a FIFO, a
// file of someone else's, a library beside a path with a space) is planted here, by the test or by the program exec
// runs, and the assertion is that nothing outside the user's own files is written, no program from `.` runs, and
// nothing hangs. Where a second user is needed, `nobody` stands in.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  cpSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childDescriptors, inheritedDescriptors } from '../../lib/exec/descriptors.js';
import { preloadListProblem } from '../../lib/exec/injector.js';
import { buildConsumer, cli, describeSim, requireSimBuild, root, runCli } from '../support/helpers.js';

// apple7: the M1 Ultra host's own family, so exec prints no above-host-family warning and stderr is the trace's alone.
const VM = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock', METAL_CAP_SHIM_PROFILE: 'apple7' };
const NO_SIM = { METAL_CAP_SHIM_SIM_SNAPSHOT: undefined };
const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;

let tmp: string;
let consumer: string;
let folders = 0;
function folder(mode = 0o700): string {
  const dir = path.join(tmp, `d${folders++}`);
  mkdirSync(dir);
  chmodSync(dir, mode);
  return dir;
}

/** A file of the victim's that a planted link points at; its content must never change. */
function victim(dir: string): { file: string; intact: () => boolean } {
  const file = path.join(dir, 'bashrc');
  writeFileSync(file, 'export PS1=victim\n');
  return { file, intact: () => readFileSync(file, 'utf8') === 'export PS1=victim\n' };
}

beforeAll(() => {
  tmp = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-exec-security-')));
  chmodSync(tmp, 0o755);
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describeSim('--trace in a shared folder: planted links, FIFOs and other users’ files', () => {
  beforeAll(() => {
    requireSimBuild();
    consumer = buildConsumer();
  });

  it('a symbolic link planted at FILE (→ the victim’s ~/.bashrc): refused before the program runs, exit 125, nothing written', () => {
    const shared = folder(0o1777);
    const { file: target, intact } = victim(folder());
    const trace = path.join(shared, 'mcs-trace.json');
    symlinkSync(target, trace);
    const marker = path.join(folder(), 'ran');
    for (const env of [VM, NO_SIM]) {
      const r = runCli(['exec', '--allow-unpatched', '--trace', trace, '--', 'sh', '-c', `touch '${marker}'`], env);
      expect(r.status).toBe(125);
      expect(r.stderr).toBe(
        `metal-cap-shim: ERR_TRACE_FILE: --trace ${trace}: ${trace} is a symbolic link, which is never written through\n`,
      );
    }
    expect(existsSync(marker)).toBe(false);
    expect(intact()).toBe(true);
  });

  it('a FIFO planted at FILE: refused at once (no hang), exit 125', () => {
    const trace = path.join(folder(0o1777), 'trace.json');
    execFileSync('mkfifo', [trace]);
    const r = runCli(['exec', '--trace', trace, '--', 'true'], VM);
    expect(r.status).toBe(125);
    expect(r.stderr).toBe(
      `metal-cap-shim: ERR_TRACE_FILE: --trace ${trace}: ${trace} exists and is not a regular file\n`,
    );
  });

  it.skipIf(!asRoot)(
    'another user’s FILE (undeletable in a sticky folder): refused with one line, no stack trace, exit 125',
    () => {
      const shared = folder(0o1777);
      const trace = path.join(shared, 'trace.json');
      writeFileSync(trace, 'the attacker’s\n');
      chownSync(trace, NOBODY, NOBODY);
      const r = runCli(['exec', '--trace', trace, '--', 'true'], VM);
      expect(r.status).toBe(125);
      expect(r.stderr).toBe(
        `metal-cap-shim: ERR_TRACE_FILE: --trace ${trace}: ${trace} belongs to another user (uid ${NOBODY}), so it is not replaced\n`,
      );
      expect(readFileSync(trace, 'utf8')).toBe('the attacker’s\n');
    },
  );

  it('a symbolic link planted at FILE.<pid> of a second process: not followed; that trace is refused, the first one written', () => {
    const dir = folder(0o1777);
    const { file: target, intact } = victim(folder());
    const trace = path.join(dir, 'trace.json');
    // The second consumer's pid is known the moment it starts, long before it writes anything at exit.
    const script = `'${consumer}' >/dev/null; '${consumer}' >/dev/null & p=$!; ln -s '${target}' '${trace}'.$p; echo $p; wait`;
    const r = runCli(['exec', '--trace', trace, '--', 'sh', '-c', script], VM);
    expect(r.status, r.stderr).toBe(0);
    const second = Number(r.stdout.trim());
    expect(r.stderr).toBe(
      `metal-cap-shim: injector error: ERR_TRACE_FILE cannot write ${trace}.${second}: ${trace}.${second} is a symbolic link, which is never written through\n`,
    );
    expect(intact()).toBe(true);
    expect(JSON.parse(readFileSync(trace, 'utf8')).patchedClasses).toEqual(['AppleParavirtDevice']);
  });

  it('links planted at FILE.<pid> for the next 3000 pids: none is followed', () => {
    const dir = folder(0o1777);
    const { file: target, intact } = victim(folder());
    const trace = path.join(dir, 'trace.json');
    const last = Number(readFileSync('/proc/sys/kernel/ns_last_pid', 'utf8'));
    for (let pid = last + 1; pid <= last + 3000; pid++) symlinkSync(target, `${trace}.${pid}`);
    const r = runCli(
      ['exec', '--trace', trace, '--', 'sh', '-c', `'${consumer}' >/dev/null; '${consumer}' >/dev/null`],
      VM,
    );
    expect(r.status, r.stderr).toBe(0);
    expect(intact()).toBe(true);
    // Every second trace either met a planted link (and said so) or was written as a new regular file.
    const refused = r.stderr
      .split('\n')
      .filter((l) => l.includes('is a symbolic link, which is never written through'));
    const written = readdirSync(dir).filter(
      (n) => n.startsWith('trace.json.') && lstatSync(path.join(dir, n)).isFile(),
    );
    expect(refused.length + written.length).toBe(1);
  });

  it('a FIFO planted at FILE.<pid>: the program does not hang at exit, and its code passes through', () => {
    const dir = folder(0o1777);
    const trace = path.join(dir, 'trace.json');
    const script = `'${consumer}' >/dev/null; '${consumer}' >/dev/null & p=$!; mkfifo '${trace}'.$p; echo $p; wait; exit 4`;
    const r = runCli(['exec', '--trace', trace, '--', 'sh', '-c', script], VM);
    expect(r.status).toBe(4);
    const second = Number(r.stdout.trim());
    expect(r.stderr).toBe(
      `metal-cap-shim: injector error: ERR_TRACE_FILE cannot write ${trace}.${second}: ${trace}.${second} exists and is not a regular file\n`,
    );
  });

  it('FILE swapped for a link while the program runs (the attacker’s loop): the link is not followed at exit', () => {
    const dir = folder(0o1777);
    const { file: target, intact } = victim(folder());
    const trace = path.join(dir, 'trace.json');
    const r = runCli(
      ['exec', '--trace', trace, '--', 'sh', '-c', `'${consumer}' >/dev/null; ln -s '${target}' '${trace}'`],
      VM,
    );
    expect(r.status).toBe(0);
    expect(r.stderr).toBe(
      `metal-cap-shim: injector error: ERR_TRACE_FILE cannot write ${trace}: ${trace} is a symbolic link, which is never written through\n`,
    );
    expect(intact()).toBe(true);
  });

  it.skipIf(!asRoot)('FILE created meanwhile by another user: not taken for the trace, said so, left as it is', () => {
    const dir = folder(0o1777);
    const trace = path.join(dir, 'trace.json');
    const r = runCli(
      [
        'exec',
        '--trace',
        trace,
        '--',
        'sh',
        '-c',
        `'${consumer}' >/dev/null; echo forged > '${trace}'; chown ${NOBODY} '${trace}'`,
      ],
      VM,
    );
    expect(r.status).toBe(0);
    expect(r.stderr).toBe(
      `metal-cap-shim: injector error: ERR_TRACE_FILE cannot write ${trace}: ${trace} belongs to another user (uid ${NOBODY}), so it is not replaced\n`,
    );
    expect(readFileSync(trace, 'utf8')).toBe('forged\n');
  });

  it('--trace FILE twice: the second run replaces the user’s own file, by a new file (a hard link to it is left alone)', () => {
    const dir = folder();
    const trace = path.join(dir, 'trace.json');
    expect(runCli(['exec', '--trace', trace, '--', consumer], VM).status).toBe(0);
    const first = readFileSync(trace, 'utf8');
    const { file: other, intact } = victim(folder());
    rmSync(trace);
    linkSync(other, trace);
    const r = runCli(['exec', '--trace', trace, '--', consumer], VM);
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(JSON.parse(readFileSync(trace, 'utf8'))).toEqual({ ...JSON.parse(first), pid: expect.any(Number) });
    expect(statSync(trace).ino).not.toBe(statSync(other).ino);
    expect(intact()).toBe(true);
    expect(readdirSync(dir)).toEqual(['trace.json']);
  });

  it('the processes write into a private folder of exec’s (0700, ours, under TMPDIR), removed afterwards', () => {
    const dir = folder();
    const trace = path.join(dir, 'trace.json');
    const seen = path.join(dir, 'seen');
    const r = runCli(
      ['exec', '--trace', trace, '--', 'sh', '-c', `stat -c '%a %u %n' "$METAL_CAP_SHIM_TRACE_DIR" > '${seen}'`],
      { ...VM, TMPDIR: tmp },
    );
    expect(r.status, r.stderr).toBe(0);
    const [mode, uid, where] = readFileSync(seen, 'utf8').trim().split(' ');
    expect([mode, Number(uid), path.dirname(where!)]).toEqual(['700', process.getuid!(), tmp]);
    expect(path.basename(where!)).toMatch(/^metal-cap-shim-trace-/);
    expect(existsSync(where!)).toBe(false);
  });

  it('no private folder can be made in TMPDIR: ERR_TRACE_FILE, exit 125, and the program never starts', () => {
    const marker = path.join(folder(), 'ran');
    const trace = path.join(folder(), 'trace.json');
    const r = runCli(['exec', '--trace', trace, '--', 'sh', '-c', `touch '${marker}'`], {
      ...VM,
      TMPDIR: '/nonexistent/tmp',
    });
    expect(r.status).toBe(125);
    expect(r.stderr).toMatch(
      /^metal-cap-shim: ERR_TRACE_FILE: --trace: cannot create a private folder for the traces in \/nonexistent\/tmp: ENOENT: /,
    );
    expect(existsSync(marker)).toBe(false);
  });

  it.skipIf(!asRoot)(
    'a folder the user cannot write, or a read-only FILE of theirs: refused before the program runs',
    () => {
      const locked = folder(0o755);
      const pkg = cliCopyForNobody();
      const asNobody = (args: string[]) =>
        spawnSync(process.execPath, [pkg, ...args], {
          encoding: 'utf8',
          env: { ...process.env, ...NO_SIM },
          uid: NOBODY,
          gid: NOBODY,
        });
      const inLocked = path.join(locked, 'trace.json');
      const r = asNobody(['exec', '--allow-unpatched', '--trace', inLocked, '--', 'true']);
      expect([r.status, r.stderr]).toEqual([
        125,
        `metal-cap-shim: ERR_TRACE_FILE: --trace ${inLocked}: the folder ${locked} cannot be written\n`,
      ]);
      const open = folder(0o1777);
      const readOnly = path.join(open, 'trace.json');
      writeFileSync(readOnly, 'keep\n');
      chmodSync(readOnly, 0o444);
      chownSync(readOnly, NOBODY, NOBODY);
      const ro = asNobody(['exec', '--allow-unpatched', '--trace', readOnly, '--', 'true']);
      expect([ro.status, ro.stderr]).toEqual([
        125,
        `metal-cap-shim: ERR_TRACE_FILE: --trace ${readOnly}: ${readOnly} is read-only\n`,
      ]);
    },
  );
});

/** The parts of the package a patched run over the simulated Metal needs besides the CLI (and the addon's loader). */
const NATIVE_PARTS = [
  'snapshots',
  path.join('build', 'Release'),
  path.join('build', 'sim-metal'),
  path.join('node_modules', 'node-gyp-build'),
];

/**
 * A copy of the built CLI that `nobody` can read (the checkout may sit in a folder only its owner opens); `native`:
 * with the simulated addon and the injector, for a patched run.
 */
function cliCopyForNobody(native = false): string {
  const pkg = path.join(tmp, `pkg${folders++}`);
  for (const part of ['dist', 'package.json', ...(native ? NATIVE_PARTS : [])])
    cpSync(path.join(root, part), path.join(pkg, part), { recursive: true });
  chmodSync(pkg, 0o755);
  return path.join(pkg, 'dist', 'cli.js');
}

describeSim('the program changes exec’s private trace folder (as a user whom permissions bind)', () => {
  let pkg: string;
  beforeAll(() => {
    requireSimBuild();
    pkg = cliCopyForNobody(true);
  });
  /**
   * exec --trace over `script`, as `nobody` when the tests run as root (whom no mode stops), else as the user; TMPDIR
   * (where the private folder goes) and FILE's folder are open to both. Returns the run, FILE and the folder the
   * program saw.
   */
  const run = (script: string) => {
    const trace = path.join(folder(0o1777), 'trace.json');
    const seen = path.join(folder(0o1777), 'seen');
    const r = spawnSync(
      process.execPath,
      [pkg, 'exec', '--trace', trace, '--', 'sh', '-c', `printf %s "$METAL_CAP_SHIM_TRACE_DIR" > '${seen}'; ${script}`],
      {
        encoding: 'utf8',
        env: { ...process.env, ...VM, TMPDIR: folder(0o1777) },
        timeout: 60_000,
        ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
      },
    );
    const left = readFileSync(seen, 'utf8');
    return { r, trace, left };
  };

  it('made unremovable (`chmod 500` over a file in it): one ERR_TRACE_FILE line, the trace written, the program’s exit code, no stack trace', () => {
    const { r, trace, left } = run(
      'touch "$METAL_CAP_SHIM_TRACE_DIR/x"; chmod 500 "$METAL_CAP_SHIM_TRACE_DIR"; exit 7',
    );
    expect([r.status, r.stderr]).toEqual([
      7,
      `metal-cap-shim: injector error: ERR_TRACE_FILE cannot remove the private trace folder ${left} (EACCES): it is left there; remove it yourself\n`,
    ]);
    expect(JSON.parse(readFileSync(trace, 'utf8'))).toEqual({
      pid: expect.any(Number),
      profileApplied: true,
      patchedClasses: [],
      trace: [],
    });
    expect(readdirSync(left)).toEqual(['x']);
    chmodSync(left, 0o700);
  });

  it('made unreadable (`chmod 000`): FILE is not written (no claim that nothing was traced), one line for each failure', () => {
    const { r, trace, left } = run(
      'touch "$METAL_CAP_SHIM_TRACE_DIR/x"; chmod 000 "$METAL_CAP_SHIM_TRACE_DIR"; exit 7',
    );
    expect([r.status, r.stderr]).toEqual([
      7,
      `metal-cap-shim: injector error: ERR_TRACE_FILE cannot write ${trace}: the private folder the processes wrote their traces into, ${left}, cannot be read (EACCES)\n` +
        `metal-cap-shim: injector error: ERR_TRACE_FILE cannot remove the private trace folder ${left} (EACCES): it is left there; remove it yourself\n`,
    ]);
    expect(existsSync(trace)).toBe(false);
    chmodSync(left, 0o700);
  });
});

describeSim('the injector’s own trace folder check (a variable anyone can set)', () => {
  beforeAll(() => {
    requireSimBuild();
    consumer = buildConsumer();
  });
  const injector = () => path.join(root, 'build', 'Release', 'libmetal_cap_shim_inject.so');
  const run = (dir: string) =>
    spawnSync(consumer, [], {
      env: {
        ...process.env,
        ...VM,
        LD_PRELOAD: injector(),
        METAL_CAP_SHIM_PROFILE_NATIVE: 'mcs1;max=1009;trace=1',
        METAL_CAP_SHIM_TRACE_DIR: dir,
      },
      encoding: 'utf8',
    });

  it('a private folder of ours: the first process writes first.json, the next <pid>.json, each created exclusively', () => {
    const dir = folder(0o700);
    expect(run(dir).status).toBe(0);
    const second = run(dir);
    expect(second.status).toBe(0);
    const names = readdirSync(dir).sort();
    expect(names).toEqual([`${second.pid}.json`, 'first.json']);
    for (const n of names)
      expect(JSON.parse(readFileSync(path.join(dir, n), 'utf8')).patchedClasses).toEqual(['AppleParavirtDevice']);
  });

  it('a link planted at first.json inside the folder is not followed: the trace takes <pid>.json', () => {
    const dir = folder(0o700);
    const { file: target, intact } = victim(folder());
    symlinkSync(target, path.join(dir, 'first.json'));
    const r = run(dir);
    expect(readdirSync(dir).sort()).toEqual([`${r.pid}.json`, 'first.json']);
    expect(intact()).toBe(true);
  });

  it.each([
    ['a folder others may write', () => folder(0o777)],
    ['a folder others may enter', () => folder(0o755)],
    [
      'a link to a private folder',
      () => {
        const link = path.join(folder(0o755), 'link');
        symlinkSync(folder(0o700), link);
        return link;
      },
    ],
  ])('%s: no trace at all', (_, make) => {
    const dir = make();
    expect(run(dir).status).toBe(0);
    expect(readdirSync(dir)).toEqual([]);
  });

  it.skipIf(!asRoot)('another user’s folder: no trace at all', () => {
    const dir = folder(0o700);
    chownSync(dir, NOBODY, NOBODY);
    expect(run(dir).status).toBe(0);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('PATH: the file that was checked is the file that runs', () => {
  it('an empty PATH entry never runs ./x: the program is not found (127), and the one in the current folder never starts', () => {
    const cwd = folder(0o755);
    const marker = path.join(cwd, 'ran');
    writeFileSync(path.join(cwd, 'consumer'), `#!/bin/sh\ntouch '${marker}'\n`);
    chmodSync(path.join(cwd, 'consumer'), 0o755);
    const r = spawnSync(process.execPath, [cli, 'exec', '--allow-unpatched', '--', 'consumer'], {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, ...NO_SIM, PATH: ':/nonexistent' },
    });
    expect(r.status).toBe(127);
    expect(existsSync(marker)).toBe(false);
  });

  it('with the same name later on PATH, that one runs, not ./x', () => {
    const cwd = folder(0o755);
    const bin = folder(0o755);
    for (const [dir, says] of [
      [cwd, 'current folder'],
      [bin, 'PATH'],
    ] as const) {
      writeFileSync(path.join(dir, 'tool'), `#!/bin/sh\necho ${says}\n`);
      chmodSync(path.join(dir, 'tool'), 0o755);
    }
    const r = spawnSync(process.execPath, [cli, 'exec', '--allow-unpatched', '--', 'tool'], {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, ...NO_SIM, PATH: `:${bin}:/usr/bin:/bin` },
    });
    expect([r.status, r.stdout]).toEqual([0, 'PATH\n']);
  });

  it('the program gets argv[0] as the user typed it, while the resolved file is what starts', () => {
    const r = runCli(['exec', '--allow-unpatched', '--', 'node', '-p', 'process.argv0 + " " + process.execPath'], {
      ...NO_SIM,
      PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`,
    });
    expect([r.status, r.stdout]).toEqual([0, `node ${process.execPath}\n`]);
  });
});

describe('the preload list: a package path holding the list’s separators', () => {
  it('per loader: dyld splits at ":", glibc at ":" and " " (musl at any white space)', () => {
    expect(preloadListProblem('/opt/mcs/lib.dylib', 'darwin')).toBeNull();
    expect(preloadListProblem('/opt/m cs/lib.dylib', 'darwin')).toBeNull();
    expect(preloadListProblem('/opt/mcs/lib.so', 'linux')).toBeNull();
    expect(preloadListProblem('/tmp/sec rev/lib.so', 'linux')).toBe(
      `the injector's path "/tmp/sec rev/lib.so" holds white space, where LD_PRELOAD splits its list of libraries, so the loader would load a different file; install metal-cap-shim under a path without ':' or white space`,
    );
    expect(preloadListProblem('/tmp/a\tb/lib.so', 'linux')).toMatch(/holds white space/);
    expect(preloadListProblem('/tmp/a:b/lib.dylib', 'darwin')).toBe(
      `the injector's path "/tmp/a:b/lib.dylib" holds a ':', where DYLD_INSERT_LIBRARIES splits its list of libraries, so the loader would load a different file; install metal-cap-shim under a path without ':'`,
    );
    expect(preloadListProblem('/tmp/a:b/lib.so', 'linux')).toMatch(/holds a ':', where LD_PRELOAD/);
  });
});

describeSim('the preload list, end to end: a package under "/…/sec rev" and a library planted at "/…/sec"', () => {
  let pkgCli: string;
  let planted: string;
  let marker: string;
  beforeAll(() => {
    requireSimBuild();
    const base = folder(0o755);
    const pkg = path.join(base, 'sec rev');
    for (const part of [
      'dist',
      'package.json',
      'snapshots',
      path.join('build', 'Release'),
      path.join('build', 'sim-metal'),
    ]) {
      cpSync(path.join(root, part), path.join(pkg, part), { recursive: true });
    }
    pkgCli = path.join(pkg, 'dist', 'cli.js');
    marker = path.join(base, 'planted-library-ran');
    planted = path.join(base, 'sec');
    writeFileSync(
      `${planted}.c`,
      `#include <stdio.h>\n__attribute__((constructor)) static void ran(void) { FILE *f = fopen("${marker}", "w"); if (f) fclose(f); }\n`,
    );
    execFileSync('clang-14', ['-shared', '-fPIC', `${planted}.c`, '-o', planted]);
  });

  it('refused before the program starts (ERR_INJECTION_BLOCKED, exit 125); the planted library never loads', () => {
    const r = spawnSync(process.execPath, [pkgCli, 'exec', '--', 'true'], {
      encoding: 'utf8',
      env: { ...process.env, ...VM },
    });
    expect(r.status).toBe(125);
    expect(r.stderr).toMatch(
      /^metal-cap-shim: ERR_INJECTION_BLOCKED: the injector's path ".*\/sec rev\/build\/Release\/libmetal_cap_shim_inject\.so" holds white space/,
    );
    expect(existsSync(marker)).toBe(false);
  });

  it('--allow-unpatched runs the program without the injector, with the reason', () => {
    const r = spawnSync(
      process.execPath,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, run by sh
      [pkgCli, 'exec', '--allow-unpatched', '--', 'sh', '-c', 'printf %s "${LD_PRELOAD-unset}"'],
      {
        encoding: 'utf8',
        env: { ...process.env, ...VM, LD_PRELOAD: undefined },
      },
    );
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('unset');
    expect(r.stderr).toMatch(/holds white space.*: running sh unpatched \(--allow-unpatched\)\n$/);
    expect(existsSync(marker)).toBe(false);
  });
});

describe('descriptors the user hands to exec reach the program (as env(1) passes them)', () => {
  /** Runs the CLI with `stdio` (fds 3 and up are what the caller hands it) and returns the result. */
  const withFds = (args: string[], env: NodeJS.ProcessEnv, stdio: ('pipe' | 'ignore' | number)[]) =>
    spawnSync(process.execPath, [cli, ...args], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', ...env },
      stdio,
      timeout: 60_000,
    });

  it('a file at fd 4 (`4>f`), with --allow-unpatched where there is no Metal', () => {
    const f = path.join(folder(), 'f');
    const fd = openSync(f, 'w');
    try {
      const r = withFds(['exec', '--allow-unpatched', '--', 'sh', '-c', 'echo x >&4'], NO_SIM, [
        'ignore',
        'pipe',
        'pipe',
        'ignore',
        fd,
      ]);
      expect(r.status, r.stderr).toBe(0);
    } finally {
      closeSync(fd);
    }
    expect(readFileSync(f, 'utf8')).toBe('x\n');
  });

  it('a socket (socket activation) at fd 5', () => {
    const r = withFds(['exec', '--allow-unpatched', '--', 'sh', '-c', 'echo hello >&5'], NO_SIM, [
      'ignore',
      'pipe',
      'pipe',
      'ignore',
      'ignore',
      'pipe',
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect(String(r.output[5])).toBe('hello\n');
  });

  it('make’s jobserver: a sub-make run through exec keeps -j (no "jobserver unavailable" warning)', () => {
    const dir = folder();
    writeFileSync(path.join(dir, 'sub.mk'), 'all: a b\na b:\n\t@true\n');
    writeFileSync(
      path.join(dir, 'Makefile'),
      `all:\n\t+@'${process.execPath}' '${cli}' exec --allow-unpatched -- $(MAKE) -f sub.mk\n`,
    );
    const r = spawnSync('make', ['-j2', '-C', dir], { encoding: 'utf8', env: { ...process.env, ...NO_SIM } });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('jobserver unavailable');
  });

  it('descriptors exec itself holds (Node’s event loop, its own pipes) do not leak: the program sees what env(1) would give it', () => {
    const f = path.join(folder(), 'f');
    const fd = openSync(f, 'w');
    try {
      const stdio = ['ignore', 'pipe', 'pipe', 'ignore', fd] as ('pipe' | 'ignore' | number)[];
      const listing = "ls /proc/self/fd | sort -n | tr '\\n' ' '";
      const viaEnv = spawnSync('env', ['sh', '-c', listing], { encoding: 'utf8', stdio });
      const r = withFds(['exec', '--allow-unpatched', '--', 'sh', '-c', listing], NO_SIM, stdio);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toBe(viaEnv.stdout);
      expect(r.stdout).toMatch(/^0 1 2 3 4 /);
    } finally {
      closeSync(fd);
    }
  });

  it('which descriptors count as given, by kind: files and sockets and single pipe ends yes; Node’s own kinds and pipe pairs no', () => {
    // In this process: whatever vitest handed the worker, Node's own, and a file opened here. Node's epoll, eventfd
    // and signal pipes (a pair each) must not be among them; the file must.
    const file = openSync(path.join(folder(), 'given'), 'w');
    try {
      const listed = inheritedDescriptors();
      expect(listed).toContain(file);
      const targets = listed.map(readlinkOr);
      expect(targets.filter((t) => /^anon_inode:/.test(t))).toEqual([]);
      // Each pipe listed is a single end: its pipe appears once among every descriptor of this process.
      const everyPipe = readdirSync('/proc/self/fd')
        .map((n) => readlinkOr(Number(n)))
        .filter((t) => t.startsWith('pipe:'));
      expect(targets.filter((t) => t.startsWith('pipe:') && everyPipe.filter((p) => p === t).length !== 1)).toEqual([]);
    } finally {
      closeSync(file);
    }
    expect(inheritedDescriptors({}, 'win32')).toEqual([]);
  });

  it('a pipe pair is passed only when MAKEFLAGS names it as the jobserver (a pair is otherwise taken for Node’s own)', () => {
    const fifo = path.join(folder(), 'p');
    execFileSync('mkfifo', [fifo]);
    const fdsSeen = (makeflags: string | undefined) => {
      const r = spawnSync(
        'sh',
        [
          '-c',
          `exec 3<>'${fifo}' 4<>'${fifo}'; exec '${process.execPath}' '${cli}' exec --allow-unpatched -- sh -c 'ls /proc/$$/fd'`,
        ],
        {
          encoding: 'utf8',
          env: { ...process.env, ...NO_SIM, MAKEFLAGS: makeflags },
        },
      );
      expect(r.status, r.stderr).toBe(0);
      return r.stdout
        .trim()
        .split('\n')
        .map(Number)
        .sort((a, b) => a - b);
    };
    // Above 4: whatever this test process hands every child of its own (its runner's descriptors).
    const low = (fds: number[]) => fds.filter((n) => n <= 4);
    expect(low(fdsSeen(undefined))).toEqual([0, 1, 2]);
    expect(low(fdsSeen(' --jobserver-auth=3,4'))).toEqual([0, 1, 2, 3, 4]);
    expect(low(fdsSeen(' --jobserver-fds=3,4 -j'))).toEqual([0, 1, 2, 3, 4]);
    expect(low(fdsSeen('-j2 -J 3,4'))).toEqual([0, 1, 2, 3, 4]);
  });
});

function readlinkOr(fd: number): string {
  try {
    return execFileSync('readlink', [`/proc/${process.pid}/fd/${fd}`], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

describeSim('descriptors with the injector', () => {
  beforeAll(() => requireSimBuild());
  const withFds = (args: string[], stdio: ('pipe' | 'ignore' | number)[]) =>
    spawnSync(process.execPath, [cli, ...args], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', ...VM },
      stdio,
      timeout: 60_000,
    });

  it('fd 3 given by the user stays the user’s: the status pipe takes the next free number, and the injector still reports', () => {
    const f = path.join(folder(), 'f');
    const fd = openSync(f, 'w');
    try {
      const r = withFds(['exec', '--json', '--', 'sh', '-c', 'echo x >&3'], ['ignore', 'pipe', 'pipe', fd]);
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stderr.trim().split('\n').pop()!)).toMatchObject({
        injectorLoaded: true,
        injectorErrors: [],
      });
    } finally {
      closeSync(fd);
    }
    expect(readFileSync(f, 'utf8')).toBe('x\n');
  });

  it('a program started by the patched one sees what env(1) would give it, and the status pipe the chain hands down (moved to 100)', () => {
    const f = path.join(folder(), 'f');
    const fd = openSync(f, 'w');
    try {
      const stdio = ['ignore', 'pipe', 'pipe', 'ignore', fd] as ('pipe' | 'ignore' | number)[];
      const listing = "ls /proc/self/fd | sort -n | tr '\\n' ' '";
      const viaEnv = spawnSync('env', ['sh', '-c', listing], { encoding: 'utf8', stdio });
      const r = withFds(['exec', '--', 'sh', '-c', listing], stdio);
      expect(r.status, r.stderr).toBe(0);
      // 3 is ls's own listing there as under env(1): the injector moved the status pipe off it.
      const numbers = (text: string) => text.trim().split(' ').map(Number);
      expect(numbers(r.stdout)).toEqual([...numbers(viaEnv.stdout), 100].sort((a, b) => a - b));
      expect(r.stdout).toMatch(/^0 1 2 3 4 /);
    } finally {
      closeSync(fd);
    }
  });

  it('the layout: the status pipe at the lowest free number ≥ 3, given ones as themselves, gaps ignored', () => {
    expect(childDescriptors([], true)).toEqual({ stdio: ['inherit', 'inherit', 'inherit', 'pipe'], statusFd: 3 });
    expect(childDescriptors([3, 4, 7], true)).toEqual({
      stdio: ['inherit', 'inherit', 'inherit', 3, 4, 'pipe', 'ignore', 7],
      statusFd: 5,
    });
    expect(childDescriptors([5], false)).toEqual({
      stdio: ['inherit', 'inherit', 'inherit', 'ignore', 'ignore', 5],
      statusFd: null,
    });
    expect(childDescriptors([0, 1, 2, -1, 1.5], false)).toEqual({
      stdio: ['inherit', 'inherit', 'inherit'],
      statusFd: null,
    });
  });
});
