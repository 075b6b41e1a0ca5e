// A bench result read back from a file (lib/bench/result.ts): what `report --bench` and `matrix` trust is checked
// field by field, and every refusal names the field and says how to make a usable result.
import { describe, expect, it } from 'vitest';
import { checkBenchResult } from '../../lib/bench/result.js';
import { InvalidReportError } from '../../lib/core/errors.js';

const WHERE = 'speed.json';
const HOW = 'make one with `metal-cap-shim bench --json`';

function refusal(value: unknown, where = WHERE): { field: string | null; message: string } {
  try {
    checkBenchResult(value, where);
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidReportError);
    const err = e as InvalidReportError;
    expect(err.code).toBe('ERR_INVALID_REPORT');
    return { field: err.field, message: err.message };
  }
  throw new Error('expected a refusal, and the result was accepted');
}
const says = (field: string, what: string, where = WHERE) => ({
  field,
  message: `${where} is not a usable bench result (${what}); ${HOW}`,
});

const speedRow = (over: Record<string, unknown> = {}) => ({
  test: 'pp512',
  build: 'b9333',
  profiles: [{ name: 'host-family', speedup: 1.5 }],
  ...over,
});
const speed = (over: Record<string, unknown> = {}) => ({
  schema: 'metal-cap-shim/bench@1',
  mode: 'speed',
  speed: [speedRow()],
  ...over,
});
const fidelityRow = (over: Record<string, unknown> = {}) => ({
  name: 'host-family',
  verdict: 'within-tolerance',
  reasons: [],
  meanKld: 0.0001,
  sameTopP: 99.9,
  pplRatio: 1.0001,
  ...over,
});
const fidelity = (over: Record<string, unknown> = {}) => ({
  schema: 'metal-cap-shim/bench@1',
  mode: 'fidelity',
  fidelity: [fidelityRow()],
  ...over,
});

describe('a usable result is returned as it is', () => {
  it('speed, node-llama-cpp (with and without its greedy comparison) and fidelity', () => {
    const results = [
      speed(),
      speed({ speed: [speedRow({ build: null }), speedRow({ test: 'tg128', profiles: [] })] }),
      speed({ speed: [] }),
      speed({ mode: 'node-llama-cpp', greedy: null }),
      speed({
        mode: 'node-llama-cpp',
        greedy: {
          stock: [1, 2, 3],
          profiles: [
            { name: 'host-family', divergence: null },
            { name: 'cua-release', divergence: { index: 2 } },
          ],
        },
      }),
      fidelity(),
      fidelity({ fidelity: [fidelityRow({ verdict: 'differs', meanKld: 0.5, sameTopP: 80 })] }),
      fidelity({ fidelity: [] }),
    ];
    for (const r of results) expect(checkBenchResult(r, WHERE)).toBe(r);
  });
});

describe('what is refused, naming the field', () => {
  it('not an object, or not a bench result', () => {
    for (const value of [null, [], 'text', 3]) expect(refusal(value)).toEqual(says('(root)', 'not a JSON object'));
    expect(refusal({ mode: 'speed' })).toEqual(
      says('schema', 'it has no "schema" field; expected metal-cap-shim/bench@1 (metal-cap-shim bench --json)'),
    );
    expect(refusal(speed({ schema: 'metal-cap-shim/report@1' }))).toEqual(
      says(
        'schema',
        'it has schema "metal-cap-shim/report@1"; expected metal-cap-shim/bench@1 (metal-cap-shim bench --json)',
      ),
    );
    for (const mode of [undefined, 'Speed', 'perplexity'])
      expect(refusal(speed({ mode }))).toEqual(says('mode', "mode must be 'speed', 'fidelity' or 'node-llama-cpp'"));
  });

  it('the file is named as given, and clipped when long', () => {
    const long = `${'x'.repeat(300)}.json`;
    const { message } = refusal(null, long);
    expect(message.startsWith(`${'x'.repeat(200)}… (305 characters) is not a usable bench result`)).toBe(true);
  });

  it('speed rows: an array of rows, each naming its test, a build of text or null, profiles with a speed-up above 0', () => {
    for (const mode of ['speed', 'node-llama-cpp']) {
      expect(refusal(speed({ mode, speed: undefined }))).toEqual(says('speed', 'speed must be an array'));
      expect(refusal(speed({ mode, speed: { 0: speedRow() } }))).toEqual(says('speed', 'speed must be an array'));
    }
    for (const row of [null, 'pp512', speedRow({ test: undefined }), speedRow({ test: 512 })])
      expect(refusal(speed({ speed: [speedRow(), row] }))).toEqual(says('speed[1]', 'speed[1] must name its test'));
    for (const build of [undefined, 9333, false])
      expect(refusal(speed({ speed: [speedRow({ build })] }))).toEqual(
        says('speed[0].build', 'speed[0].build must be text or null'),
      );
    for (const profiles of [undefined, null, { name: 'host' }])
      expect(refusal(speed({ speed: [speedRow({ profiles })] }))).toEqual(
        says('speed[0].profiles', 'speed[0].profiles must be an array'),
      );
    const bad = [
      null,
      { speedup: 1.5 },
      { name: 7, speedup: 1.5 },
      { name: 'host' },
      { name: 'host', speedup: '1.5' },
      { name: 'host', speedup: 0 },
      { name: 'host', speedup: -1 },
      { name: 'host', speedup: Number.POSITIVE_INFINITY },
      { name: 'host', speedup: Number.NaN },
    ];
    for (const p of bad)
      expect(refusal(speed({ speed: [speedRow({ profiles: [{ name: 'a', speedup: 1 }, p] })] }))).toEqual(
        says('speed[0].profiles[1]', 'speed[0].profiles[1] must have a name and a speed-up above 0'),
      );
    // Any speed-up above 0 is accepted, however small.
    const tiny = speed({ speed: [speedRow({ profiles: [{ name: 'a', speedup: Number.MIN_VALUE }] })] });
    expect(checkBenchResult(tiny, WHERE)).toBe(tiny);
  });

  it('greedy: the stock tokens and the profiles, each with a name and a divergence or null', () => {
    const nlc = (greedy: unknown) => speed({ mode: 'node-llama-cpp', greedy });
    for (const greedy of ['x', [], { stock: [] }, { profiles: [] }, { stock: 'abc', profiles: [] }])
      expect(refusal(nlc(greedy))).toEqual(says('greedy', 'greedy must have the stock tokens and the profiles'));
    for (const p of [null, { divergence: null }, { name: 1, divergence: null }, { name: 'a', divergence: 3 }])
      expect(refusal(nlc({ stock: [], profiles: [{ name: 'ok', divergence: null }, p] }))).toEqual(
        says('greedy.profiles[1]', 'greedy.profiles[1] must have a name and a divergence (or null)'),
      );
    // A profile with no divergence says so with null: a missing field is refused, since undefined is not null.
    expect(refusal(nlc({ stock: [], profiles: [{ name: 'a' }] }))).toEqual(
      says('greedy.profiles[0]', 'greedy.profiles[0] must have a name and a divergence (or null)'),
    );
  });

  it('fidelity rows: an array, each with a name, a verdict with its reasons, and finite meanKld, sameTopP and pplRatio', () => {
    for (const value of [undefined, {}, 'x'])
      expect(refusal(fidelity({ fidelity: value }))).toEqual(says('fidelity', 'fidelity must be an array'));
    const bad = [
      null,
      fidelityRow({ name: undefined }),
      fidelityRow({ verdict: 'same' }),
      fidelityRow({ verdict: undefined }),
      fidelityRow({ meanKld: '0.1' }),
      fidelityRow({ meanKld: Number.NaN }),
      fidelityRow({ sameTopP: undefined }),
      fidelityRow({ sameTopP: Number.NEGATIVE_INFINITY }),
      fidelityRow({ reasons: undefined }),
      fidelityRow({ reasons: 'none' }),
      fidelityRow({ pplRatio: undefined }),
      fidelityRow({ pplRatio: Number.NaN }),
    ];
    for (const row of bad)
      expect(refusal(fidelity({ fidelity: [fidelityRow(), row] }))).toEqual(
        says('fidelity[1]', 'fidelity[1] must have a name, a verdict with its reasons, meanKld, sameTopP and pplRatio'),
      );
    // A speed result's fields are not asked of a fidelity result, and the other way round.
    const f = fidelity({ speed: 'not read' });
    expect(checkBenchResult(f, WHERE)).toBe(f);
    const s = speed({ fidelity: 'not read' });
    expect(checkBenchResult(s, WHERE)).toBe(s);
  });
});

describe('the statistics of a fidelity row and the control', () => {
  const full = {
    medianKld: 0.0002,
    kld99: 0.004,
    kld999: null,
    maxKld: 0.09,
    rmsDp: 0.5,
    uncertainty: { meanKld: 0.00001, sameTopP: null, pplRatio: 0.0004, rmsDp: 0.01 },
  };

  it('each ±, percentile and RMS Δp is a number or null; a row written before them has none', () => {
    const r = fidelity({ fidelity: [fidelityRow(full)], control: fidelityRow({ ...full, name: 'stock (control)' }) });
    expect(checkBenchResult(r, WHERE)).toBe(r);
    const older = fidelity({ control: null });
    expect(checkBenchResult(older, WHERE)).toBe(older);
    for (const over of [
      { medianKld: '0' },
      { kld999: Number.POSITIVE_INFINITY },
      { rmsDp: {} },
      { uncertainty: 'small' },
      { uncertainty: { meanKld: '±' } },
      { uncertainty: null },
    ])
      expect(refusal(fidelity({ fidelity: [fidelityRow({ ...full, ...over })] }))).toEqual(
        says('fidelity[0]', "fidelity[0]'s statistics and their ± must be numbers or null"),
      );
  });

  it('the control row is checked as a profile row is', () => {
    expect(refusal(fidelity({ control: fidelityRow({ verdict: 'maybe' }) }))).toEqual(
      says('control', 'control must have a name, a verdict with its reasons, meanKld, sameTopP and pplRatio'),
    );
    expect(refusal(fidelity({ control: 'stock' }))).toEqual(
      says('control', 'control must have a name, a verdict with its reasons, meanKld, sameTopP and pplRatio'),
    );
    expect(refusal(fidelity({ control: fidelityRow({ uncertainty: { rmsDp: Number.NaN } }) }))).toEqual(
      says('control', "control's statistics and their ± must be numbers or null"),
    );
  });
});
