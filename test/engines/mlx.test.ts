// MLX's rule table (lib/engines/mlx.ts), as `metal-cap-shim/tables` hands it out: each rule lists exactly the
// device answers, host facts and environment variables its computation reads, and says where MLX computes it.
// lib/engines/ is imported afresh before each test, so the table is built inside the test that reads it (as in
// test/engines/llama-cpp.test.ts); imported once at the top, its mutants could only be left out as static.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type {
  MLX_RULES as MlxRules,
  parseMacos as ParseMacos,
  predictGates as PredictGates,
} from '../../lib/engines/index.js';
import { FAMILY_NAMES } from '../../lib/core/families.js';
import { listSnapshots, loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';
import type { DeviceReport, HostInfo } from '../../lib/device/types.js';

let MLX_RULES: typeof MlxRules;
let predictGates: typeof PredictGates;
let parseMacos: typeof ParseMacos;
beforeEach(async () => {
  vi.resetModules();
  ({ MLX_RULES, predictGates, parseMacos } = await import('../../lib/engines/index.js'));
});

type Env = Record<string, string | undefined>;
interface Case {
  device: DeviceReport;
  host: HostInfo;
  env: Env;
}

// Every recorded device with its host, under no MLX variable, an empty one and a set one.
const recorded = listSnapshots().flatMap((name) => {
  const report = reportFromSnapshot(loadSnapshot(name), { allDevices: true });
  return report.devices.map((device) => ({ device, host: report.host! }));
});
const ENVS: Env[] = [{}, { MLX_METAL_GPU_ARCH: '' }, { MLX_METAL_GPU_ARCH: 'applegpu_g15s' }];
const cases: Case[] = recorded.flatMap((r) => ENVS.map((env) => ({ ...r, env })));

// The variables a rule could read: MLX's documented ones and llama.cpp's switches (which no MLX rule reads).
const CANDIDATE_ENV = [
  'MLX_METAL_GPU_ARCH',
  'MLX_METAL_DEBUG',
  'MLX_MAX_OPS_PER_BUFFER',
  'MLX_MAX_MB_PER_BUFFER',
  'GGML_METAL_NO_RESIDENCY',
  'GGML_METAL_BF16_DISABLE',
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

/** What one rule computes for a case; a throw counts as an outcome too. */
function outcome(rule: (typeof MlxRules)[number], c: Case): string {
  try {
    return JSON.stringify(rule.compute({ device: c.device, host: c.host, env: c.env, macos: parseMacos(c.host) }));
  } catch (err) {
    return `threw ${String(err)}`;
  }
}

/** The inputs whose change changes what `rule` computes in at least one case, named as the table names them. */
function reads(rule: (typeof MlxRules)[number]): { families: string[]; properties: string[]; env: string[] } {
  const families = new Set<string>();
  const properties = new Set<string>();
  const env = new Set<string>();
  for (const c of cases) {
    const base = outcome(rule, c);
    const differs = (changed: Case) => outcome(rule, changed) !== base;
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
      for (const v of [undefined, '', '1', 'applegpu_g14d'].filter((x) => x !== c.env[name])) {
        if (differs({ ...c, env: { ...c.env, [name]: v } })) env.add(name);
      }
    }
  }
  return { families: [...families], properties: [...properties], env: [...env] };
}

describe("MLX's rule table", () => {
  it('each rule lists exactly the families, properties and variables its computation reads', () => {
    const sorted = (r: { families: readonly string[]; properties: readonly string[]; env: readonly string[] }) => ({
      families: [...r.families].sort(),
      properties: [...r.properties].sort(),
      env: [...r.env].sort(),
    });
    expect(Object.fromEntries(MLX_RULES.map((rule) => [rule.flag, sorted(reads(rule))]))).toEqual(
      Object.fromEntries(MLX_RULES.map((rule) => [rule.flag, sorted(rule)])),
    );
  });

  it('each rule names the MLX source file and function that computes it, and its rule in words', () => {
    expect(MLX_RULES.map((r) => ({ flag: r.flag, source: r.source, rule: r.rule }))).toMatchSnapshot();
    for (const r of MLX_RULES) expect(r.source).toMatch(/^mlx\/backend\/metal\/\w+\.cpp \w+::\w+/);
  });
});

describe("MLX's allocator limit with a RAM size that is no byte count", () => {
  const device = { ...recorded[0]!.device, recommendedMaxWorkingSetSize: 1048576 };
  const LEFT_OUT =
    'recommendedMaxWorkingSetSize=1048576 (1.00 MiB), 0.95 × that = 996147, 1.5 × that = 1572864, hw.memsize unknown: the 0.95 × RAM bound is left out, so the real limit may be lower, gc limit = 996147';

  it.each<[string, unknown]>([
    ['infinite', Number.POSITIVE_INFINITY],
    ['a number in a string', '68719476736'],
    ['negative', -68719476736],
  ])('is left out when RAM is %s', (_what, memoryBytes) => {
    const host = { ...recorded[0]!.host, memoryBytes } as unknown as HostInfo;
    expect(predictGates(device, 'mlx', { env: {}, host }).allocatorLimitBytes).toEqual({
      value: 996147,
      reason: LEFT_OUT,
    });
  });
});
