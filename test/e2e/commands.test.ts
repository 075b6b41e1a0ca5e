import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AuditResult } from '../../lib/audit/audit.js';
import type { FieldReport, Matrix } from '../../lib/audit/field-report.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { MLX_ARCHITECTURE_FLAGS, type MlxFlag } from '../../lib/engines/index.js';
import { describeSim, requireSimBuild, root, runCli } from '../support/helpers.js';

const STOCK = 'vz-guest-m1-ultra-tahoe-stock';
const llamaFlips = (a: AuditResult) =>
  a.devices.find((d) => d.isDefault)!.engines.find((e) => e.engine === 'llama.cpp')!.flipped;

describe('metal-cap-shim audit --snapshot (offline, any OS)', () => {
  it('cua-release on the stock guest flips the three llama.cpp gates from false to true, and the family from 5 to 9 (JSON)', () => {
    const r = runCli(['audit', '--snapshot', STOCK, '--profile', 'cua-release', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const a = JSON.parse(r.stdout) as AuditResult;
    expect(a.mode).toBe('offline');
    expect(llamaFlips(a)).toEqual([
      { flag: 'has_simdgroup_reduction', from: false, to: true },
      { flag: 'has_simdgroup_mm', from: false, to: true },
      { flag: 'has_bfloat', from: false, to: true },
      { flag: 'gpu_family', from: 5, to: 9 },
    ]);
    const d = a.devices[0]!;
    expect(d.changes.map((c) => c.field)).toEqual([
      'families.apple6',
      'families.apple7',
      'families.apple8',
      'families.apple9',
      'maxThreadgroupMemoryLength',
    ]);
    // One warning per fact: the claim above the host's family names the tuning, so no tuned-for-other-chip besides.
    expect(a.warnings.map((w) => w.code)).toEqual(['above-host-family', 'threadgroup-memory-above-hardware']);
    expect(a.llamaCppRules).toEqual({
      rules: 'current',
      releases: 'v0.5.0 and later',
      release: null,
      source: 'default',
      detail: 'no llama.cpp loaded and no rules asked for: the newest rules',
    });
    expect(a.verdict.ok).toBe(true);
  });

  it('the same in human output: the gates side by side, every changed answer marked, a verdict line', () => {
    const r = runCli(['audit', '--snapshot', STOCK, '--profile', 'cua-release']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/has_simdgroup_reduction\s+false\s+true \*/);
    expect(r.stdout).toMatch(/has_simdgroup_mm\s+false\s+true \*/);
    expect(r.stdout).toMatch(/has_bfloat\s+false\s+true \*/);
    expect(r.stdout).toMatch(/supportsFamily\(Apple7\)\s+NO\s+YES \*/);
    expect(r.stdout).toMatch(/maxThreadgroupMemoryLength\s+32768 \(32\.0 KiB\)\s+65536 \(64\.0 KiB\) \*/);
    expect(r.stdout).toMatch(
      /^Verdict: cua-release on Apple Paravirtual device: 5 answers change; llama.cpp turns on has_simdgroup_reduction, has_simdgroup_mm, has_bfloat; 2 warnings$/m,
    );
    expect(r.stdout).toMatch(
      /^llama\.cpp rules: current \(v0\.5\.0 and later\): no llama\.cpp loaded and no rules asked for: the newest rules$/m,
    );
    expect(r.stdout).toMatch(/gpu_family\s+5\s+9 \*/);
    expect(r.stdout).toMatch(
      /^ {2}Flash-attention tuning: family \(gpu_family 9: llama\.cpp's Apple9 table, pooled from the A18 Pro, M3 Max, M3 Pro, M3 Ultra, M4, M4 Max, M4 Pro sweeps\)\.$/m,
    );
    expect(r.stdout).toContain(
      "  ! the profile claims Apple9, above Apple7, the true family of this host's Apple M1 Ultra: llama.cpp v0.5.0 and later will tune with its Apple9 table (swept on the A18 Pro, M3 Max, M3 Pro, M3 Ultra, M4, M4 Max, M4 Pro), not this host's Apple M1 Ultra (profile host claims exactly the host's) [above-host-family]\n",
    );
  });

  it('apple9-hw-tg keeps threadgroup memory at 32768: no threadgroup warning; one warning for its claim above the M1 Ultra host’s Apple7, naming the tuning', () => {
    const a = JSON.parse(
      runCli(['audit', '--snapshot', STOCK, '--profile', 'apple9-hw-tg', '--json']).stdout,
    ) as AuditResult;
    expect(a.devices[0]!.patched.maxThreadgroupMemoryLength).toBe(32768);
    expect(llamaFlips(a).map((f) => f.flag)).toEqual([
      'has_simdgroup_reduction',
      'has_simdgroup_mm',
      'has_bfloat',
      'gpu_family',
    ]);
    expect(a.warnings).toEqual([
      {
        code: 'above-host-family',
        message:
          "the profile claims Apple9, above Apple7, the true family of this host's Apple M1 Ultra: llama.cpp v0.5.0 and later will tune with its Apple9 table (swept on the A18 Pro, M3 Max, M3 Pro, M3 Ultra, M4, M4 Max, M4 Pro), not this host's Apple M1 Ultra (profile host claims exactly the host's)",
      },
    ]);
  });

  it('apple7 on the stock guest under v0.4.0 rules: no representative for Apple7, so the baseline and no tuning warning', () => {
    const a = JSON.parse(
      runCli(['audit', '--snapshot', STOCK, '--profile', 'apple7', '--rules', 'v0.4.0', '--json']).stdout,
    ) as AuditResult;
    const llama = a.devices[0]!.engines.find((e) => e.engine === 'llama.cpp')!;
    expect(llama.after.engine === 'llama.cpp' && llama.after.tuning).toEqual({
      value: { tier: 'baseline', chip: null, family: null },
      reason: 'device_id GENERIC; gpu_family 7 has no representative: the baseline kernels',
    });
    expect(a.warnings).toEqual([]);
    expect(a.llamaCppRules).toEqual({
      rules: 'chip-tuning',
      releases: 'v0.4.x and nightly builds after b10586',
      release: 'v0.4.0',
      source: 'option',
      detail: 'llama.cpp v0.4.0 asked for',
    });
  });

  it('cua-release under v0.4.0 rules tunes the guest as an M4 Max, and the one warning says so', () => {
    const a = JSON.parse(
      runCli(['audit', '--snapshot', STOCK, '--profile', 'cua-release', '--rules', 'v0.4.0', '--json']).stdout,
    ) as AuditResult;
    expect(a.warnings.filter((w) => w.code !== 'threadgroup-memory-above-hardware')).toEqual([
      {
        code: 'above-host-family',
        message:
          "the profile claims Apple9, above Apple7, the true family of this host's Apple M1 Ultra: llama.cpp v0.4.x and nightly builds after b10586 will tune for an M4 Max (Apple9's representative), not this host's Apple M1 Ultra (profile host claims exactly the host's)",
      },
    ]);
  });

  it('raising the bare-metal M1 Ultra to Apple9: v0.4 keeps its own rows, v0.5 tunes it with the Apple9 table; one warning each', () => {
    const run = (rules: string) =>
      JSON.parse(
        runCli([
          'audit',
          '--snapshot',
          'm1-ultra-bare-metal',
          '--profile',
          'cua-release',
          '--force',
          '--rules',
          rules,
          '--json',
        ]).stdout,
      ) as AuditResult;
    const family = (a: AuditResult) =>
      a.warnings.filter((w) => w.code === 'above-host-family' || w.code === 'tuned-for-other-chip');
    expect(family(run('v0.4.0'))).toEqual([
      {
        code: 'above-host-family',
        message:
          "the profile claims Apple9, above Apple7, the true family of this host's Apple M1 Ultra: an engine that tunes by family tunes for a newer GPU than the one doing the work (profile host claims exactly the host's)",
      },
    ]);
    expect(family(run('current'))).toEqual([
      {
        code: 'above-host-family',
        message:
          "the profile claims Apple9, above Apple7, the true family of this host's Apple M1 Ultra: llama.cpp v0.5.0 and later will tune with its Apple9 table (swept on the A18 Pro, M3 Max, M3 Pro, M3 Ultra, M4, M4 Max, M4 Pro), not this host's Apple M1 Ultra (profile host claims exactly the host's)",
      },
    ]);
  });

  it('a name of another chip at the host’s own family: tuned-for-other-chip names that chip and the host’s', () => {
    const profile = JSON.stringify({ appleFamilyMax: 1007, deviceName: 'Apple M4 Max' });
    const a = JSON.parse(
      runCli([
        'audit',
        '--snapshot',
        'github-macos-14-arm64-runner',
        '--profile',
        profile,
        '--rules',
        'v0.4.0',
        '--json',
      ]).stdout,
    ) as AuditResult;
    expect(a.warnings).toEqual([
      {
        code: 'tuned-for-other-chip',
        message:
          "llama.cpp v0.4.x and nightly builds after b10586: with Apple7 claimed, flash attention is tuned for an M4 Max (its own rows), not for this host's Apple M1; stock tuning: with its baseline kernels",
      },
      {
        code: 'heap-in-vm',
        message:
          'MLX: the device answers "Apple M4 Max" instead of "Apple Paravirtual device", so in this VM MLX creates the buffer heap it skips there on purpose and adds it to its residency set; check it with doctor\'s heap probe, or leave deviceName null where MLX runs',
      },
    ]);
  });

  it('a guest whose chip is unknown: tuned-for-other-chip says the chip is unknown, not that a guest cannot see it', () => {
    const snapshot = JSON.parse(readFileSync(path.join(root, 'snapshots', `${STOCK}.json`), 'utf8'));
    snapshot.host.cpuBrand = null;
    snapshot.host.chip = null;
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcs-unknown-chip-')), 'guest.json');
    writeFileSync(file, JSON.stringify(snapshot));
    const a = JSON.parse(
      runCli(['audit', '--snapshot', file, '--profile', 'apple9-hw-tg', '--json']).stdout,
    ) as AuditResult;
    expect(a.warnings).toEqual([
      {
        code: 'tuned-for-other-chip',
        message:
          "llama.cpp v0.5.0 and later: with Apple9 claimed, flash attention is tuned with its Apple9 table (swept on the A18 Pro, M3 Max, M3 Pro, M3 Ultra, M4, M4 Max, M4 Pro); stock tuning: with its baseline kernels; this host's chip is unknown (its brand string names no Apple chip, or was not recorded), so that tuning may be for another chip",
      },
    ]);
  });

  it('an Intel Mac’s AMD GPU raised to Apple7: tuned-for-other-chip says it is no chip llama.cpp tunes for', () => {
    const a = JSON.parse(
      runCli(['audit', '--snapshot', 'macbookpro16-intel-amd-two-gpus', '--profile', 'apple7', '--force', '--json'])
        .stdout,
    ) as AuditResult;
    expect(a.warnings.filter((w) => w.code === 'tuned-for-other-chip')).toEqual([
      {
        code: 'tuned-for-other-chip',
        message:
          "llama.cpp v0.5.0 and later: with Apple7 claimed, flash attention is tuned with its Apple7 table (swept on the M1, M1 Ultra); stock tuning: with its baseline kernels; the host's GPU (AMD Radeon Pro 5500M) is no chip llama.cpp tunes for, so that tuning may be for another chip",
      },
    ]);
  });

  it('profile host on the macos-14 runner: the M1’s Apple7 and name, threadgroup memory left, one warning: MLX’s heap', () => {
    const r = runCli(['audit', '--snapshot', 'github-macos-14-arm64-runner', '--profile', 'host', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const a = JSON.parse(r.stdout) as AuditResult;
    expect([a.profile, a.refused, a.refusedReason, a.warnings]).toEqual([
      { ...resolveProfile('host'), appleFamilyMax: 1007, deviceName: 'Apple M1', mlxArchitecture: 'applegpu_g13g' },
      false,
      null,
      [
        {
          code: 'heap-in-vm',
          message:
            'MLX: the device answers "Apple M1" instead of "Apple Paravirtual device", so in this VM MLX creates the buffer heap it skips there on purpose and adds it to its residency set; check it with doctor\'s heap probe, or leave deviceName null where MLX runs',
        },
      ],
    ]);
    const d = a.devices[0]!;
    expect([d.patched.name, d.patched.highestAppleFamily, d.patched.maxThreadgroupMemoryLength]).toEqual([
      'Apple M1',
      { value: 1007, name: 'apple7' },
      32768,
    ]);
    expect(d.changes.map((c) => c.field)).toEqual([
      'name',
      'families.apple1',
      'families.apple2',
      'families.apple3',
      'families.apple4',
      'families.apple5',
      'families.apple6',
      'families.apple7',
    ]);
    // llama.cpp's family and chip follow the claimed family and the patched name: the M1's.
    expect(llamaFlips(a)).toEqual([
      { flag: 'has_simdgroup_reduction', from: false, to: true },
      { flag: 'has_simdgroup_mm', from: false, to: true },
      { flag: 'has_bfloat', from: false, to: true },
      { flag: 'gpu_family', from: 0, to: 7 },
      { flag: 'device_id', from: 'GGML_METAL_DEVICE_GENERIC', to: 'GGML_METAL_DEVICE_M1' },
    ]);
    // MLX skips its heap only on the paravirtual device's name: with the chip's name it creates one. The rest it
    // changes is what the offered architecture (the M1's) drives, in place of the device's own, unrecorded here.
    const mlxFlips = d.engines.find((e) => e.engine === 'mlx')!.flipped;
    expect(mlxFlips.filter((f) => !MLX_ARCHITECTURE_FLAGS.includes(f.flag as MlxFlag))).toEqual([
      { flag: 'heapSkipped', from: true, to: false },
    ]);
    expect(mlxFlips.find((f) => f.flag === 'architectureName')).toEqual({
      flag: 'architectureName',
      from: null,
      to: 'applegpu_g13g',
    });
    const human = runCli(['audit', '--snapshot', 'github-macos-14-arm64-runner', '--profile', 'host']).stdout;
    expect(human).toMatch(/^ {2}name +Apple Paravirtual device +Apple M1 \*$/m);
    expect(human).toContain('Host: VirtualMac2,1 · macOS 14.5 · arm64 · virtual machine · Apple M1\n');
  });

  it('heap-in-vm only where MLX stops skipping its heap: not for llama.cpp alone, not without a name, not on bare metal', () => {
    const codes = (args: string[]) =>
      (JSON.parse(runCli(['audit', ...args, '--json']).stdout) as AuditResult).warnings.map((w) => w.code);
    const runner = ['--snapshot', 'github-macos-14-arm64-runner'];
    expect(codes([...runner, '--profile', 'host', '--engine', 'mlx'])).toEqual(['heap-in-vm']);
    expect(codes([...runner, '--profile', 'host', '--engine', 'llama.cpp'])).toEqual([]);
    expect(codes([...runner, '--profile', 'apple7'])).toEqual([]);
    const renamed = JSON.stringify({ deviceName: 'Apple M4 Max' });
    expect(codes(['--snapshot', 'm1-ultra-bare-metal', '--profile', renamed, '--force'])).toEqual(['not-paravirtual']);
  });

  it('profile host where the chip is unknown: refused, exit 3, nothing predicted and nothing guessed', () => {
    const r = runCli(['audit', '--snapshot', 'macbookpro16-intel-amd-two-gpus', '--profile', 'host', '--json']);
    expect(r.status).toBe(3);
    const a = JSON.parse(r.stdout) as AuditResult;
    expect([a.profile, a.refused, a.refusedReason, a.warnings, a.verdict]).toEqual([
      resolveProfile('host'),
      true,
      'host-unknown',
      [],
      {
        ok: false,
        summary: "refused: host claims the host's chip, and this host's chip is unknown (nothing is guessed)",
      },
    ]);
    expect(a.devices.map((d) => [d.changes, d.patched])).toEqual(a.devices.map((d) => [[], d.stock]));
  });

  it('advertising metal3 warns, and MLX then creates residency sets', () => {
    const r = runCli([
      'audit',
      '--snapshot',
      STOCK,
      '--profile',
      '{"appleFamilyMax":1009,"families":{"metal3":true}}',
      '--json',
    ]);
    const a = JSON.parse(r.stdout) as AuditResult;
    expect(a.warnings.map((w) => w.code)).toContain('advertises-metal3');
    const mlx = a.devices[0]!.engines.find((e) => e.engine === 'mlx')!;
    expect(mlx.flipped).toContainEqual({ flag: 'residencySets', from: false, to: true });
  });

  it('raising on bare metal is refused (exit 3) unless --force; the default (host-family) raises nothing there', () => {
    const refused = runCli(['audit', '--snapshot', 'm1-ultra-bare-metal', '--profile', 'cua-release', '--json']);
    expect(refused.status).toBe(3);
    expect(JSON.parse(refused.stdout)).toMatchObject({ refused: true, verdict: { ok: false } });
    expect(runCli(['audit', '--snapshot', 'm1-ultra-bare-metal', '--profile', 'cua-release', '--force']).status).toBe(
      0,
    );
    const byDefault = JSON.parse(
      runCli(['audit', '--snapshot', 'm1-ultra-bare-metal', '--json']).stdout,
    ) as AuditResult;
    expect([byDefault.refused, byDefault.profile.appleFamilyMax, byDefault.warnings.map((w) => w.code)]).toEqual([
      false,
      1007,
      ['no-change'],
    ]);
    expect(runCli(['audit', '--snapshot', 'm1-ultra-bare-metal', '--profile', 'mask-apple5']).status).toBe(0);
  });

  it('--rules takes a release too, and rejects what is neither a rule set nor a release', () => {
    const a = JSON.parse(runCli(['audit', '--snapshot', STOCK, '--rules', 'b4753', '--json']).stdout) as AuditResult;
    expect(a.llamaCppRules).toEqual({
      rules: 'legacy',
      releases: 'b4562 to b6500 (ggml-metal.m)',
      release: 'b4753',
      source: 'option',
      detail: 'llama.cpp b4753 asked for',
    });
    const bad = runCli(['audit', '--snapshot', STOCK, '--rules', 'newest']);
    expect({ status: bad.status, error: bad.stderr.split('\n')[0] }).toEqual({
      status: 2,
      error:
        "metal-cap-shim: ERR_USAGE: --rules must be legacy-b0, legacy-b1853, legacy-b4040, legacy-b4053, legacy, device-b6501, device-b6968, device-b7010, device-b7411, device, chip-tuning, current or a llama.cpp release like b4753 or v0.4.0, got 'newest'",
    });
  });

  it('--engine and --rules narrow the prediction', () => {
    const a = JSON.parse(runCli(['audit', '--snapshot', STOCK, '--engine', 'mlx', '--json']).stdout) as AuditResult;
    expect(a.devices[0]!.engines.map((e) => e.engine)).toEqual(['mlx']);
    const legacy = JSON.parse(
      runCli(['audit', '--snapshot', STOCK, '--engine', 'llama.cpp', '--rules', 'legacy', '--json']).stdout,
    ) as AuditResult;
    const before = legacy.devices[0]!.engines[0]!.before;
    expect(before.engine === 'llama.cpp' && before.rules).toBe('legacy');
  });
});

describeSim('metal-cap-shim audit on the simulated build (live: apply, verify, restore)', () => {
  beforeAll(requireSimBuild);

  it('applies in its own process, verifies and restores', () => {
    const r = runCli(['audit', '--json'], { METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK });
    expect(r.status, r.stderr).toBe(0);
    const a = JSON.parse(r.stdout) as AuditResult;
    expect(a.mode).toBe('live');
    expect(a.verification?.apply?.ok).toBe(true);
    expect(a.verification?.restore?.ok).toBe(true);
    // host-family on an M1 Ultra guest: Apple7, the host's own family, and nothing above it.
    expect([a.devices[0]!.patched.families.apple7, a.devices[0]!.patched.families.apple8]).toEqual([true, false]);
    expect(a.verdict.summary).toContain('verified and restored');
  });
});

describe('metal-cap-shim report and matrix', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcs-reports-'));
  const make = (name: string, args: string[], env: NodeJS.ProcessEnv = {}) => {
    const r = runCli(['report', '--json', ...args], env);
    expect([0, 3], r.stderr).toContain(r.status);
    const file = path.join(dir, `${name}.json`);
    writeFileSync(file, r.stdout);
    return file;
  };

  it('a report carries the package version, the host, the stock and patched devices and the verdict', () => {
    const file = make('one', ['--snapshot', STOCK, '--host-label', 'M1 Ultra, macOS 26.6.1']);
    const report = JSON.parse(readFileSync(file, 'utf8')) as FieldReport;
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
    expect(report).toMatchObject({
      schema: 'metal-cap-shim/field-report@1',
      packageVersion: pkg.version,
      hostLabel: 'M1 Ultra, macOS 26.6.1',
      host: { model: 'VirtualMac2,1', osVersion: '26.5.2', isVirtualMachine: true },
    });
    expect(report.audit.devices[0]!.stock.families.apple7).toBe(false);
    expect(report.audit.devices[0]!.patched.families.apple7).toBe(true);
  });

  it('matrix merges reports into a host × guest OS × profile table', () => {
    const files = [
      make('a', ['--snapshot', STOCK, '--host-label', 'M1 Ultra, macOS 26.6.1']),
      make('b', ['--snapshot', STOCK, '--host-label', 'M1 Ultra, macOS 26.6.1', '--profile', 'apple7']),
      make('c', ['--snapshot', 'github-macos-14-arm64-runner', '--host-label', 'GitHub macos-14 runner']),
      make('d', ['--snapshot', 'm1-ultra-bare-metal', '--profile', 'cua-release']),
    ];
    const md = runCli(['matrix', ...files]);
    expect(md.status, md.stderr).toBe(0);
    expect(md.stdout.trim()).toBe(
      [
        '| Host | Guest OS | Architecture | apple7 | cua-release | host-family | Proven profile (doctor) | Faults (doctor) | Speed-up (bench) | Fidelity (bench) |',
        '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
        '| GitHub macos-14 runner | macOS 14.5 (VirtualMac2,1) | unrecorded | – | – | predicted offline (1); gates: reduction, mm, bfloat | not measured (1) | nocopy-mmap: wrong-result (1/1) | – | – |',
        '| M1 Ultra, macOS 26.6.1 | macOS 26.5.2 (VirtualMac2,1) | unrecorded | predicted offline (1); gates: reduction, mm, bfloat | – | predicted offline (1); gates: reduction, mm, bfloat | not measured (2) | residency-set: fail (2/2) | – | – |',
        '| Mac13,2 | macOS 26.6.1 (bare metal) | applegpu\\_g13d | – | refused (1) | – | not measured (1) | none found | – | – |',
      ].join('\n'),
    );
    const json = JSON.parse(runCli(['matrix', '--json', ...files]).stdout) as Matrix;
    expect(json.profiles).toEqual(['apple7', 'cua-release', 'host-family']);
    expect(json.rows).toHaveLength(3);
    // As each snapshot records it: both VM snapshots lack it; the bare-metal one has it.
    expect(json.rows.map((r) => [r.host, r.architectures])).toEqual([
      ['GitHub macos-14 runner', [null]],
      ['M1 Ultra, macOS 26.6.1', [null]],
      ['Mac13,2', ['applegpu_g13d']],
    ]);
    expect(json.rows[1]!.cells['host-family']).toMatchObject({ reports: 1, offline: 1, verified: 0 });
    expect(json.rows[1]!.doctor).toEqual({
      reports: 2,
      measured: 0,
      provenProfile: null,
      faults: [{ fault: 'residency-set: fail', reports: 2 }],
    });
  });

  it('matrix rejects a report whose doctor section is damaged, naming the field', () => {
    const good = JSON.parse(readFileSync(make('doctor-ok', ['--snapshot', STOCK]), 'utf8')) as FieldReport;
    for (const [edit, field] of [
      [
        (r: any) => (r.doctor = { schema: 'metal-cap-shim/doctor@0' }),
        'doctor must be null or a metal-cap-shim/doctor@1 result',
      ],
      [(r: any) => (r.doctor.devices = {}), 'doctor.devices must be an array'],
      [(r: any) => (r.doctor.devices[0].faults = 'none'), 'doctor.devices[0].faults must be an array of strings'],
      [(r: any) => delete r.doctor.devices[0].probes, 'doctor.devices[0].probes must be an array of judged probes'],
      [
        (r: any) => (r.doctor.devices[0].probes[2] = null),
        'doctor.devices[0].probes must be an array of judged probes',
      ],
      [(r: any) => (r.doctor.source = 7), 'doctor.source must be a string'],
      [
        (r: any) => (r.doctor.devices[0].verifiedProfile.appleFamilyMax = 5),
        'doctor.devices[0].verifiedProfile is not a profile',
      ],
    ] as const) {
      const bad = structuredClone(good);
      edit(bad);
      const file = path.join(dir, 'bad-doctor.json');
      writeFileSync(file, JSON.stringify(bad));
      const r = runCli(['matrix', file]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`ERR_INVALID_REPORT: ${file} is not a usable metal-cap-shim field report (${field}`);
    }
  });

  it.each([
    ['another schema', { schema: 'other' }, 'schema'],
    ['no audit', { schema: 'metal-cap-shim/field-report@1', host: null, hostLabel: null }, 'audit'],
    [
      'an empty audit',
      { schema: 'metal-cap-shim/field-report@1', host: null, hostLabel: null, audit: {} },
      'audit.mode',
    ],
  ])('matrix rejects a file that is not a usable field report (%s) with ERR_INVALID_REPORT', (_, content, field) => {
    const bad = path.join(dir, `bad-${field}.json`);
    writeFileSync(bad, JSON.stringify(content));
    const r = runCli(['matrix', bad]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('ERR_INVALID_REPORT');
    expect(r.stderr).toContain('not a usable metal-cap-shim field report');
    expect(r.stderr).not.toContain('    at ');
  });
});

describeSim('metal-cap-shim report on the simulated build', () => {
  beforeAll(requireSimBuild);
  it('live reports count as verified in the matrix', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-live-'));
    const file = path.join(dir, 'live.json');
    const r = runCli(['report', '--json', '--host-label', 'sim host', '--mmap-size', '1M'], {
      METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK,
      XDG_CACHE_HOME: dir,
    });
    expect(r.status, r.stderr).toBe(0);
    writeFileSync(file, r.stdout);
    const report = JSON.parse(r.stdout) as FieldReport;
    expect(report.doctor).toMatchObject({
      schema: 'metal-cap-shim/doctor@1',
      source: 'simulated',
      patchedRun: { ran: true },
    });
    expect(report.doctor!.settings.mmapSize).toBe(1 << 20);
    expect(report.doctor!.devices[0]!.faults).toEqual(['residency-set: fail']);
    const m = JSON.parse(runCli(['matrix', '--json', file]).stdout) as Matrix;
    expect(m.rows[0]!.cells['host-family']).toEqual({
      reports: 1,
      verified: 1,
      refused: 0,
      offline: 0,
      gatesOn: [
        'has_simdgroup_reduction',
        'has_simdgroup_mm',
        'has_bfloat',
        'use_residency_sets',
        'use_shared_buffers',
      ],
    });
    expect(m.rows[0]!.doctor).toEqual({
      reports: 1,
      measured: 1,
      provenProfile: {
        name: null,
        appleFamilyMax: 1007,
        maxThreadgroupMemoryLength: null,
        recommendedMaxWorkingSetSize: null,
        deviceName: 'Apple M1 Ultra',
        families: {},
        mode: 'raise',
      },
      faults: [{ fault: 'residency-set: fail', reports: 1 }],
    });
    expect(runCli(['matrix', file]).stdout).toContain(
      '✓ verified 1/1; gates: reduction, mm, bfloat | Apple7, name "Apple M1 Ultra" (1) | residency-set: fail (1/1) |',
    );
  });

  it('report --no-doctor leaves doctor out; a report without doctor still merges (–)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-live-'));
    const file = path.join(dir, 'bare.json');
    const r = runCli(['report', '--json', '--no-doctor'], { METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK, XDG_CACHE_HOME: dir });
    expect(r.status, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as FieldReport).doctor).toBeNull();
    writeFileSync(file, r.stdout);
    expect(runCli(['matrix', file]).stdout.trim().split('\n')[2]).toMatch(/ \| – \| – \|$/);
  });
});

describe('metal-cap-shim profiles, --help, --version and usage errors', () => {
  it('profiles --json lists the built-ins with values and rationale', () => {
    const r = runCli(['profiles', '--json']);
    const out = JSON.parse(r.stdout) as {
      default: string;
      profiles: { name: string; rationale: string; profile: { appleFamilyMax: number | 'host' } }[];
    };
    expect(out.default).toBe('host-family');
    expect(out.profiles.map((p) => p.name)).toEqual([
      'host-family',
      'cua-release',
      'apple9-hw-tg',
      'apple7',
      'mask-apple5',
      'host',
    ]);
    expect(out.profiles.map((p) => p.profile.appleFamilyMax)).toEqual(['host', 1009, 1009, 1007, 1005, 'host']);
    expect(out.profiles.every((p) => p.rationale.length > 20)).toBe(true);
  });

  it('profiles in human form name each profile and its risks', () => {
    const r = runCli(['profiles']);
    const lines = r.stdout.split('\n');
    expect(lines.slice(0, 2)).toEqual([
      'host-family (default) — The host chip’s true Apple family, and its GPU architecture offered to MLX; threadgroup memory and name left as the device answers (apple7 where the chip is unknown)',
      '  mode raise, Apple families up to the host chip’s true family, MLX offered the host chip’s GPU architecture; apple7 where the host’s chip is unknown',
    ]);
    expect(lines.filter((l) => l.includes('(default)'))).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith('  risks: '))).toHaveLength(6);
  });

  it('--version prints the package version', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
    expect(runCli(['--version']).stdout.trim()).toBe(pkg.version);
  });

  it.each(['probe', 'audit', 'exec', 'bench', 'report', 'matrix', 'profiles'])(
    '%s --help exits 0 with usage',
    (cmd) => {
      const r = runCli([cmd, '--help']);
      expect(r.status).toBe(0);
      expect(r.stdout).toContain(`Usage: metal-cap-shim ${cmd}`);
    },
  );

  it('no command prints the help on stderr, exit 2', () => {
    const r = runCli([]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^metal-cap-shim — probe Apple Metal device capabilities/);
    expect(r.stderr).toContain('Usage: metal-cap-shim <command>');
    expect(r.stdout).toBe('');
  });

  it.each([
    [
      ['frobnicate'],
      "unknown command 'frobnicate'; commands: probe, audit, exec, bench, report, matrix, profiles, snapshot, doctor",
      'metal-cap-shim --help',
    ],
    [['probe', '--all-devices=yes'], "--all-devices takes no value, got 'yes'", 'metal-cap-shim probe --help'],
    [
      ['audit', '--engine', 'tensorflow'],
      "--engine must be llama.cpp, mlx or all, got 'tensorflow'",
      'metal-cap-shim audit --help',
    ],
    [
      ['audit', '--rules', 'ancient'],
      "--rules must be legacy-b0, legacy-b1853, legacy-b4040, legacy-b4053, legacy, device-b6501, device-b6968, device-b7010, device-b7411, device, chip-tuning, current or a llama.cpp release like b4753 or v0.4.0, got 'ancient'",
      'metal-cap-shim audit --help',
    ],
    [
      ['exec', 'llama-bench'],
      "put `--` before the program, so that its options are not read as exec's: metal-cap-shim exec -- llama-bench",
      'metal-cap-shim exec --help',
    ],
    [['report', '--bogus'], "unknown option '--bogus'", 'metal-cap-shim report --help'],
    [['matrix'], 'matrix needs at least one report file', 'metal-cap-shim matrix --help'],
    [
      ['profiles', 'extra'],
      "unexpected argument 'extra': profiles takes options only",
      'metal-cap-shim profiles --help',
    ],
  ])(
    '%j is a usage error: one line, then where the usage is; exit 2 (exec: 125, its own failure), nothing on stdout',
    (args, message, help) => {
      const r = runCli(args as string[]);
      expect(r.status).toBe((args as string[])[0] === 'exec' ? 125 : 2);
      expect(r.stderr).toBe(`metal-cap-shim: ERR_USAGE: ${message}\nRun \`${help}\` for usage.\n`);
      expect(r.stdout).toBe('');
    },
  );

  it.each([
    [['audit', '--profile', 'apple99'], 'ERR_INVALID_PROFILE'],
    [['audit', '--snapshot', STOCK, '--profile', '{"families":{"apple11":true}}'], 'ERR_INVALID_PROFILE'],
    [['audit', '--snapshot', 'no-such-snapshot'], 'ERR_SNAPSHOT_NOT_FOUND'],
    [['report', '--snapshot', 'no-such-snapshot'], 'ERR_SNAPSHOT_NOT_FOUND'],
    [['matrix', '/nonexistent/report.json'], 'ERR_FILE'],
  ])('%j is a usage error: exit 2, one %s line on stderr, nothing on stdout', (args, code) => {
    const r = runCli(args as string[]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^metal-cap-shim: ${code}: [^\n]+\n$`));
    expect(r.stdout).toBe('');
  });
});
