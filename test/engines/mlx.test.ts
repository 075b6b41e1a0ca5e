// MLX's rule table (lib/engines/mlx.ts), as `metal-cap-shim/tables` hands it out: each rule lists exactly the
// device answers, host facts and environment variables its computation reads, in any rule set, and says where MLX
// computes it. The values are pinned by readable file snapshots (every bundled snapshot, and names at the edges under
// every rule set); the tests below check them by the rules MLX's source states, on both sides of every bound. The
// conformance suite (test/conformance/mlx.test.ts) compiles MLX's own parsing code and compares.
// lib/engines/ is imported afresh before each test, so the table is built inside the test that reads it (as in
// test/engines/llama-cpp.test.ts); imported once at the top, its mutants could only be left out as static.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type * as Engines from '../../lib/engines/index.js';
import { FAMILY_NAMES } from '../../lib/core/families.js';
import { listSnapshots, loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import type { DeviceReport, HostInfo } from '../../lib/device/types.js';

let E: typeof Engines;
beforeEach(async () => {
  vi.resetModules();
  E = await import('../../lib/engines/index.js');
});

type Env = Record<string, string | undefined>;
interface Case {
  device: DeviceReport;
  host: HostInfo;
  env: Env;
}

// Every recorded device with its host, under no MLX variable, an empty architecture, a set one, and the fast fence.
const recorded = listSnapshots().flatMap((name) => {
  const report = reportFromSnapshot(loadSnapshot(name), { allDevices: true });
  return report.devices.map((device) => ({ device, host: report.host!, snapshot: name }));
});
const ENVS: Env[] = [
  {},
  { MLX_METAL_GPU_ARCH: '' },
  { MLX_METAL_GPU_ARCH: 'applegpu_g17s' },
  { MLX_METAL_GPU_ARCH: 'applegpu_g17s', MLX_METAL_FAST_SYNCH: '1' },
];
const cases: Case[] = recorded.flatMap((r) => ENVS.map((env) => ({ device: r.device, host: r.host, env })));

// The variables a rule could read: MLX's switches, one it does not model, and llama.cpp's (which no MLX rule reads).
const CANDIDATE_ENV = [
  'MLX_METAL_GPU_ARCH',
  'MLX_MAX_OPS_PER_BUFFER',
  'MLX_MAX_MB_PER_BUFFER',
  'MLX_METAL_FAST_SYNCH',
  'MLX_SDPA_BLOCKS',
  'MLX_RESIDENCY_SET_MAX_PCT',
  'MLX_CONV_WINOGRAD_WORKING_SET',
  'MLX_METAL_DEBUG',
  'GGML_METAL_NO_RESIDENCY',
];

/** Other values a field could hold: the other recordings' values, null, and a near variant of its own. */
function variants(field: string, value: unknown, seen: unknown[]): unknown[] {
  const near =
    typeof value === 'boolean'
      ? [!value]
      : typeof value === 'number'
        ? [value + 1]
        : typeof value === 'string'
          ? [`${value}1`]
          : ['x'];
  return [...new Set([...seen, null, ...near])].filter((v) => v !== value && !(field === 'name' && v === null));
}

const deviceFields = [...new Set(recorded.flatMap((r) => Object.keys(r.device)))].filter(
  (f) => f !== 'families' && f !== 'flags',
);
const hostFields = [...new Set(recorded.flatMap((r) => Object.keys(r.host)))];

type Rule = (typeof Engines.MLX_RULES)[number];
type RuleSet = Engines.MlxRuleSet;

/** What one rule computes for a case under a rule set; a throw counts as an outcome too. */
function outcome(rule: Rule, c: Case, ruleSet: RuleSet): string {
  try {
    const ctx = { device: c.device, host: c.host, env: c.env, macos: E.parseMacos(c.host), ruleSet };
    return JSON.stringify(rule.compute(ctx));
  } catch (err) {
    return `threw ${String(err)}`;
  }
}

/** The inputs whose change changes what `rule` computes in some case and rule set, named as the table names them. */
function reads(rule: Rule): { families: string[]; properties: string[]; env: string[] } {
  const families = new Set<string>();
  const properties = new Set<string>();
  const env = new Set<string>();
  for (const ruleSet of E.MLX_RULE_SETS.filter((r) => E.mlxAtLeast(r, rule.since))) {
    for (const c of cases) {
      const base = outcome(rule, c, ruleSet);
      const differs = (changed: Case) => outcome(rule, changed, ruleSet) !== base;
      for (const f of FAMILY_NAMES) {
        for (const v of [true, false, null].filter((x) => x !== c.device.families[f])) {
          if (differs({ ...c, device: { ...c.device, families: { ...c.device.families, [f]: v } } })) families.add(f);
        }
      }
      for (const f of deviceFields) {
        const own = (c.device as unknown as Record<string, unknown>)[f];
        const seen = recorded.map((r) => (r.device as unknown as Record<string, unknown>)[f]);
        for (const v of variants(f, own, seen)) {
          if (differs({ ...c, device: { ...c.device, [f]: v } as DeviceReport })) properties.add(f);
        }
      }
      for (const f of hostFields) {
        const own = (c.host as unknown as Record<string, unknown>)[f];
        const seen = recorded.map((r) => (r.host as unknown as Record<string, unknown>)[f]);
        for (const v of variants(f, own, seen)) {
          if (differs({ ...c, host: { ...c.host, [f]: v } as HostInfo })) properties.add(`host.${f}`);
        }
      }
      for (const name of CANDIDATE_ENV) {
        for (const v of [undefined, '', '1', '100', 'applegpu_g14d'].filter((x) => x !== c.env[name])) {
          if (differs({ ...c, env: { ...c.env, [name]: v } })) env.add(name);
        }
      }
    }
  }
  return { families: [...families], properties: [...properties], env: [...env] };
}

const m1 = recorded.find((r) => r.snapshot === 'm1-ultra-bare-metal')!;
const guest = recorded.find((r) => r.snapshot === 'vz-guest-m1-ultra-tahoe-stock')!;

/** MLX's prediction for the M1 Ultra's answers with another architecture name (null: unrecorded). */
function predict(
  architecture: string | null,
  opts: { release?: string; env?: Env; osVersion?: string; offered?: string | null } = {},
) {
  const device = { ...structuredClone(m1.device), architecture };
  const host = { ...m1.host, osVersion: opts.osVersion ?? m1.host.osVersion };
  return E.predictMlx(
    { device, host, env: opts.env ?? {}, macos: E.parseMacos(host) },
    { release: opts.release, architectureName: opts.offered ?? null },
  );
}

/** The names at the edges: the bundled ones, both sides of each length and digit bound, every class letter. */
const EDGE_NAMES: (string | null)[] = [
  'applegpu_g13d',
  'applegpu_g13s',
  'applegpu_g14g',
  'applegpu_g15s',
  'applegpu_g16p',
  'applegpu_g17p',
  'applegpu_g17g',
  'applegpu_g18p',
  'applegpu_g9',
  'applegpu_gXYs',
  'applegpu_g1Xs',
  '13s',
  'xy',
  'x',
  '',
  null,
];

describe("MLX's rule table", () => {
  it('each rule lists exactly the families, properties and variables its computation reads', () => {
    const sorted = (r: { families: readonly string[]; properties: readonly string[]; env: readonly string[] }) => ({
      families: [...r.families].sort(),
      properties: [...r.properties].sort(),
      env: [...r.env].sort(),
    });
    expect(Object.fromEntries(E.MLX_RULES.map((rule) => [rule.flag, sorted(reads(rule))]))).toEqual(
      Object.fromEntries(E.MLX_RULES.map((rule) => [rule.flag, sorted(rule)])),
    );
  });

  it('each rule names the MLX source file and function that computes it, and its rule in words', async () => {
    for (const r of E.MLX_RULES) expect(r.source).toMatch(/^mlx\/backend\/metal\/\w+\.cpp \w+(::\w+)?$/);
    const text = E.MLX_RULES.map((r) =>
      [
        `## ${r.flag}${r.byArchitecture ? ' (by architecture)' : ''}`,
        `since ${r.since}: ${r.source}`,
        r.rule,
        ...r.changes.map((c) => `- from ${c.from}: ${c.what}`),
        '',
      ].join('\n'),
    ).join('\n');
    await expect(text).toMatchFileSnapshot('__snapshots__/mlx-rules.md');
  });

  it('every switch a rule reads is one of MLX_SWITCHES, and every switch is read by a rule', () => {
    const read = new Set(E.MLX_RULES.flatMap((r) => r.env));
    expect([...read].sort()).toEqual(E.MLX_SWITCHES.map((s) => s.name).sort());
  });

  it('every rule set begins where a rule or a switch begins or changes, and names its first release', () => {
    const starts = new Set<string>([
      ...E.MLX_RULES.flatMap((r) => [r.since, ...r.changes.map((c) => c.from)]),
      ...E.MLX_SWITCHES.map((s) => s.since),
    ]);
    expect(E.MLX_RULE_SETS.filter((id) => !starts.has(id))).toEqual([]);
    for (const r of E.MLX_RULE_SET_REGISTRY) expect(r.id).toBe(`v${r.first.join('.')}`);
  });

  it('a value is null exactly in the rule sets before its rule begins', () => {
    for (const ruleSet of E.MLX_RULE_SETS) {
      const p = predict('applegpu_g13d', { release: ruleSet });
      for (const r of E.MLX_RULES) {
        const before = !E.mlxAtLeast(ruleSet, r.since);
        expect([r.flag, ruleSet, p.flags[r.flag].value === null]).toEqual([r.flag, ruleSet, before]);
        if (before) expect(p.flags[r.flag].reason).toBe(`MLX ${ruleSet} rules have no ${r.flag} (from ${r.since})`);
      }
    }
  });
});

describe('MLX predictions, pinned', () => {
  it('every bundled snapshot, every device, under the newest rules', async () => {
    const lines = recorded.flatMap((r) => {
      const p = E.predictGates(r.device, 'mlx', { env: {}, host: r.host });
      return [
        `## ${r.snapshot} device ${r.device.index} (${r.device.name})`,
        ...Object.entries(p.flags).map(([k, v]) => `- ${k}: ${JSON.stringify(v.value)} — ${v.reason}`),
        ...p.warnings.map((w) => `- warning: ${w}`),
        '',
      ];
    });
    await expect(lines.join('\n')).toMatchFileSnapshot('__snapshots__/mlx-snapshots.md');
  });

  it('names at the edges under every rule set: the architecture-driven values', async () => {
    const flags = E.MLX_ARCHITECTURE_FLAGS.filter((f) => f !== 'architectureName');
    const lines = [`| name | rules | ${flags.join(' | ')} |`, `|${' --- |'.repeat(flags.length + 2)}`];
    for (const name of EDGE_NAMES) {
      for (const ruleSet of E.MLX_RULE_SETS) {
        const p = predict(name, { release: ruleSet });
        lines.push(
          `| ${JSON.stringify(name)} | ${ruleSet} | ${flags.map((f) => JSON.stringify(p.flags[f].value)).join(' | ')} |`,
        );
      }
    }
    await expect(`${lines.join('\n')}\n`).toMatchFileSnapshot('__snapshots__/mlx-edges.md');
  });
});

describe("MLX's architecture name", () => {
  const from = (rs: RuleSet) => E.MLX_RULE_SETS.filter((r) => E.mlxAtLeast(r, rs));
  const olderThan = (rs: RuleSet) => E.MLX_RULE_SETS.filter((r) => !E.mlxAtLeast(r, rs));

  it('two digits before the class letter are the generation, in every rule set that parses one', () => {
    for (const ruleSet of from('v0.26.2')) {
      for (let n = 0; n < 100; n += 7) {
        const name = `applegpu_g${String(n).padStart(2, '0')}s`;
        expect([name, ruleSet, predict(name, { release: ruleSet }).flags.architectureGeneration.value]).toEqual([
          name,
          ruleSet,
          n,
        ]);
      }
    }
  });

  it('from v0.31.0 a character that is no digit counts 0, and a name of 1 or 2 bytes is generation 0', () => {
    for (const ruleSet of from('v0.31.0')) {
      const gen = (name: string) => predict(name, { release: ruleSet }).flags.architectureGeneration.value;
      expect(gen('applegpu_gXYs')).toBe(gen('applegpu_g00s'));
      expect(gen('applegpu_g1Xs')).toBe(gen('applegpu_g10s'));
      expect(gen('applegpu_gX7s')).toBe(gen('applegpu_g07s'));
      // Both sides of the length bound: 3 characters parse, 2 and 1 are 0; an empty name is undefined behaviour
      // (arch_.back()), so no generation.
      expect([gen('13s'), gen('3s'), gen('x'), gen('')]).toEqual([13, 0, 0, null]);
    }
  });

  it("before v0.31.0 MLX subtracts '0' from any character, and a name shorter than 3 is undefined behaviour", () => {
    for (const ruleSet of olderThan('v0.31.0').filter((r) => E.mlxAtLeast(r, 'v0.26.2'))) {
      const p = (name: string) => predict(name, { release: ruleSet });
      const code = (c: string) => c.charCodeAt(0) - '0'.charCodeAt(0);
      expect(p('applegpu_gXYs').flags.architectureGeneration.value).toBe(code('X') * 10 + code('Y'));
      expect(p('13s').flags.architectureGeneration.value).toBe(13);
      for (const short of ['3s', 'x']) {
        expect(p(short).flags.architectureGeneration.value).toBeNull();
        expect(p(short).warnings).toContain(
          `MLX parses the architecture name ${JSON.stringify(short)} with undefined behaviour (a read before a name shorter than 3): its kernel choices cannot be predicted`,
        );
      }
    }
  });

  it('an empty name is undefined behaviour in every rule set: its last character does not exist', () => {
    for (const ruleSet of E.MLX_RULE_SETS) {
      const p = predict('', { release: ruleSet });
      expect(p.flags.architectureClass).toEqual({
        value: null,
        reason: 'architecture.name="", empty name: MLX reads its last character (undefined behaviour)',
      });
      expect(p.warnings).toContain(
        'MLX parses the architecture name "" with undefined behaviour (the last character of an empty name): its kernel choices cannot be predicted',
      );
    }
  });

  it('an unrecorded name (both bundled VM snapshots) leaves every architecture-driven value unknown', () => {
    const p = E.predictGates(guest.device, 'mlx', { env: {}, host: guest.host });
    expect(guest.device.architecture).toBeNull();
    expect(E.MLX_ARCHITECTURE_FLAGS.map((f) => [f, p.flags[f].value])).toEqual(
      E.MLX_ARCHITECTURE_FLAGS.map((f) => [f, null]),
    );
  });

  it('MLX_METAL_GPU_ARCH replaces the name from v0.31.0 when not empty; before, it is ignored with a warning', () => {
    const env = { MLX_METAL_GPU_ARCH: 'applegpu_g15s' };
    for (const ruleSet of from('v0.31.0')) {
      const p = predict('applegpu_g13d', { release: ruleSet, env });
      expect([p.flags.architectureName.value, p.ignored]).toEqual(['applegpu_g15s', []]);
      expect(
        predict('applegpu_g13d', { release: ruleSet, env: { MLX_METAL_GPU_ARCH: '' } }).flags.architectureName.value,
      ).toBe('applegpu_g13d');
    }
    for (const ruleSet of olderThan('v0.31.0')) {
      const p = predict('applegpu_g13d', { release: ruleSet, env });
      expect(p.flags.architectureName.value).toBe('applegpu_g13d');
      expect(p.ignored).toEqual([
        {
          name: 'MLX_METAL_GPU_ARCH',
          since: 'v0.31.0',
          message: `MLX ${ruleSet} ignores MLX_METAL_GPU_ARCH="applegpu_g15s": MLX_METAL_GPU_ARCH is read from v0.31.0 (${E.MLX_RULE_SET_INFO['v0.31.0'].releases})`,
        },
      ]);
    }
  });

  it('an offered architecture is MLX_METAL_GPU_ARCH: it changes exactly the architecture-driven values', () => {
    for (const ruleSet of E.MLX_RULE_SETS) {
      const stock = predict('applegpu_g13d', { release: ruleSet });
      const offered = predict('applegpu_g13d', { release: ruleSet, offered: 'applegpu_g17g' });
      const viaEnv = predict('applegpu_g13d', { release: ruleSet, env: { MLX_METAL_GPU_ARCH: 'applegpu_g17g' } });
      expect(offered.flags).toEqual(viaEnv.flags);
      expect(offered.offeredArchitecture).toBe('applegpu_g17g');
      const changed = E.MLX_RULES.filter((r) => offered.flags[r.flag].value !== stock.flags[r.flag].value);
      expect(changed.every((r) => r.byArchitecture)).toBe(true);
      expect(changed.length > 0).toBe(E.mlxAtLeast(ruleSet, 'v0.31.0'));
      if (!E.mlxAtLeast(ruleSet, 'v0.31.0')) {
        expect(offered.ignored.map((i) => i.message)).toEqual([
          `MLX ${ruleSet} ignores the offered architecture "applegpu_g17g": MLX_METAL_GPU_ARCH is read from v0.31.0 (${E.MLX_RULE_SET_INFO['v0.31.0'].releases})`,
        ]);
      }
    }
  });
});

describe("MLX's paths by generation and class", () => {
  const at = (ruleSet: RuleSet, name: string, osVersion?: string) =>
    predict(name, { release: ruleSet, ...(osVersion === undefined ? {} : { osVersion }) }).flags;

  it('gemv_wide from generation 15 (v0.32.1 on), affine qmv_wide from 15 (v0.32.0 on)', () => {
    for (const ruleSet of E.MLX_RULE_SETS) {
      const wide = (name: string) => [at(ruleSet, name).gemvWide.value, at(ruleSet, name).affineQmvWide.value];
      const gemv = E.mlxAtLeast(ruleSet, 'v0.32.1');
      const qmv = E.mlxAtLeast(ruleSet, 'v0.32.0');
      expect([ruleSet, wide('applegpu_g14s')]).toEqual([ruleSet, [gemv ? false : null, qmv ? false : null]]);
      expect([ruleSet, wide('applegpu_g15s')]).toEqual([ruleSet, [gemv ? true : null, qmv ? true : null]]);
    }
  });

  it('NAX from generation 17 (18 for class p from v0.30.5), on macOS 26.2 from v0.30.1', () => {
    for (const ruleSet of E.MLX_RULE_SETS.filter((r) => E.mlxAtLeast(r, 'v0.30.0'))) {
      const nax = (name: string, os = '26.2') => at(ruleSet, name, os).nax.value;
      const pNeeds18 = E.mlxAtLeast(ruleSet, 'v0.30.5');
      const runtimeMac = E.mlxAtLeast(ruleSet, 'v0.30.1');
      expect([ruleSet, nax('applegpu_g16g'), nax('applegpu_g17g')]).toEqual([ruleSet, false, true]);
      expect([ruleSet, nax('applegpu_g17p'), nax('applegpu_g18p')]).toEqual([ruleSet, !pNeeds18, true]);
      expect([ruleSet, nax('applegpu_g17g', '26.1'), nax('applegpu_g17g', '26.2')]).toEqual([
        ruleSet,
        !runtimeMac,
        true,
      ]);
    }
    expect(at('v0.24.2', 'applegpu_g17g').nax.value).toBeNull();
  });

  it('command-buffer limits by class letter from v0.23.0, the variables replacing them (atoi)', () => {
    const limits = (name: string, ruleSet: RuleSet = 'v0.23.0', env: Env = {}) => {
      const f = predict(name, { release: ruleSet, env }).flags;
      return [f.maxOpsPerBuffer.value, f.maxMbPerBuffer.value];
    };
    expect(['p', 'g', 's', 'd', 'x'].map((c) => limits(`applegpu_g13${c}`))).toEqual([
      [20, 40],
      [40, 40],
      [50, 50],
      [50, 50],
      [40, 40],
    ]);
    expect(limits('applegpu_g13d', 'v0.22.1')).toEqual([10, null]);
    expect(limits('applegpu_g13d', 'v0.22.1', { MLX_MAX_OPS_PER_BUFFER: '7' })).toEqual([7, null]);
    const env = { MLX_MAX_OPS_PER_BUFFER: ' 12abc', MLX_MAX_MB_PER_BUFFER: 'many' };
    expect(limits('applegpu_g13p', 'v0.32.1', env)).toEqual([12, 0]);
    // The variables decide even where the name is unknown, for they replace whatever the class gave.
    expect(limits(null as unknown as string, 'v0.32.1', env)).toEqual([12, 0]);
    expect(limits(null as unknown as string, 'v0.32.1')).toEqual([null, null]);
  });

  it('the class routes GEMM tiles, split-K and the 2-pass SDPA, each from the release that reads it', () => {
    const route = (ruleSet: RuleSet, c: string) => {
      const f = at(ruleSet, `applegpu_g14${c}`);
      return [f.gemmTiles.value, f.splitKThreshold.value, f.sdpaTwoPass.value];
    };
    expect(['p', 'g', 's', 'd'].map((c) => route('v0.19.2', c))).toEqual([
      ['default', 32, null],
      ['small-device', 32, null],
      ['default', 32, null],
      ['large-device', 32, null],
    ]);
    expect(['p', 's', 'd'].map((c) => route('v0.30.4', c))).toEqual([
      ['small-device', 32, 'GQA from 4096 keys'],
      ['default', 32, 'from 1024 keys'],
      ['large-device', 32, 'from 1024 keys'],
    ]);
    expect(route('v0.30.3' as RuleSet, 's')).toEqual(['default', 32, 'GQA from 4096 keys']);
    expect(['g', 's', 'd'].map((c) => route('v0.30.5', c)[1])).toEqual([1024, 2048, 2048]);
  });

  it('MLX_SDPA_BLOCKS from v0.32.0, rounded up to a multiple of 32 from v0.32.1', () => {
    const blocks = (ruleSet: RuleSet, v: string) =>
      predict('applegpu_g14g', { release: ruleSet, env: { MLX_SDPA_BLOCKS: v } }).flags.sdpaBlocks.value;
    expect([
      blocks('v0.30.4', '33'),
      blocks('v0.32.0', '33'),
      blocks('v0.32.1', '33'),
      blocks('v0.32.1', '32'),
    ]).toEqual(['32 or 64', '33', '64', '32']);
    expect(blocks('v0.32.1', '0')).toBe('32 or 64');
  });

  it('quantized batch limits: from v0.32.1 by generation tier, before by 13 or 14 only', () => {
    const q = (ruleSet: RuleSet, name: string) => at(ruleSet, name).qmvBatchLimits.value;
    const newest = [
      'applegpu_g12g',
      'applegpu_g13g',
      'applegpu_g14g',
      'applegpu_g15g',
      'applegpu_g16g',
      'applegpu_g17g',
    ];
    expect(newest.map((n) => q('v0.32.1', n))).toEqual([
      '18/12/10',
      '14/10/6',
      '14/10/6',
      '13/15/13',
      '13/15/13',
      '33/25/13',
    ]);
    expect(newest.map((n) => q('v0.32.0', n))).toEqual([
      '18/12/10',
      '14/10/6',
      '14/10/6',
      '18/12/10',
      '18/12/10',
      '18/12/10',
    ]);
    expect(['applegpu_g17d', 'applegpu_g13d'].map((n) => q('v0.32.1', n))).toEqual(['32/18/12', '32/18/12']);
    // The string comparison of v0.24.2 to v0.30.x throws on a name shorter than 3.
    expect(at('v0.30.6' as RuleSet, 'xy').qmvBatchLimits.value).toBeNull();
  });
});

describe('MLX releases', () => {
  it('each rule set is the rules of its first release; the release before it has the rules before', () => {
    const ids = E.MLX_RULE_SETS;
    E.MLX_RULE_SET_REGISTRY.forEach((r, i) => {
      expect(E.mlxRuleSetForRelease(E.parseMlxRelease(r.id)!)).toEqual({ ruleSet: r.id, warning: null });
      expect(E.mlxRuleSetForRelease(E.parseMlxRelease(r.first.join('.'))!).ruleSet).toBe(r.id);
      if (i > 0) {
        const [a, b, c] = r.first;
        const prev = c > 0 ? `v${a}.${b}.${c - 1}` : `v${a}.${b - 1}.99`;
        expect(E.mlxRuleSetForRelease(E.parseMlxRelease(prev)!).ruleSet).toBe(ids[i - 1]);
      }
    });
  });

  it('a release outside what was read gets the nearest rules and a warning; a release that is no version throws', () => {
    expect(E.mlxRuleSetForRelease(E.parseMlxRelease('v0.19.1')!)).toEqual({
      ruleSet: 'v0.19.2',
      warning:
        'MLX v0.19.1 is older than v0.19.2, the oldest release these rules describe: v0.19.2 rules assumed (before it MLX creates residency sets without asking for Metal3)',
    });
    expect(E.mlxRuleSetForRelease(E.parseMlxRelease('0.32.3')!)).toEqual({
      ruleSet: 'v0.32.2',
      warning: 'MLX 0.32.3 is newer than 0.32.2, the newest source read: v0.32.2 rules assumed',
    });
    expect(E.parseMlxRelease('b4753')).toBeNull();
    const thrown = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        const e = err as { name: string; option: string; message: string };
        return { name: e.name, option: e.option, message: e.message };
      }
      return null;
    };
    expect(thrown(() => E.predictGates(m1.device, 'mlx', { release: 'latest' }))).toEqual({
      name: 'InvalidOptionsError',
      option: 'release',
      message: 'release must be an MLX release like "v0.31.0" or "0.31.0"; got the string "latest"',
    });
    expect(thrown(() => E.predictGates(m1.device, 'mlx', { mlxArchitecture: 13 as never }))).toEqual({
      name: 'InvalidOptionsError',
      option: 'mlxArchitecture',
      message: 'mlxArchitecture must be an architecture name like "applegpu_g13s", or null; got number 13',
    });
    expect(thrown(() => E.predictGates(m1.device, 'llama.cpp', { mlxArchitecture: 'applegpu_g13s' }))).toEqual({
      name: 'InvalidOptionsError',
      option: 'mlxArchitecture',
      message: 'mlxArchitecture is offered to MLX: engine "mlx" only',
    });
  });

  it('predictGates passes the MLX release and the offered architecture through', () => {
    const p = E.predictGates(m1.device, 'mlx', {
      env: {},
      host: m1.host,
      release: '0.31.0',
      mlxArchitecture: 'applegpu_g15s',
    });
    expect([p.rules, p.release, p.offeredArchitecture, p.flags.architectureGeneration.value]).toEqual([
      'v0.31.0',
      '0.31.0',
      'applegpu_g15s',
      15,
    ]);
  });
});

describe("MLX's environment as env::get_var reads it: atoi into an int", () => {
  it.each<[string, { value: number; overflowed: string | null }]>([
    ['5', { value: 5, overflowed: null }],
    [' \t+12abc', { value: 12, overflowed: null }],
    ['abc', { value: 0, overflowed: null }],
    ['', { value: 0, overflowed: null }],
    ['0000000000000000000000005', { value: 5, overflowed: null }],
    ['2147483647', { value: 2147483647, overflowed: null }],
    ['2147483648', { value: -2147483648, overflowed: '2147483648' }],
    ['-2147483648', { value: -2147483648, overflowed: null }],
    ['-2147483649', { value: 2147483647, overflowed: '-2147483649' }],
    ['8589934592', { value: 0, overflowed: '8589934592' }],
    ['3000000000', { value: -1294967296, overflowed: '3000000000' }],
    ['4294967301', { value: 5, overflowed: '4294967301' }],
    // strtol saturates at the long's bounds before the int keeps the low 32 bits.
    ['9223372036854775807', { value: -1, overflowed: '9223372036854775807' }],
    ['99999999999999999999999', { value: -1, overflowed: '99999999999999999999999' }],
    ['-99999999999999999999999', { value: 0, overflowed: '-99999999999999999999999' }],
  ])('%j', (text, reading) => {
    expect(E.atoiInt(text)).toEqual(reading);
  });

  it('MLX_RESIDENCY_SET_MAX_PCT=4294967301 reads as 5, and the overflow is warned', () => {
    const p = predict('applegpu_g13d', { env: { MLX_RESIDENCY_SET_MAX_PCT: '4294967301' } });
    const plain = predict('applegpu_g13d', { env: { MLX_RESIDENCY_SET_MAX_PCT: '5' } });
    expect({ cap: p.flags.residencySetCapBytes.value, warnings: p.warnings }).toEqual({
      cap: plain.flags.residencySetCapBytes.value,
      warnings: [
        'MLX_RESIDENCY_SET_MAX_PCT="4294967301" does not fit MLX\'s int (env::get_var\'s atoi): MLX reads 5, not 4294967301',
      ],
    });
  });

  it.each(['8589934592', '3000000000'])(
    'MLX_CONV_WINOGRAD_WORKING_SET=%s reads as 0 or negative: MLX falls back to the working set',
    (text) => {
      const p = predict('applegpu_g13d', { env: { MLX_CONV_WINOGRAD_WORKING_SET: text } });
      const wss = m1.device.recommendedMaxWorkingSetSize as number;
      expect({ budget: p.flags.winogradBudgetBytes.value, warned: p.warnings.length }).toEqual({
        budget: Math.floor(wss / 4) * 3,
        warned: 1,
      });
    },
  );

  it('a number that fits is not warned', () => {
    expect(predict('applegpu_g13d', { env: { MLX_CONV_WINOGRAD_WORKING_SET: '2147483647' } }).warnings).toEqual([]);
  });
});

describe('MLX residency sets and their cap', () => {
  it('the stock guest (no Metal3): no sets, so no cap', () => {
    const p = E.predictGates(guest.device, 'mlx', { env: {}, host: guest.host });
    expect([p.flags.residencySets.value, p.flags.residencySetCapBytes.value]).toEqual([false, null]);
  });

  it('Metal3 before macOS 15: no sets, so no cap; on macOS 15 the cap', () => {
    expect([
      predict('applegpu_g13d', { osVersion: '14.6' }).flags.residencySetCapBytes.value,
      predict('applegpu_g13d', { osVersion: '15.0' }).flags.residencySetCapBytes.value,
    ]).toEqual([
      null,
      Math.max(Math.floor((m1.device.recommendedMaxWorkingSetSize as number) / 100) * 5, 64 * 1048576),
    ]);
  });

  it('an empty architecture name is undefined behaviour in every release, not generation 0', () => {
    expect(
      ['v0.30.6', 'v0.31.0', 'v0.32.2'].map((release) => predict('', { release }).flags.architectureGeneration.value),
    ).toEqual([null, null, null]);
    expect(predict('xy', { release: 'v0.31.0' }).flags.architectureGeneration.value).toBe(0);
  });
});
