// The audit command (lib/cli/audit.ts) as a user runs it: offline on a recorded snapshot, on any OS, and live on the
// simulated build (apply, verify, restore).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AuditResult } from '../../lib/audit/audit.js';
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

  it('cua-release under v0.5.0 (the sources): no configuration is sized from the claim on the stock guest, not refused', () => {
    const r = runCli(['audit', '--snapshot', STOCK, '--profile', 'cua-release', '--rules', 'v0.5.0', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const llama = (JSON.parse(r.stdout) as AuditResult).devices[0]!.engines.find((e) => e.engine === 'llama.cpp')!;
    expect(llama.threadgroup).toEqual({ changed: [], aboveHardware: [] });
  });

  it('cua-release under the legacy rules: exit 3, naming the configurations above 32768 bytes; --force does not lift it', () => {
    for (const extra of [[], ['--force']]) {
      const r = runCli(['audit', '--snapshot', STOCK, '--profile', 'cua-release', '--rules', 'legacy', ...extra]);
      expect([r.status, r.stderr]).toEqual([3, '']);
      expect(r.stdout).toContain(
        '! FLASH_ATTN_EXT half8x8, head 128/128, batch 4 to 8, 512 or more KV entries: not on the GPU → 55296 bytes (above 32768)',
      );
      expect(r.stdout).toMatch(
        /^Verdict: refused: under cua-release's threadgroup memory, llama\.cpp \(legacy rules\) would ask for more than any Apple GPU has \(--allow-above-hardware to apply it anyway\)$/m,
      );
    }
  });

  it('--allow-above-hardware lifts it: exit 0, the same configurations in the JSON', () => {
    const args = ['audit', '--snapshot', STOCK, '--profile', 'cua-release', '--rules', 'b4753', '--json'];
    const refused = runCli(args);
    const allowed = runCli([...args, '--allow-above-hardware']);
    expect([refused.status, allowed.status]).toEqual([3, 0]);
    const [a, b] = [refused, allowed].map((r) => JSON.parse(r.stdout) as AuditResult);
    expect([a!.refusedReason, b!.refusedReason]).toEqual(['above-hardware', null]);
    const llama = b!.devices[0]!.engines.find((e) => e.engine === 'llama.cpp')!;
    expect(llama.threadgroup!.aboveHardware.map((c) => [c.kernel, c.head, c.bytes])).toEqual([
      ['FLASH_ATTN_EXT half8x8', '64/64', 54272],
      ['FLASH_ATTN_EXT half8x8', '80/80', 54528],
      ['FLASH_ATTN_EXT half8x8', '96/96', 54784],
      ['FLASH_ATTN_EXT half8x8', '112/112', 55040],
      ['FLASH_ATTN_EXT half8x8', '128/128', 55296],
      ['FLASH_ATTN_EXT half8x8', '256/256', 57344],
      ['MUL_MAT_ID mul_mm_id', null, 65504],
    ]);
    expect(a!.devices[0]!.engines.find((e) => e.engine === 'llama.cpp')!.threadgroup).toEqual(llama.threadgroup);
  });

  it('host-family under the legacy rules: unaffected, nothing above the hardware', () => {
    const r = runCli(['audit', '--snapshot', STOCK, '--rules', 'legacy', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const llama = (JSON.parse(r.stdout) as AuditResult).devices[0]!.engines.find((e) => e.engine === 'llama.cpp')!;
    expect(llama.threadgroup!.aboveHardware).toEqual([]);
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
      /^llama\.cpp rules: current \(v0\.5\.0 and later; b-numbers: none; nightly builds after b10586 get chip-tuning\): no llama\.cpp loaded and no rules asked for: the newest rules$/m,
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
        "metal-cap-shim: ERR_USAGE: --rules takes legacy-b0, legacy-b1853, legacy-b4040, legacy-b4053, legacy, device-b6501, device-b6968, device-b7010, device-b7411, device, chip-tuning or current, or a llama.cpp release like b4753 or v0.4.0, got 'newest'",
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

describe('metal-cap-shim audit --engine ollama (offline, any OS)', () => {
  const ollama = (...args: string[]) => runCli(['audit', '--snapshot', STOCK, '--engine', 'ollama', ...args]);

  it('--release names the Ollama release: its llama.cpp rules, in the JSON under the audit schema and in the text', () => {
    const r = ollama('--release', 'v0.24.0', '--json');
    expect(r.status, r.stderr).toBe(0);
    const a = JSON.parse(r.stdout) as AuditResult;
    expect([
      a.schema,
      a.devices[0]!.engines.map((e) => e.engine),
      a.llamaCppRules.rules,
      a.llamaCppRules.ollama?.release,
    ]).toEqual(['metal-cap-shim/audit@1', ['llama.cpp'], 'device-b7411', 'v0.24.0']);
    const text = ollama('--release', '0.24.0');
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout.split('\n').filter((l) => l.startsWith('llama.cpp rules:'))).toEqual([
      'llama.cpp rules: device-b7411 (b7411 to b9332 (ggml-metal-device.m, before device_id)): Ollama v0.24.0 (c28ddc0a7) builds llama.cpp ec98e2002 (Makefile.sync FETCH_HEAD, b7411 to b9332); 10 patches touch ggml-metal, 0033-ggml-metal-solve_tri.patch changes a gate (SOLVE_TRI on no SIMD-group flag)',
    ]);
  });

  it('without --release: the newest release the table covers; --engine all is llama.cpp and MLX, without Ollama', () => {
    const newest = JSON.parse(ollama('--json').stdout) as AuditResult;
    expect(newest.llamaCppRules.ollama?.release).toBe('v0.32.15');
    const all = JSON.parse(runCli(['audit', '--snapshot', STOCK, '--engine', 'all', '--json']).stdout) as AuditResult;
    expect([all.devices[0]!.engines.map((e) => e.engine), all.llamaCppRules.ollama]).toEqual([
      ['llama.cpp', 'mlx'],
      undefined,
    ]);
  });

  it('a release the table does not cover, --release without --engine ollama, and --rules with it: usage errors', () => {
    const unknown = ollama('--release', 'v0.32.16');
    expect([unknown.status, unknown.stdout, unknown.stderr.split('\n')[0]]).toEqual([
      2,
      '',
      "metal-cap-shim: ERR_INVALID_OPTIONS: --release takes an Ollama release from v0.5.8 to v0.32.15 (see docs/engines.md#ollama-by-release), got 'v0.32.16' (did you mean 'v0.32.15'?)",
    ]);
    const alone = runCli(['audit', '--snapshot', STOCK, '--release', 'v0.24.0']);
    expect([alone.status, alone.stderr.split('\n')[0]]).toEqual([
      2,
      'metal-cap-shim: ERR_USAGE: --release names an Ollama release and applies to --engine ollama only; for a llama.cpp release use --rules v0.24.0',
    ]);
    const rules = ollama('--rules', 'b4753');
    expect([rules.status, rules.stderr.split('\n')[0]]).toEqual([
      2,
      'metal-cap-shim: ERR_USAGE: --rules b4753 does not go with --engine ollama: the Ollama release decides the rules',
    ]);
  });
});
