// Rules as data: a release row added to the registry (llama-cpp-rule-sets.ts), here from a fixture, is mapped,
// computed and audited with no other change: the release boundaries, the rule table, the op gates and the audit's
// rule-set report are all read from the rows.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type * as RuleSets from '../../lib/engines/llama-cpp-rule-sets.js';

const MADE_UP = JSON.parse(
  readFileSync(new URL('../fixtures/engines/llama-cpp-made-up-release.json', import.meta.url), 'utf8'),
) as RuleSets.LlamaCppRuleSetInfo;

afterEach(() => {
  vi.doUnmock('../../lib/engines/llama-cpp-rule-sets.js');
  vi.resetModules();
});

async function auditWithRow(row: RuleSets.LlamaCppRuleSetInfo | null) {
  vi.resetModules();
  if (row !== null) {
    vi.doMock('../../lib/engines/llama-cpp-rule-sets.js', async (importOriginal) => {
      const original = await importOriginal<typeof RuleSets>();
      return {
        ...original,
        LLAMA_CPP_RULE_SET_REGISTRY: Object.freeze([...original.LLAMA_CPP_RULE_SET_REGISTRY, row]),
      };
    });
  }
  const { audit } = await import('../../lib/audit/audit.js');
  return audit({
    snapshot: 'vz-guest-m1-ultra-tahoe-stock',
    profile: 'host-family',
    engines: ['llama.cpp'],
    release: 'v9.1.0',
    env: { GGML_METAL_BF16_DISABLE: '1' },
  });
}

describe('a made-up release row', () => {
  it('without it, v9.1.0 is current', async () => {
    const result = await auditWithRow(null);
    expect(result.llamaCppRules.rules).toBe('current');
  });

  it('with it, audit maps v9.1.0 to the row and computes the rules the row lists', async () => {
    const result = await auditWithRow(MADE_UP);
    const device = result.devices[0]!;
    const patched = device.engines[0]!.after;
    expect({
      used: result.llamaCppRules,
      rules: patched.rules,
      flags: Object.keys(patched.flags),
      warnings: patched.warnings,
    }).toEqual({
      used: {
        rules: 'made-up-v9',
        releases: 'v9.0.0 and later (a release made up for a test)',
        release: 'v9.1.0',
        source: 'option',
        detail: 'llama.cpp v9.1.0 asked for',
      },
      rules: 'made-up-v9',
      flags: [
        'has_simdgroup_reduction',
        'has_simdgroup_mm',
        'has_bfloat',
        'has_tensor',
        'use_residency_sets',
        'use_shared_buffers',
        'gpu_family',
        'device_id',
      ],
      warnings: [
        'GGML_METAL_BF16_DISABLE is set but llama.cpp v9.0.0 and later (a release made up for a test) does not read it',
      ],
    });
  });
});

describe('the threadgroup model is a column of the row', () => {
  it('the made-up row reads the claim as its `threadgroup` says, with no code for it', async () => {
    const result = await auditWithRow({ ...MADE_UP, threadgroup: 'asserts' });
    const patched = result.devices[0]!.engines[0]!.after;
    expect(
      patched.engine === 'llama.cpp' ? [patched.threadgroup.reads, patched.threadgroup.configurations] : null,
    ).toEqual(['asserts', []]);
    const sized = await auditWithRow({ ...MADE_UP, threadgroup: 'ggml-metal-m' });
    const after = sized.devices[0]!.engines[0]!.after;
    // host-family on the stock guest claims Apple7 and leaves 32768 bytes: b4753's reads, stock size.
    expect(after.engine === 'llama.cpp' ? after.threadgroup.configurations.map((c) => c.bytes) : null).toEqual([
      27648, 27904, 28160, 28416, 28672, 30720, 12544, 20992, 32736,
    ]);
  });
});

describe('the working set llama.cpp believes it has', () => {
  // A profile that raises only the working set, audited on the stock guest: every rule set that reads it shows the
  // stock and the patched value; the ggml-metal.m rule sets before b4562 are not claimed to (no source read there).
  const raised = 16 * 1024 ** 3;
  it.each([
    ['b4562', true],
    ['b6501', true],
    ['b9333', true],
    ['v0.4.0', true],
    ['v0.5.0', true],
    ['b4561', false],
  ])('llama.cpp %s: read %s', async (release, read) => {
    vi.resetModules();
    const { audit } = await import('../../lib/audit/audit.js');
    const result = audit({
      snapshot: 'vz-guest-m1-ultra-tahoe-stock',
      profile: { recommendedMaxWorkingSetSize: raised, mode: 'raise' },
      engines: ['llama.cpp'],
      release,
      env: {},
    });
    const engine = result.devices[0]!.engines[0]!;
    const stock = result.devices[0]!.stock.recommendedMaxWorkingSetSize;
    expect(engine.flipped.filter((f) => f.flag === 'max_working_set_size')).toEqual(
      read ? [{ flag: 'max_working_set_size', from: stock, to: raised }] : [],
    );
  });
});
