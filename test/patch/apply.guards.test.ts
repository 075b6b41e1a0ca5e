// Guards and warnings, over the simulated bare-metal M1 Ultra (not a VM).
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = 'm1-ultra-bare-metal';

import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { restore, status } from '../../lib/patch/apply.js';
import { applyProfile } from '../../lib/select/auto.js';
import { RefusedError } from '../../lib/core/errors.js';
import { resolveProfile } from '../../lib/patch/profiles.js';
import { describeSim, loadLibrary, requireSimBuild } from '../support/helpers.js';

describeSim('guards on a host that is not a VM', () => {
  beforeAll(requireSimBuild);
  afterEach(() => {
    restore();
  });

  it('raising is refused without force: a result with reason refused-bare-metal, and nothing is installed', () => {
    const result = applyProfile('cua-release');
    expect(result).toEqual({
      applied: false,
      reason: 'refused-bare-metal',
      detail: expect.stringContaining('Pass { force: true }'),
      profile: resolveProfile('cua-release'),
      patchedClasses: [],
      before: null,
      after: null,
      changed: [],
      warnings: [],
      verification: null,
    });
    expect(status()).toMatchObject({ active: false, hooks: [] });
  });

  it('with strict: true the refusal throws RefusedError (ERR_REFUSED_BARE_METAL), and nothing is installed', () => {
    let thrown: unknown;
    try {
      applyProfile('cua-release', { strict: true });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(RefusedError);
    expect((thrown as RefusedError).code).toBe('ERR_REFUSED_BARE_METAL');
    expect((thrown as Error).message).toContain('force');
    expect(status()).toMatchObject({ active: false, hooks: [] });
  });

  it('raising is allowed with force', () => {
    const result = applyProfile('cua-release', { force: true });
    expect(result.applied).toBe(true);
    expect(result.after!.devices[0]!.families.apple9).toBe(true);
    expect(result.warnings.map((w) => w.code)).toEqual(
      expect.arrayContaining(['not-paravirtual', 'threadgroup-memory-above-hardware']),
    );
  });

  it('masking (mask-apple5) is allowed without force and reports a stock guest’s answers', () => {
    const result = applyProfile('mask-apple5');
    expect(result.applied).toBe(true);
    const d = result.after!.devices[0]!;
    expect(d.highestAppleFamily?.name).toBe('apple5');
    expect([d.families.apple6, d.families.apple7, d.families.mac2, d.families.metal3]).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(d.families.common3).toBe(true);
    expect(d.maxThreadgroupMemoryLength).toBe(32768);
    expect(d.simd.reduction.value).toBe(false);
  });

  it('warns once when a Metal consumer (ggml-metal) is already loaded RTLD_GLOBAL: its image, not also its symbol', () => {
    // The M1 Ultra already answers Apple7.
    const noChange = { code: 'no-change', message: 'the profile changes no answer on this device' };
    expect(applyProfile('apple7', { force: true }).warnings).toEqual([noChange]);
    restore();
    // RTLD_GLOBAL puts ggml_backend_metal_reg in the global scope too: the image's name already says it.
    const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-guards-')));
    const file = loadLibrary(dir, 'libggml-metal.so', ['ggml_backend_metal_reg', 'ggml_backend_metal_init'], true);
    expect(applyProfile('apple7', { force: true }).warnings).toEqual([
      {
        code: 'consumer-already-loaded',
        message: `libggml-metal.so (${file}) is already loaded in this process: if that engine has initialised Metal, it cached the old answers; apply before the first getLlama() / backend load`,
      },
      noChange,
    ]);
  });

  it('raising only threadgroup memory is a raise too: refused without force', () => {
    expect(applyProfile({ maxThreadgroupMemoryLength: 65536 })).toMatchObject({
      applied: false,
      reason: 'refused-bare-metal',
    });
    expect(() => applyProfile({ maxThreadgroupMemoryLength: 65536 }, { strict: true })).toThrow(RefusedError);
    expect(status().active).toBe(false);
  });

  it('raise mode never lowers an answer: a ceiling below the device keeps its higher families', () => {
    // Nothing is raised here, so no force is needed; the M1 Ultra stays Apple7.
    const result = applyProfile({ appleFamilyMax: 1005 });
    expect(result.applied).toBe(true);
    expect(result.after!.devices[0]!.families.apple7).toBe(true);
    expect(result.after!.devices[0]!.families.apple6).toBe(true);
    expect(result.warnings.map((w) => w.code)).toContain('no-change');
    expect(result.changed).toEqual([]);
  });

  it('exact mode with the same ceiling masks them', () => {
    const result = applyProfile({ appleFamilyMax: 1005, mode: 'exact' });
    expect(result.applied).toBe(true);
    expect(result.after!.devices[0]!.families.apple6).toBe(false);
    expect(result.after!.devices[0]!.families.apple5).toBe(true);
    expect(result.changed.map((c) => c.field)).toEqual(['families.apple6', 'families.apple7']);
  });
});
