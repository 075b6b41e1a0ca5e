// A bench result read back from a file (lib/bench/result.ts): every field `report --bench`, the formatter and
// `matrix` read is checked, each refusal names the field and says how to make a usable result, the speed-ups and
// verdicts are computed again from what they claim to come from, and a result that is no comparison is refused.
import { describe, expect, it } from 'vitest';
import { checkBenchResult } from '../../lib/bench/result.js';
import { pairedSpeedup } from '../../lib/bench/stats.js';
import { InvalidReportError } from '../../lib/core/errors.js';
import { benchResult } from '../support/bench-result.js';

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
  message: `${where} is not a usable bench result (${field} ${what}); ${HOW}`,
});

const speed = () => benchResult();
/** A fidelity result. */
function fidelity(): Record<string, any> {
  return {
    ...speed(),
    mode: 'fidelity',
    speed: null,
    fidelity: [fidelityRow('host-family')],
  };
}
/** A fidelity row as llama-perplexity's statistics section gives it, every statistic with its ± where it has one. */
function fidelityRow(name: string): Record<string, any> {
  return {
    meanKld: 0.0001,
    medianKld: 0.00005,
    kld99: 0.001,
    kld999: 0.002,
    maxKld: 0.01,
    sameTopP: 99.9,
    pplRatio: 1.0001,
    rmsDp: 0.5,
    uncertainty: { meanKld: 0.00001, sameTopP: null, pplRatio: 0.0004, rmsDp: 0.01 },
    chunks: 4,
    from: 'statistics',
    name,
    verdict: 'within-tolerance',
    reasons: [],
  };
}
/** A node-llama-cpp result with its greedy comparison. */
function greedy(): Record<string, any> {
  const step = { token: 5, text: ' a', probability: 0.5, runnerUp: { token: 6, text: ' b', probability: 0.25 } };
  return {
    ...speed(),
    mode: 'node-llama-cpp',
    greedy: {
      prompt: 'Once',
      stock: [step],
      profiles: [
        { name: 'host-family', tokens: 1, divergence: { index: 0, stock: step, patched: { ...step, runnerUp: null } } },
      ],
    },
  };
}

describe('a usable result is read, its derived numbers computed again', () => {
  it('speed, fidelity and node-llama-cpp results read back as written when their numbers agree', () => {
    for (const r of [speed(), fidelity(), greedy()]) expect(checkBenchResult(r, WHERE)).toEqual(r);
    const partial = { ...speed(), partial: true, stop: { reason: 'interrupted', detail: 'SIGINT', signal: 'SIGINT' } };
    expect(checkBenchResult(partial, WHERE)).toEqual(partial);
  });

  it('a speed-up, interval or verdict that does not follow from its ratios is replaced by what does', () => {
    const edited = speed();
    edited.speed[0].profiles[0].speedup = { centre: 9, low: 8, high: 10, rounds: 2, verdict: 'faster' };
    edited.speed[0].profiles[0].ratios = [1.2, 1.3];
    expect(checkBenchResult(edited, WHERE).speed![0]!.profiles[0]!.speedup).toEqual(pairedSpeedup([1.2, 1.3]));
  });

  it('a fidelity verdict that does not follow from its numbers is replaced by the tolerance’s', () => {
    const edited = fidelity();
    edited.fidelity[0].meanKld = 0.5;
    const read = checkBenchResult(edited, WHERE).fidelity![0]!;
    expect([read.verdict, read.reasons]).toEqual(['differs', ['mean KLD 0.5 is above 0.001']]);
  });

  it('what it reads is a copy: a getter is called once, and changing the input later changes nothing', () => {
    let calls = 0;
    const input = speed();
    Object.defineProperty(input, 'rounds', {
      enumerable: true,
      get: () => {
        calls++;
        return calls === 1 ? 2 : -5;
      },
    });
    const read = checkBenchResult(input, WHERE);
    input.speed[0].label = 'changed';
    expect([read.rounds, read.speed![0]!.label, calls]).toEqual([2, 'pp512', 1]);
  });
});

describe('a result that is not what it says is refused', () => {
  it('a patched side that was not patched: no comparison, whatever else it holds', () => {
    const r = speed();
    r.validity = { valid: false, reason: 'host-family, round 1: the shim did not load', affected: true, backends: [] };
    expect(refusal(r)).toEqual(
      says(
        'validity',
        'is not a comparison: a patched side was not patched (host-family, round 1: the shim did not load)',
      ),
    );
  });

  it('partial must agree with how the measuring stopped, both ways', () => {
    expect(refusal({ ...speed(), partial: true })).toEqual(
      says('partial', "must be false when the measuring stopped for 'rounds'"),
    );
    const stopped = { ...speed(), stop: { reason: 'failed', detail: 'x', signal: null } };
    expect(refusal(stopped)).toEqual(says('partial', "must be true when the measuring stopped for 'failed'"));
  });

  it('speed rows and fidelity rows belong to their modes', () => {
    expect(refusal({ ...speed(), speed: null })).toEqual(says('speed', 'must be an array in mode speed'));
    expect(refusal({ ...fidelity(), speed: [] })).toEqual(says('speed', 'must be null in mode fidelity'));
    expect(refusal({ ...speed(), fidelity: [] })).toEqual(says('fidelity', 'must be null in mode speed'));
  });
});

describe('each field is checked, named, with what it must be', () => {
  const cases: [string, (r: Record<string, any>) => void, string, string][] = [
    ['schema', (r) => (r.schema = 'metal-cap-shim/bench@1'), 'schema', ''],
    [
      'mode',
      (r) => (r.mode = 'fast'),
      'mode',
      "must be one of 'speed', 'fidelity', 'node-llama-cpp', got the string \"fast\"",
    ],
    ['command', (r) => (r.command = [1]), 'command[0]', 'must be a string, got number 1'],
    ['rounds', (r) => (r.rounds = -1), 'rounds', 'must be a whole number ≥ 0, got number -1'],
    [
      'provenance',
      (r) => (r.provenance = 'hearsay'),
      'provenance',
      "must be one of 'measured', 'simulated', got the string \"hearsay\"",
    ],
    [
      'confidence',
      (r) => (r.interval.confidence = 0),
      'interval.confidence',
      'must be a finite number above 0 and at most 1, got number 0',
    ],
    [
      'a run',
      (r) => (r.runs[1].injectorLoaded = 'yes'),
      'runs[1].injectorLoaded',
      'must be true or false, got the string "yes"',
    ],
    [
      'a ratio',
      (r) => (r.speed[0].profiles[0].ratios = [0]),
      'speed[0].profiles[0].ratios[0]',
      'must be a finite number above 0, got number 0',
    ],
    [
      't/s',
      (r) => (r.speed[0].stock.ts = -1),
      'speed[0].stock.ts',
      'must be a finite number at least 0, got number -1',
    ],
    [
      'rounds per sample',
      (r) => (r.speed[0].stock.rounds = [1]),
      'speed[0].stock.rounds',
      'must name one round per sample (2)',
    ],
    ['a label', (r) => (r.speed[0].label = null), 'speed[0].label', 'must be a string, got null'],
    ['a key', (r) => (r.speed[0].key = 'pp512'), 'speed[0].key', 'must be an object, got the string "pp512"'],
    [
      'a warning',
      (r) => (r.profiles[0].warnings = [{}]),
      'profiles[0].warnings[0].message',
      'must be a string, got undefined',
    ],
    [
      'stop',
      (r) => (r.stop.signal = 'SIGKILL'),
      'stop.signal',
      "must be one of 'SIGINT', 'SIGTERM', 'SIGHUP', got the string \"SIGKILL\"",
    ],
    [
      'failure',
      (r) => (r.failure = { side: 's', round: 1, exitCode: 1, signal: null, code: 'X', message: 'm' }),
      'failure.code',
      "must be one of 'ERR_BENCH_TOOL', 'ERR_BENCH_OUTPUT', 'ERR_BENCH_NOT_PATCHED', got the string \"X\"",
    ],
    ['host', (r) => (r.host.cpuBrand = 7), 'host.cpuBrand', 'must be a string, got number 7'],
  ];
  it.each(cases)('%s', (_, edit, field, what) => {
    const r = speed();
    edit(r);
    const got = refusal(r);
    if (field === 'schema')
      expect([got.field, got.message.startsWith(`${WHERE} is not a usable bench result (schema `)]).toEqual([
        'schema',
        true,
      ]);
    else expect(got).toEqual(says(field, what));
  });

  it('fidelity: KLD at least 0, same top token from 0 to 100 %, a PPL ratio above 0', () => {
    const edit = (f: (row: Record<string, any>) => void) => {
      const r = fidelity();
      f(r.fidelity[0]);
      return refusal(r);
    };
    expect(edit((x) => (x.meanKld = -0.1))).toEqual(
      says('fidelity[0].meanKld', `must be a finite number at least ${-16 / 65535}, got number -0.1`),
    );
    expect(edit((x) => (x.sameTopP = 100.5))).toEqual(
      says('fidelity[0].sameTopP', 'must be a finite number at least 0 and at most 100, got number 100.5'),
    );
    expect(edit((x) => (x.sameTopP = -1))).toEqual(
      says('fidelity[0].sameTopP', 'must be a finite number at least 0 and at most 100, got number -1'),
    );
    expect(edit((x) => (x.pplRatio = 0))).toEqual(
      says('fidelity[0].pplRatio', 'must be a finite number above 0, got number 0'),
    );
    // The bounds themselves are accepted.
    const edge = fidelity();
    Object.assign(edge.fidelity[0], { meanKld: 0, sameTopP: 100 });
    expect(checkBenchResult(edge, WHERE).fidelity![0]!.sameTopP).toBe(100);
  });

  it('fidelity: each ± and percentile a number or null, the control row checked as a profile row is', () => {
    const withControl: Record<string, any> = { ...fidelity(), control: fidelityRow('stock (control)') };
    expect(checkBenchResult(withControl, WHERE)).toEqual(withControl);
    const edit = (f: (r: Record<string, any>) => void) => {
      const r = withControl;
      const copy = structuredClone(r);
      f(copy);
      return refusal(copy);
    };
    expect(edit((r) => (r.fidelity[0].uncertainty.meanKld = '±'))).toEqual(
      says('fidelity[0].uncertainty.meanKld', 'must be a finite number at least 0, got the string "±"'),
    );
    expect(edit((r) => (r.fidelity[0].kld999 = Number.POSITIVE_INFINITY))).toEqual(
      says('fidelity[0].kld999', `must be a finite number at least ${-16 / 65535}, got number Infinity`),
    );
    // A verdict written in is not read: the control's is computed from its numbers, as a profile's is.
    const verdict = structuredClone(withControl);
    verdict.control.verdict = 'maybe';
    expect((checkBenchResult(verdict, WHERE) as { control: { verdict: string } }).control.verdict).toBe(
      'within-tolerance',
    );
    expect(edit((r) => (r.control.sameTopP = 101))).toEqual(
      says('control.sameTopP', 'must be a finite number at least 0 and at most 100, got number 101'),
    );
    // A KL divergence a hair below 0 is the tool's own rounding of the saved logits; a full step below is not.
    const rounding = structuredClone(withControl);
    rounding.fidelity[0].medianKld = -0.000002;
    expect(checkBenchResult(rounding, WHERE).fidelity![0]!.medianKld).toBe(-0.000002);
    expect(edit((r) => (r.fidelity[0].medianKld = -0.001)).field).toBe('fidelity[0].medianKld');
  });

  it('greedy: each step a token, its text and a probability from 0 to 1', () => {
    const r = greedy();
    r.greedy.stock[0].probability = 1.5;
    expect(refusal(r)).toEqual(
      says('greedy.stock[0].probability', 'must be a finite number at least 0 and at most 1, got number 1.5'),
    );
    const t = greedy();
    t.greedy.profiles[0].divergence.patched.token = { id: 1 };
    expect(refusal(t)).toEqual(
      says('greedy.profiles[0].divergence.patched.token', 'must be a whole number ≥ 0, got an object'),
    );
  });

  it('not an object, or nested past what any result needs', () => {
    expect(refusal([])).toEqual({
      field: '(root)',
      message: `${WHERE} is not a usable bench result (it must be an object, got an array); ${HOW}`,
    });
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = [deep];
    const r = speed();
    r.records = [{ round: 1, side: 'stock', records: [deep] }];
    const got = refusal(r);
    expect([
      got.field!.startsWith('records[0].records[0][0]'),
      got.message.includes('is nested more than 64 levels deep'),
    ]).toEqual([true, true]);
  });
});

describe('hostile values of every JSON type at every path: a typed refusal or a correct result, never anything else', () => {
  /** Every path to a value in `v`, as a list of keys. */
  function paths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
    if (v === null || typeof v !== 'object') return [at];
    const entries = Array.isArray(v) ? v.map((x, i) => [i, x] as const) : Object.entries(v);
    return [at, ...entries.flatMap(([k, x]) => paths(x, [...at, k]))];
  }
  const HOSTILE: unknown[] = [
    null,
    true,
    0,
    -1,
    1e308,
    Number.NaN,
    '',
    'x',
    [],
    {},
    [[[]]],
    { __proto__: null, constructor: 1 },
  ];

  it.each([
    ['speed', speed],
    ['fidelity', fidelity],
    ['greedy', greedy],
  ] as const)('%s', (_, make) => {
    let refused = 0;
    let read = 0;
    for (const p of paths(make()).filter((x) => x.length > 0)) {
      for (const value of HOSTILE) {
        const r = make();
        let target: any = r;
        for (const k of p.slice(0, -1)) target = target[k];
        target[p.at(-1)!] = value;
        try {
          const result = checkBenchResult(r, WHERE);
          // Accepted: what the formatters read is what its checks promise.
          expect(result.runs.every((x) => typeof x.side === 'string')).toBe(true);
          read++;
        } catch (e) {
          expect(e).toBeInstanceOf(InvalidReportError);
          refused++;
        }
      }
    }
    expect([refused > 100, read > 0]).toEqual([true, true]);
  });
});
