// doctor's options and the `doctor` command's flags: every bound from both sides, typed errors before anything runs,
// and the offline replay of a snapshot (any OS).
import { chmodSync, cpSync, existsSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { numberFlag } from '../../lib/cli/doctor-options.js';
import { doctor } from '../../lib/doctor/index.js';
import { AUTO_PROBES, checkDoctorOptions } from '../../lib/doctor/options.js';
import { autoDoctorOptions } from '../../lib/select/auto.js';
import { DOCTOR_PROBE_IDS } from '../../lib/doctor/probes.js';
import type { DoctorReport } from '../../lib/doctor/types.js';
import { InvalidOptionsError, InvalidProfileError } from '../../lib/core/errors.js';
import { probeSnapshot } from '../../lib/device/probe.js';
import { profiles, resolveProfile } from '../../lib/patch/profiles.js';
import { describeSim, jsonFrom, requireSimBuild, root, runCli, runNode } from '../support/helpers.js';
import type { FieldReport } from '../../lib/audit/field-report.js';
import { EXIT } from '../../lib/cli/exit.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-options-'));
const model = path.join(dir, 'model.gguf');
writeFileSync(model, Buffer.alloc(4096, 7));

function optionError(options: unknown): { option: string; message: string } {
  try {
    checkDoctorOptions(options);
  } catch (err) {
    if (err instanceof InvalidOptionsError) return { option: err.option, message: err.message };
    throw err;
  }
  throw new Error('no error');
}

describe('doctor() options', () => {
  it('defaults', () => {
    expect(checkDoctorOptions(undefined)).toEqual({
      candidate: profiles['host-family']!.profile,
      device: null,
      timeoutMs: 5000,
      mmapFile: null,
      mmapSize: 1 << 30,
      probes: [...DOCTOR_PROBE_IDS],
      force: false,
      allowAboveHardware: false,
      snapshot: null,
      cache: true,
    });
  });

  it('timeoutMs: 100 to 600000', () => {
    expect(checkDoctorOptions({ timeoutMs: 100 }).timeoutMs).toBe(100);
    expect(checkDoctorOptions({ timeoutMs: 600000 }).timeoutMs).toBe(600000);
    for (const bad of [99, 600001, 1.5, Number.NaN]) {
      expect(optionError({ timeoutMs: bad })).toEqual({
        option: 'timeoutMs',
        message: `doctor() option 'timeoutMs' (--timeout-ms) must be a whole number from 100 to 600000, got ${JSON.stringify(bad)}`,
      });
    }
    expect(optionError({ timeoutMs: '100' }).option).toBe('timeoutMs');
  });

  it('mmapSize: 1 MiB to 64 GiB, whole pages of 16 KiB', () => {
    expect(checkDoctorOptions({ mmapSize: 1 << 20 }).mmapSize).toBe(1 << 20);
    expect(checkDoctorOptions({ mmapSize: 64 * 2 ** 30 }).mmapSize).toBe(64 * 2 ** 30);
    expect(optionError({ mmapSize: (1 << 20) - 16384 }).message).toBe(
      `doctor() option 'mmapSize' (--mmap-size) must be a whole number from 1048576 to 68719476736 bytes, a multiple of 16384, got 1032192`,
    );
    expect(optionError({ mmapSize: 64 * 2 ** 30 + 16384 }).option).toBe('mmapSize');
    expect(optionError({ mmapSize: (1 << 20) + 4096 }).message).toBe(
      `doctor() option 'mmapSize' (--mmap-size) must be a multiple of 16384 bytes (the arm64 page size), got 1052672`,
    );
  });

  it('mmapFile: an existing, readable, non-empty regular file, not together with mmapSize', () => {
    expect(checkDoctorOptions({ mmapFile: model }).mmapFile).toBe(model);
    expect(checkDoctorOptions({ mmapFile: path.relative(process.cwd(), model) }).mmapFile).toBe(model);
    expect(optionError({ mmapFile: path.join(dir, 'missing.gguf') })).toEqual({
      option: 'mmapFile',
      message: `doctor() option 'mmapFile' (--mmap-file) cannot use ${path.join(dir, 'missing.gguf')}: no such file`,
    });
    expect(optionError({ mmapFile: dir }).message).toBe(
      `doctor() option 'mmapFile' (--mmap-file) cannot use ${dir}: not a regular file`,
    );
    const empty = path.join(dir, 'empty.gguf');
    writeFileSync(empty, '');
    expect(optionError({ mmapFile: empty }).message).toBe(
      `doctor() option 'mmapFile' (--mmap-file) cannot use ${empty}: the file is empty`,
    );
    expect(optionError({ mmapFile: '' }).option).toBe('mmapFile');
    expect(optionError({ mmapFile: model, mmapSize: 1 << 20 }).option).toBe('mmapSize');
  });

  it('mmapFile: a FIFO swapped in for the file while it is checked is refused at once, never waited on', async () => {
    const race = mkdtempSync(path.join(tmpdir(), 'mcs-mmap-race-'));
    const name = path.join(race, 'model.gguf');
    const file = path.join(race, 'file');
    const fifo = path.join(race, 'fifo');
    writeFileSync(file, Buffer.alloc(4096, 7));
    execFileSync('mkfifo', [fifo]);
    writeFileSync(name, Buffer.alloc(4096, 7));
    // Another process swaps a FIFO and the file under the name as fast as rename goes, for 2.5 s, then opens the FIFO
    // for writing for 0.5 s, which frees a reader that an earlier check left waiting on it.
    const swapper = spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('fs'); const [name, file, fifo, tmp] = process.argv.slice(1);
         const end = Date.now() + 2500;
         while (Date.now() < end) { fs.linkSync(fifo, tmp); fs.renameSync(tmp, name); fs.linkSync(file, tmp); fs.renameSync(tmp, name); }
         const free = Date.now() + 500;
         while (Date.now() < free) { try { fs.closeSync(fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)); } catch {} }`,
        name,
        file,
        fifo,
        path.join(race, 'tmp'),
      ],
      { stdio: 'ignore' },
    );
    const ended = new Promise((resolve) => swapper.on('exit', resolve));
    await new Promise((resolve) => setTimeout(resolve, 200));
    let slowest = 0;
    const outcomes = new Set<string>();
    for (const end = Date.now() + 1300; Date.now() < end; ) {
      const started = Date.now();
      try {
        checkDoctorOptions({ mmapFile: name });
        outcomes.add('accepted');
      } catch (err) {
        outcomes.add(err instanceof InvalidOptionsError ? err.message.replace(name, 'NAME') : String(err));
      }
      slowest = Math.max(slowest, Date.now() - started);
    }
    await ended;
    // A check that waited on the FIFO would have taken until the swapper freed it, a second or more.
    expect(slowest).toBeLessThan(400);
    for (const o of outcomes)
      expect([
        'accepted',
        "doctor() option 'mmapFile' (--mmap-file) cannot use NAME: not a regular file",
        "doctor() option 'mmapFile' (--mmap-file) cannot use NAME: no such file",
      ]).toContain(o);
  });

  it('device: a whole number (its range is checked against the devices there are)', () => {
    expect(checkDoctorOptions({ device: 0 }).device).toBe(0);
    expect(optionError({ device: -1 }).option).toBe('device');
    expect(optionError({ device: 0.5 }).option).toBe('device');
  });

  it('probes: known ids, kept in doctor’s order', () => {
    expect(checkDoctorOptions({ probes: ['residency-set', 'bfloat'] }).probes).toEqual(['bfloat', 'residency-set']);
    expect(optionError({ probes: [] }).option).toBe('probes');
    expect(optionError({ probes: ['bfloat', 'warp-speed'] }).option).toBe('probes');
  });

  it('a replay refuses the options that only a live run uses', () => {
    for (const live of [
      { timeoutMs: 1000 },
      { mmapFile: model },
      { mmapSize: 1 << 20 },
      { force: true },
      { allowAboveHardware: true },
    ]) {
      expect(optionError({ snapshot: 'vz-guest-m1-ultra-tahoe-stock', ...live }).option).toBe(Object.keys(live)[0]);
    }
  });

  it('unknown options and bad profiles are typed errors; auto is not a candidate profile', () => {
    expect(optionError({ mmap: 1 }).option).toBe('mmap');
    expect(() => checkDoctorOptions({ profile: 'auto' })).toThrow(InvalidProfileError);
    expect(() => checkDoctorOptions({ profile: '{"appleFamilyMax":2000}' })).toThrow(InvalidProfileError);
  });
});

describe('doctor --snapshot: a recording replayed, never guessed', () => {
  it('a snapshot without a doctor section: every probe not-recorded, nothing proven, nothing raised', () => {
    const r = runCli(['doctor', '--snapshot', 'm1-ultra-bare-metal', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as DoctorReport;
    expect({ ...report, generatedAt: 'x', devices: [] }).toEqual({
      schema: 'metal-cap-shim/doctor@1',
      packageVersion: report.packageVersion,
      generatedAt: 'x',
      supported: true,
      reason: null,
      detail: null,
      source: 'snapshot',
      snapshot: 'm1-ultra-bare-metal',
      host: probeSnapshot('m1-ultra-bare-metal').host,
      // Bound to the recorded M1 Ultra host: its own Apple7, which it already answers.
      // Bare metal: the host's architecture is not offered (MLX reads the GPU's own).
      candidateProfile: resolveProfile({ name: 'host-family', appleFamilyMax: 1007 }),
      candidateWarnings: [{ code: 'no-change', message: 'the profile changes no answer on this device' }],
      replayed: true,
      patchedRun: { ran: false, why: 'a recorded result is replayed: nothing runs' },
      settings: {
        probes: [...DOCTOR_PROBE_IDS],
        timeoutMs: null,
        mmapFile: null,
        mmapSize: null,
        device: null,
        allowAboveHardware: null,
      },
      devices: [],
      restore: null,
      cache: null,
    });
    const d = report.devices[0]!;
    expect(d.probes.map((p) => [p.id, p.status, p.judgement, p.detail, p.ms])).toEqual(
      DOCTOR_PROBE_IDS.map((id) => [id, 'not-recorded', 'unknown', 'not recorded in this snapshot', null]),
    );
    expect(resolveProfile(d.verifiedProfile)).toEqual(d.verifiedProfile);
    expect(d.verifiedProfile).toEqual({ ...resolveProfile({}), name: null });
    expect([d.recommendations, d.faults, d.differences]).toEqual([[], [], []]);
  });

  it('--device picks one recorded device; one that is not recorded is a usage error', () => {
    const two = JSON.parse(
      runCli(['doctor', '--snapshot', 'macbookpro16-intel-amd-two-gpus', '--device', '1', '--json']).stdout,
    ) as DoctorReport;
    expect(two.devices.map((d) => [d.index, d.name])).toEqual([[1, 'AMD Radeon Pro 5500M']]);
    const r = runCli(['doctor', '--snapshot', 'vz-guest-m1-ultra-tahoe-stock', '--device', '1']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      'metal-cap-shim: ERR_INVALID_OPTIONS: --device: snapshot vz-guest-m1-ultra-tahoe-stock has no device 1; it records 1 (0–0)\n',
    );
  });

  it('human output: the probe table, the verified profile with its reasons, recommendations, faults', () => {
    const r = runCli(['doctor', '--snapshot', 'm1-ultra-bare-metal']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(
      'metal-cap-shim doctor — snapshot m1-ultra-bare-metal (recorded result, replayed: nothing ran)\n',
    );
    expect(r.stdout).toMatch(/^ {2}simdgroup-reduction +not-recorded +– +– +– +– +not recorded in this snapshot$/m);
    expect(r.stdout).toContain('  Verified profile: mode raise\n');
    expect(r.stdout).toContain('    · no Apple family raised: nothing an Apple family gates was proven');
    expect(r.stdout).toContain('    · Metal3 left as the device answers it (YES)\n');
    expect(r.stdout).toContain('  Faults: none found');
  });

  it('the Tahoe guest’s recorded residency-set failure (Cua PR 3070): its recommendations, exit 1', () => {
    const r = runCli(['doctor', '--snapshot', 'vz-guest-m1-ultra-tahoe-stock', '--json']);
    expect(r.status).toBe(1);
    const d = (JSON.parse(r.stdout) as DoctorReport).devices[0]!;
    expect(d.probes.map((p) => [p.id, p.status])).toEqual(
      DOCTOR_PROBE_IDS.map((id) => [id, id === 'residency-set' ? 'fail' : 'not-recorded']),
    );
    expect(d.probes[5]!.detail).toBe(
      'recorded: MLX could not construct a residency set in this guest ("Unable to construct residency set") [source: cua-mlx-ablation]',
    );
    expect(d.recommendations.map((x) => x.setting)).toEqual([
      'GGML_METAL_NO_RESIDENCY=1',
      'never advertise Metal3 (profile {"families":{"metal3":false}})',
    ]);
    expect([d.faults, d.verifiedProfile]).toEqual([['residency-set: fail'], { ...resolveProfile({}), name: null }]);
  });

  it('the macos-14 runner’s recorded stale NoCopy pages (unslothai/llama.cpp PR 37): --no-mmap, useMmap: false', () => {
    const r = runCli(['doctor', '--snapshot', 'github-macos-14-arm64-runner', '--json']);
    expect(r.status).toBe(1);
    const d = (JSON.parse(r.stdout) as DoctorReport).devices[0]!;
    expect(d.probes.find((p) => p.id === 'nocopy-mmap')).toMatchObject({
      status: 'wrong-result',
      judgement: 'faulty',
      bufferLength: null,
      ms: null,
    });
    expect(d.recommendations.map((x) => [x.engine, x.setting])).toEqual([
      ['llama.cpp', '--no-mmap (llama-bench: -mmp 0)'],
      ['node-llama-cpp', 'llama.loadModel({ useMmap: false })'],
    ]);
    expect(d.faults).toEqual(['nocopy-mmap: wrong-result']);
  });
});

describe('doctor command flags', () => {
  it('byte counts take binary K, M, G suffixes, and a decimal with a suffix', () => {
    expect(['1073741824', '512M', '3g', '16384K', '1.5G'].map((v) => numberFlag('--mmap-size', v))).toEqual([
      2 ** 30,
      512 * 2 ** 20,
      3 * 2 ** 30,
      16 * 2 ** 20,
      1.5 * 2 ** 30,
    ]);
  });

  it.each([
    [['doctor', '--device', 'first'], 'ERR_USAGE'],
    [['doctor', '--timeout-ms', '1e3'], 'ERR_USAGE'],
    [['doctor', '--mmap-size', 'lots'], 'ERR_USAGE'],
    [['doctor', '--frobnicate'], 'ERR_USAGE'],
    [['doctor', '--timeout-ms', '99'], 'ERR_USAGE'],
    [['doctor', '--timeout-ms', '600001'], 'ERR_USAGE'],
    [['doctor', '--mmap-size', '512K'], 'ERR_USAGE'],
    [['doctor', '--mmap-size', '65G'], 'ERR_USAGE'],
    [['doctor', '--mmap-file', '/nonexistent/model.gguf'], 'ERR_INVALID_OPTIONS'],
    [['doctor', '--mmap-file', model, '--mmap-size', '1G'], 'ERR_USAGE'],
    [['doctor', '--profile', 'auto'], 'ERR_INVALID_PROFILE'],
    [['doctor', '--snapshot', 'no-such-snapshot'], 'ERR_SNAPSHOT_NOT_FOUND'],
    [['doctor', '--snapshot', 'vz-guest-m1-ultra-tahoe-stock', '--allow-above-hardware'], 'ERR_INVALID_OPTIONS'],
  ])('%j is a usage error (exit 2, %s, nothing on stdout)', (args, code) => {
    const r = runCli(args);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`metal-cap-shim: ${code}: `);
    expect(r.stderr).not.toContain('    at ');
    expect(r.stdout).toBe('');
  });

  it('an unreadable --mmap-file is a usage error naming the file', () => {
    const locked = path.join(dir, 'locked.gguf');
    writeFileSync(locked, Buffer.alloc(4096));
    chmodSync(locked, 0o000);
    // root reads anything: run the CLI as nobody there, from a copy nobody can read (the package may sit in a
    // folder only its owner opens, as Stryker's sandbox does). The options are checked before the addon loads.
    const asRoot = process.getuid?.() === 0;
    chmodSync(dir, 0o755);
    let cliFile = path.join(root, 'dist', 'cli.js');
    if (asRoot) {
      const pkg = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-nobody-'));
      for (const part of ['dist', 'package.json'])
        cpSync(path.join(root, part), path.join(pkg, part), { recursive: true });
      chmodSync(pkg, 0o755);
      cliFile = path.join(pkg, 'dist', 'cli.js');
    }
    const r = spawnSync(process.execPath, [cliFile, 'doctor', '--mmap-file', locked], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', XDG_CACHE_HOME: dir },
      ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
    });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      `metal-cap-shim: ERR_INVALID_OPTIONS: --mmap-file cannot read ${locked} (EACCES); doctor only reads it\n`,
    );
  });

  it('--help prints the usage, also as `help doctor`', () => {
    for (const args of [
      ['doctor', '--help'],
      ['help', 'doctor'],
    ]) {
      const r = runCli(args);
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^Usage: metal-cap-shim doctor \[--json\]/);
      expect(r.stdout).toContain('--mmap-file FILE');
    }
    expect(runCli(['--help']).stdout).toMatch(
      /^ {2}doctor +real Metal work on each device: what is proven, the faults, the verified profile$/m,
    );
  });
});

describe('InvalidOptionsError from the API, before anything runs', () => {
  it('doctor({ timeoutMs: 0 }) rejects', async () => {
    await expect(doctor({ timeoutMs: 0 })).rejects.toThrow(InvalidOptionsError);
  });
});

describe('without the native build (any non-Mac install)', () => {
  it('doctor() reports supported: false, auto applies nothing (strict: throws), the CLI exits 4 (no Metal)', () => {
    const pkg = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-nobuild-'));
    for (const part of ['dist', 'snapshots', 'package.json'])
      cpSync(path.join(root, part), path.join(pkg, part), { recursive: true });
    symlinkSync(path.join(root, 'node_modules'), path.join(pkg, 'node_modules'));
    const reason = process.platform === 'darwin' ? 'native-module-unavailable' : 'unsupported-platform';
    const r = jsonFrom<{ report: DoctorReport; auto: Record<string, unknown>; strict: string }>(
      runNode(`const m = await import(${JSON.stringify(path.join(pkg, 'dist', 'index.js'))});
        let strict = 'none';
        try { m.applyProfile('auto', { strict: true }); } catch (e) { strict = e.code; }
        console.log(JSON.stringify({ report: await m.doctor(), auto: m.applyProfile('auto'), strict }));`),
    );
    expect(r.report).toMatchObject({
      supported: false,
      reason,
      source: 'none',
      devices: [],
      restore: null,
      cache: null,
    });
    expect(r.report.patchedRun).toEqual({ ran: false, why: r.report.detail });
    expect(r.auto).toMatchObject({ applied: false, reason, profile: { ...resolveProfile({}), name: null } });
    expect('auto' in r.auto).toBe(false);
    expect(r.strict).toBe(process.platform === 'darwin' ? 'ERR_NATIVE_UNAVAILABLE' : 'ERR_UNSUPPORTED_PLATFORM');
    const cli = spawnSync(process.execPath, [path.join(pkg, 'dist', 'cli.js'), 'doctor'], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
    });
    expect(cli.status).toBe(EXIT.noMetal);
    // No Metal is a failure like any command's: one line on stderr, nothing on stdout (test/cli/main.test.ts).
    expect(cli.stdout).toBe('');
    expect(cli.stderr).toMatch(
      /^metal-cap-shim: ERR_[A-Z_]+: .+\. Offline, on any OS: metal-cap-shim doctor --snapshot github-macos-14-arm64-runner\n$/,
    );
  });
});

describe('doctor() options: every message whole, every bound from both sides', () => {
  it('device: 0 to 1023', () => {
    expect(checkDoctorOptions({ device: 1023 }).device).toBe(1023);
    for (const bad of [-1, 1024]) {
      expect(optionError({ device: bad })).toEqual({
        option: 'device',
        message: `doctor() option 'device' (--device) must be a whole number from 0 to 1023, got ${bad}`,
      });
    }
  });

  it('mmapFile: blank names no file; a path through a file says what open said', () => {
    for (const blank of ['', '   ']) {
      expect(optionError({ mmapFile: blank })).toEqual({
        option: 'mmapFile',
        message: "doctor() option 'mmapFile' (--mmap-file) must name a file, e.g. a model .gguf",
      });
    }
    const through = path.join(model, 'inner.gguf');
    expect(optionError({ mmapFile: through }).message).toBe(
      `doctor() option 'mmapFile' (--mmap-file) cannot use ${through}: ENOTDIR: not a directory, open '${through}'`,
    );
  });

  // Root opens any file whose mode forbids reading, except a write-only sysfs attribute; anyone else, a mode-000 file.
  const unreadable = (() => {
    if (process.getuid?.() !== 0) {
      const locked = path.join(dir, 'unreadable.gguf');
      writeFileSync(locked, Buffer.alloc(4096));
      chmodSync(locked, 0o000);
      return locked;
    }
    return ['/sys/bus/pci/rescan'].find((f) => existsSync(f)) ?? null;
  })();
  it.skipIf(unreadable === null)('mmapFile: a file that cannot be opened for reading', () => {
    expect(optionError({ mmapFile: unreadable! })).toEqual({
      option: 'mmapFile',
      message: `doctor() option 'mmapFile' (--mmap-file) cannot read ${unreadable} (EACCES); doctor only reads it`,
    });
  });

  it('mmapFile with mmapSize: one or the other', () => {
    expect(optionError({ mmapFile: model, mmapSize: 1 << 20 })).toEqual({
      option: 'mmapSize',
      message:
        "doctor() option 'mmapSize' (--mmap-size) cannot be given with mmapFile (--mmap-file): nocopy-mmap maps one or the other",
    });
  });

  it('probes: the message lists the probes there are', () => {
    const message =
      "doctor() option 'probes' must be a non-empty array of simdgroup-reduction, simdgroup-matrix, bfloat, threadgroup-memory, nocopy-mmap, residency-set, heap";
    for (const bad of [[], ['warp-speed'], 'bfloat'])
      expect(optionError({ probes: bad })).toEqual({ option: 'probes', message });
    expect(checkDoctorOptions({ probes: ['bfloat', 'bfloat'] }).probes).toEqual(['bfloat']);
  });

  it('a replay names the live option it refuses', () => {
    expect(optionError({ snapshot: 'vz-guest-m1-ultra-tahoe-stock', force: false })).toEqual({
      option: 'force',
      message: "doctor() option 'force' has no effect when a snapshot is replayed: nothing runs",
    });
    expect(
      checkDoctorOptions({
        snapshot: 'vz-guest-m1-ultra-tahoe-stock',
        device: 0,
        probes: ['bfloat'],
        profile: 'apple7',
        cache: false,
      }),
    ).toEqual({
      candidate: profiles.apple7!.profile,
      device: 0,
      timeoutMs: 5000,
      mmapFile: null,
      mmapSize: 1 << 30,
      probes: ['bfloat'],
      force: false,
      allowAboveHardware: false,
      snapshot: 'vz-guest-m1-ultra-tahoe-stock',
      cache: false,
    });
  });

  it('types are checked, and the messages name doctor()', () => {
    expect(optionError({ force: 'yes' })).toEqual({
      option: 'force',
      message: `doctor() option 'force' must be a boolean, got the string "yes"`,
    });
    expect(optionError({ cache: 1 })).toEqual({
      option: 'cache',
      message: "doctor() option 'cache' must be a boolean, got number 1",
    });
    expect(optionError({ mmap: 1 })).toEqual({
      option: 'mmap',
      message:
        "doctor() has no option 'mmap'; its options are profile, device, timeoutMs, mmapFile, mmapSize, probes, force, allowAboveHardware, snapshot, cache, onProgress",
    });
    expect(optionError({ onProgress: 'dots' })).toEqual({
      option: 'onProgress',
      message: `doctor() option 'onProgress' must be a function, got the string "dots"`,
    });
    expect(checkDoctorOptions({ force: true, cache: false })).toMatchObject({ force: true, cache: false });
  });

  it('allowAboveHardware: a boolean, default false', () => {
    expect(optionError({ allowAboveHardware: 'yes' })).toEqual({
      option: 'allowAboveHardware',
      message: `doctor() option 'allowAboveHardware' must be a boolean, got the string "yes"`,
    });
    expect(optionError({ allowAboveHardware: 1 }).option).toBe('allowAboveHardware');
    expect(checkDoctorOptions({}).allowAboveHardware).toBe(false);
    expect(checkDoctorOptions({ allowAboveHardware: true }).allowAboveHardware).toBe(true);
    expect(checkDoctorOptions({ allowAboveHardware: false }).allowAboveHardware).toBe(false);
  });

  it("auto's doctor run: METAL_CAP_SHIM_ALLOW_ABOVE_HARDWARE=1 turns allowAboveHardware on, nothing else does", () => {
    const run = (env: NodeJS.ProcessEnv) => autoDoctorOptions({ force: false }, env);
    expect(run({ METAL_CAP_SHIM_ALLOW_ABOVE_HARDWARE: '1' })).toEqual({
      ...checkDoctorOptions({ probes: [...AUTO_PROBES] }),
      allowAboveHardware: true,
    });
    expect(run({})).toEqual(checkDoctorOptions({ probes: [...AUTO_PROBES] }));
    for (const value of ['0', 'true', 'yes', ''])
      expect(run({ METAL_CAP_SHIM_ALLOW_ABOVE_HARDWARE: value }).allowAboveHardware).toBe(false);
    expect(autoDoctorOptions({ force: true, timeoutMs: 200 }, {})).toMatchObject({ force: true, timeoutMs: 200 });
  });
});

describeSim('--allow-above-hardware over the simulated Metal (the stock guest, which takes 64 KiB)', () => {
  const sizes = (p: { provenThreadgroupMemory: number | null; acceptedThreadgroupMemory: number | null }) => [
    p.provenThreadgroupMemory,
    p.acceptedThreadgroupMemory,
  ];
  const env = () => ({
    METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock',
    XDG_CACHE_HOME: mkdtempSync(path.join(tmpdir(), 'mcs-above-')),
  });

  it('doctor: nothing above 32768 bytes without the flag; with it, 65536 accepted', () => {
    requireSimBuild();
    const run = (flags: string[]) => {
      const r = runCli(['doctor', '--json', '--mmap-size', '1M', ...flags], env());
      const report = JSON.parse(r.stdout) as DoctorReport & { supported: true };
      const tg = report.devices[0]!.probes.find((p) => p.id === 'threadgroup-memory')!;
      return [report.settings.allowAboveHardware, sizes(tg), tg.detail.includes('not dispatched')];
    };
    expect(run([])).toEqual([false, [32768, null], true]);
    expect(run(['--allow-above-hardware'])).toEqual([true, [32768, 65536], false]);
  });

  it('report passes the flag to its doctor run', () => {
    requireSimBuild();
    const r = runCli(['report', '--json', '--mmap-size', '1M', '--allow-above-hardware'], env());
    expect(r.status, r.stderr).toBe(0);
    const doctorReport = (JSON.parse(r.stdout) as FieldReport).doctor as DoctorReport & { supported: true };
    const tg = doctorReport.devices[0]!.probes.find((p) => p.id === 'threadgroup-memory')!;
    expect([doctorReport.settings.allowAboveHardware, sizes(tg)]).toEqual([true, [32768, 65536]]);
  });
});
