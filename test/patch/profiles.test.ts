import { describe, expect, it } from 'vitest';
import type { InvalidProfileError } from '../../lib/core/errors.js';
import { chipFromBrand } from '../../lib/device/chips.js';
import {
  bindToHost,
  diffAnswers,
  encodeNativeProfile,
  familyAnswer,
  familyCeiling,
  isRaise,
  needsHost,
  offeredMlxArchitecture,
  patchedName,
  planProfile,
  predictPatchedDevice,
  profiles,
  resolveProfile,
  type Profile,
} from '../../lib/patch/profiles.js';
import type { HostInfo } from '../../lib/device/types.js';
import { loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';

describe('profile answers (the TypeScript prediction the native engine is checked against)', () => {
  const raise = resolveProfile({ appleFamilyMax: 1005 });
  const exact = resolveProfile({ appleFamilyMax: 1005, mode: 'exact' });

  it('raise: stock OR within the ceiling', () => {
    expect(familyAnswer(raise, 1007, true)).toBe(true);
    expect(familyAnswer(raise, 1007, false)).toBe(false);
    expect(familyAnswer(raise, 1003, false)).toBe(true);
  });

  it('exact: within the ceiling, whatever the stock answer', () => {
    expect(familyAnswer(exact, 1007, true)).toBe(false);
    expect(familyAnswer(exact, 1003, false)).toBe(true);
    expect(familyAnswer(exact, 1015, true)).toBe(false);
  });

  it('non-Apple and unknown families keep their answers unless named', () => {
    expect(familyAnswer(exact, 5001, true)).toBe(true);
    expect(familyAnswer(exact, 9999, true)).toBe(true);
    expect(familyAnswer(resolveProfile({ families: { metal3: false } }), 5001, true)).toBe(false);
  });

  it('sizes: raise takes the larger, exact sets', () => {
    const device = reportFromSnapshot(loadSnapshot('macbookpro16-intel-amd-two-gpus')).devices[0]!;
    expect(device.maxThreadgroupMemoryLength).toBe(65536);
    expect(
      predictPatchedDevice(device, resolveProfile({ maxThreadgroupMemoryLength: 32768 })).maxThreadgroupMemoryLength,
    ).toBe(65536);
    expect(
      predictPatchedDevice(device, resolveProfile({ maxThreadgroupMemoryLength: 32768, mode: 'exact' }))
        .maxThreadgroupMemoryLength,
    ).toBe(32768);
  });
});

describe('built-in profiles', () => {
  it('cannot be changed by a caller', () => {
    const families = profiles['cua-release']!.profile.families as Record<string, boolean>;
    expect(() => {
      families.metal3 = true;
    }).toThrow(TypeError);
    expect(resolveProfile('cua-release').families).toEqual({});
  });

  it('a resolved profile keeps a built-in name only if its values are still the built-in’s', () => {
    const same = resolveProfile({ ...resolveProfile('apple7') });
    expect(same.name).toBe('apple7');
    const changed = resolveProfile({ ...resolveProfile('apple7'), appleFamilyMax: 1010 });
    expect(changed.name).toBeNull();
  });

  it('the native text of the default profile', () => {
    expect(encodeNativeProfile(resolveProfile('cua-release'), false)).toBe(
      'mcs1;max=1009;tg=65536;wss=-;mode=raise;trace=0;fam=;name=-',
    );
  });
});

/** The error a call throws, as a plain record of what a caller can see. */
function thrown(fn: () => unknown): { name: string; code: string; field: string | null; message: string } {
  try {
    fn();
  } catch (e) {
    const err = e as InvalidProfileError;
    return { name: err.constructor.name, code: err.code, field: err.field, message: err.message };
  }
  throw new Error('expected a throw');
}

const invalid = (field: string | null, message: string) => ({
  name: 'InvalidProfileError',
  code: 'ERR_INVALID_PROFILE',
  field,
  message,
});
const NOT_A_PROFILE = 'a profile must be a built-in name, a JSON object string, or an object';
const APPLE_RANGE = (got: string) =>
  `appleFamilyMax must be an MTLGPUFamily value from 1001 (Apple1) to 1010 (Apple10), or "host" (the host chip's true family), got ${got}`;
const TG_RANGE = (got: string) =>
  `maxThreadgroupMemoryLength must be a byte count from 1024 to 1048576, a multiple of 16 (e.g. 32768 or 65536), got ${got}`;
const WSS_RANGE = (got: string) =>
  `recommendedMaxWorkingSetSize must be a whole number of bytes from 67108864 (64 MiB) up, got ${got}`;

describe('resolveProfile: what it accepts, as a whole value', () => {
  it('a full spec, with families stored in MTLGPUFamily order whatever order they came in', () => {
    const spec = {
      mode: 'exact',
      families: { metal3: false, apple7: true, common1: false },
      recommendedMaxWorkingSetSize: 17179869184,
      maxThreadgroupMemoryLength: 32768,
      appleFamilyMax: 1007,
    };
    const resolved = resolveProfile(spec);
    expect(resolved).toEqual({
      name: null,
      appleFamilyMax: 1007,
      maxThreadgroupMemoryLength: 32768,
      recommendedMaxWorkingSetSize: 17179869184,
      deviceName: null,
      families: { apple7: true, common1: false, metal3: false },
      mode: 'exact',
    });
    expect(Object.keys(resolved.families)).toEqual(['apple7', 'common1', 'metal3']);
  });

  it('an empty spec leaves every answer alone and raises', () => {
    expect(resolveProfile({})).toEqual({
      name: null,
      appleFamilyMax: null,
      maxThreadgroupMemoryLength: null,
      recommendedMaxWorkingSetSize: null,
      deviceName: null,
      families: {},
      mode: 'raise',
    });
  });

  it('a built-in name, also with surrounding blanks, gives a copy the caller may change', () => {
    const a = resolveProfile(' mask-apple5 ');
    expect(a).toEqual({
      name: 'mask-apple5',
      appleFamilyMax: 1005,
      maxThreadgroupMemoryLength: 32768,
      recommendedMaxWorkingSetSize: null,
      deviceName: null,
      families: { mac1: false, mac2: false, macCatalyst1: false, macCatalyst2: false, metal3: false, metal4: false },
      mode: 'exact',
    });
    a.families.metal3 = true;
    expect(resolveProfile('mask-apple5').families.metal3).toBe(false);
    expect(resolveProfile()).toEqual(resolveProfile('host-family'));
  });

  it('a JSON object string, also with surrounding blanks', () => {
    expect(resolveProfile('  {"appleFamilyMax": 1007, "families": {"metal3": false}}\n')).toEqual({
      name: null,
      appleFamilyMax: 1007,
      maxThreadgroupMemoryLength: null,
      recommendedMaxWorkingSetSize: null,
      deviceName: null,
      families: { metal3: false },
      mode: 'raise',
    });
  });

  it('malformed JSON is an error naming its line and column, in the same words on every Node version', () => {
    expect(thrown(() => resolveProfile('{"appleFamilyMax": 1009'))).toEqual(
      invalid(
        null,
        'the profile is not JSON: it ends in the middle of a value (line 1, column 24); pass a built-in name or a JSON object',
      ),
    );
    expect(thrown(() => resolveProfile('{\n  "appleFamilyMax": x\n}'))).toEqual(
      invalid(
        null,
        'the profile is not JSON (syntax error at line 2, column 21: expected a value (an object, array, string, number, true, false or null)); pass a built-in name or a JSON object',
      ),
    );
  });

  it('an unknown name lists the built-ins and names the field (name); a JSON array or an Object.prototype key is no name either', () => {
    const unknown = (name: string) =>
      invalid(
        'name',
        `unknown profile '${name}'; built-in profiles are host-family, cua-release, apple9-hw-tg, apple7, mask-apple5, host, or pass a JSON object`,
      );
    expect(thrown(() => resolveProfile('apple99'))).toEqual(unknown('apple99'));
    expect(thrown(() => resolveProfile(' toString '))).toEqual(unknown(' toString '));
    expect(thrown(() => resolveProfile('[1009]'))).toEqual(unknown('[1009]'));
  });

  it.each([
    ['a number', 5, 'number 5'],
    ['null', null, 'null'],
    ['an array', [], 'an array'],
    ['true', true, 'boolean true'],
  ])('%s is no profile', (_what, input, shown) => {
    expect(thrown(() => resolveProfile(input))).toEqual(invalid(null, `${NOT_A_PROFILE}, got ${shown}`));
  });

  it('a JSON string is validated like an object: an unknown field is named', () => {
    expect(thrown(() => resolveProfile('{"a": 1}'))).toEqual(
      invalid(
        'a',
        "unknown profile field 'a'; profile fields are appleFamilyMax, maxThreadgroupMemoryLength, recommendedMaxWorkingSetSize, deviceName, families, mode, mlxArchitecture",
      ),
    );
  });

  it('an unknown field is named, with the list of fields', () => {
    expect(thrown(() => resolveProfile({ appleFamilyMax: 1009, turbo: true }))).toEqual(
      invalid(
        'turbo',
        "unknown profile field 'turbo'; profile fields are appleFamilyMax, maxThreadgroupMemoryLength, recommendedMaxWorkingSetSize, deviceName, families, mode, mlxArchitecture",
      ),
    );
  });

  it('null means "leave alone" for the three sizes only, as a printed profile writes them', () => {
    expect(
      resolveProfile({ appleFamilyMax: null, maxThreadgroupMemoryLength: null, recommendedMaxWorkingSetSize: null }),
    ).toEqual(resolveProfile({}));
    expect(thrown(() => resolveProfile({ families: null }))).toEqual(
      invalid('families', 'families must be an object of family name → true/false, e.g. {"metal3": false}'),
    );
    expect(thrown(() => resolveProfile({ mode: null }))).toEqual(
      invalid('mode', `mode must be 'raise' or 'exact', got null`),
    );
  });

  it('a name is a string or null', () => {
    expect(resolveProfile({ name: 'apple7', appleFamilyMax: 1007 }).name).toBe('apple7');
    expect(resolveProfile({ name: null, appleFamilyMax: 1007 }).name).toBeNull();
    // Not a string, though it names apple7 when used as a property key.
    expect(
      thrown(() => resolveProfile({ ...resolveProfile('apple7'), name: ['apple7'] as unknown as string })),
    ).toEqual(invalid('name', 'name must be a string or null, got ["apple7"]'));
    expect(thrown(() => resolveProfile('{"name": 7}'))).toEqual(
      invalid('name', 'name must be a string or null, got 7'),
    );
  });
});

describe('resolveProfile: both sides of every bound', () => {
  it.each([
    [1000, false],
    [1001, true],
    [1010, true],
    [1011, false],
  ])('appleFamilyMax %d accepted: %s', (value, ok) => {
    if (ok) expect(resolveProfile({ appleFamilyMax: value }).appleFamilyMax).toBe(value);
    else
      expect(thrown(() => resolveProfile({ appleFamilyMax: value }))).toEqual(
        invalid('appleFamilyMax', APPLE_RANGE(String(value))),
      );
  });

  it.each([
    ['a fraction inside the range', 1005.5, '1005.5'],
    ['a numeric string', '1005', '"1005"'],
    ['NaN', Number.NaN, 'NaN'],
  ])('appleFamilyMax: %s is rejected', (_what, value, shown) => {
    expect(thrown(() => resolveProfile({ appleFamilyMax: value }))).toEqual(
      invalid('appleFamilyMax', APPLE_RANGE(shown)),
    );
  });

  // 1008 and 1048592 are multiples of 16, so only the range rule can reject them; 1032 is in range, so only the
  // multiple-of-16 rule can.
  it.each([
    [1008, false],
    [1024, true],
    [1032, false],
    [1040, true],
    [1048576, true],
    [1048592, false],
  ])('maxThreadgroupMemoryLength %d accepted: %s', (value, ok) => {
    if (ok) expect(resolveProfile({ maxThreadgroupMemoryLength: value }).maxThreadgroupMemoryLength).toBe(value);
    else
      expect(thrown(() => resolveProfile({ maxThreadgroupMemoryLength: value }))).toEqual(
        invalid('maxThreadgroupMemoryLength', TG_RANGE(String(value))),
      );
  });

  it('maxThreadgroupMemoryLength as a numeric string is rejected, though it would pass every range rule', () => {
    expect(thrown(() => resolveProfile({ maxThreadgroupMemoryLength: '65536' }))).toEqual(
      invalid('maxThreadgroupMemoryLength', TG_RANGE('"65536"')),
    );
  });

  it.each([
    [67108863, false],
    [67108864, true],
    [Number.MAX_SAFE_INTEGER, true],
  ])('recommendedMaxWorkingSetSize %d accepted: %s', (value, ok) => {
    if (ok) expect(resolveProfile({ recommendedMaxWorkingSetSize: value }).recommendedMaxWorkingSetSize).toBe(value);
    else
      expect(thrown(() => resolveProfile({ recommendedMaxWorkingSetSize: value }))).toEqual(
        invalid('recommendedMaxWorkingSetSize', WSS_RANGE(String(value))),
      );
  });

  it('recommendedMaxWorkingSetSize above 2^53 − 1 or as a string is rejected', () => {
    expect(thrown(() => resolveProfile({ recommendedMaxWorkingSetSize: 2 ** 53 }))).toEqual(
      invalid('recommendedMaxWorkingSetSize', WSS_RANGE(String(2 ** 53))),
    );
    expect(thrown(() => resolveProfile({ recommendedMaxWorkingSetSize: '17179869184' }))).toEqual(
      invalid('recommendedMaxWorkingSetSize', WSS_RANGE('"17179869184"')),
    );
  });
});

describe('resolveProfile: families and mode', () => {
  const FAMILIES_SHAPE = 'families must be an object of family name → true/false, e.g. {"metal3": false}';

  it.each([
    ['an array', []],
    ['null', null],
    ['a string', 'metal3'],
    ['a number', 1],
  ])('families as %s is rejected', (_what, value) => {
    expect(thrown(() => resolveProfile({ families: value }))).toEqual(invalid('families', FAMILIES_SHAPE));
  });

  it('an unknown family is named, with the list of families', () => {
    expect(thrown(() => resolveProfile({ families: { metal3: false, apple11: true } }))).toEqual(
      invalid(
        'families.apple11',
        "unknown family 'apple11'; known families are apple1, apple2, apple3, apple4, apple5, apple6, apple7, apple8, apple9, apple10, mac1, mac2, common1, common2, common3, macCatalyst1, macCatalyst2, metal3, metal4",
      ),
    );
  });

  it('a family answer must be a boolean', () => {
    expect(thrown(() => resolveProfile({ families: { metal3: 'no' } }))).toEqual(
      invalid('families.metal3', 'families.metal3 must be true or false, got "no"'),
    );
    expect(thrown(() => resolveProfile({ families: { metal3: 0 } }))).toEqual(
      invalid('families.metal3', 'families.metal3 must be true or false, got 0'),
    );
  });

  it('mode is raise or exact', () => {
    expect(resolveProfile({ mode: 'exact' }).mode).toBe('exact');
    expect(resolveProfile({ mode: 'raise' }).mode).toBe('raise');
    expect(thrown(() => resolveProfile({ mode: 'lower' }))).toEqual(
      invalid('mode', `mode must be 'raise' or 'exact', got "lower"`),
    );
  });
});

describe('resolveProfile: a resolved profile coming back (status(), a field report)', () => {
  it('is re-validated, and its nulls mean "leave alone"', () => {
    const back = {
      name: null,
      appleFamilyMax: 1007,
      maxThreadgroupMemoryLength: null,
      recommendedMaxWorkingSetSize: null,
      deviceName: null,
      families: {},
      mode: 'raise',
    };
    expect(resolveProfile(back)).toEqual(back);
    expect(thrown(() => resolveProfile({ ...back, appleFamilyMax: 1011 })).field).toBe('appleFamilyMax');
  });

  it('keeps a built-in name only when the name is that string and the values are the built-in’s', () => {
    const apple7 = resolveProfile('apple7');
    expect(resolveProfile({ ...apple7 }).name).toBe('apple7');
    expect(resolveProfile({ ...apple7, name: 'cua-release' }).name).toBeNull();
    expect(resolveProfile({ ...apple7, name: 'toString' }).name).toBeNull();
    expect(resolveProfile(JSON.stringify(apple7)).name).toBe('apple7');
  });
});

describe('familyAnswer', () => {
  const raise = resolveProfile({ appleFamilyMax: 1007 });
  const exact = resolveProfile({ appleFamilyMax: 1007, mode: 'exact' });

  it('raise: the ceiling on both sides, Apple values beyond Apple10 included', () => {
    expect([1006, 1007, 1008, 1500].map((f) => familyAnswer(raise, f, false))).toEqual([true, true, false, false]);
    expect([1006, 1007, 1008, 1500].map((f) => familyAnswer(raise, f, true))).toEqual([true, true, true, true]);
  });

  it('exact: within the ceiling YES, above it NO, whatever the stock answer', () => {
    expect([1007, 1008, 1999].map((f) => familyAnswer(exact, f, true))).toEqual([true, false, false]);
    expect([1001, 1007].map((f) => familyAnswer(exact, f, false))).toEqual([true, true]);
  });

  it('exact without a ceiling leaves Apple families alone', () => {
    const noCeiling = resolveProfile({ mode: 'exact', maxThreadgroupMemoryLength: 32768 });
    expect([familyAnswer(noCeiling, 1007, true), familyAnswer(noCeiling, 1007, false)]).toEqual([true, false]);
  });

  it('a non-Apple family keeps its answer even in exact mode with a ceiling above its number', () => {
    const high = resolveProfile({ appleFamilyMax: 1010, mode: 'exact' });
    expect([familyAnswer(high, 2002, true), familyAnswer(high, 2002, false), familyAnswer(high, 1000, true)]).toEqual([
      true,
      false,
      true,
    ]);
  });

  it('an explicit answer wins over ceiling and mode', () => {
    const p = resolveProfile({ appleFamilyMax: 1009, families: { apple8: false, metal3: true } });
    expect([familyAnswer(p, 1008, true), familyAnswer(p, 5001, false), familyAnswer(p, 1009, false)]).toEqual([
      false,
      true,
      true,
    ]);
  });
});

describe('predictPatchedDevice', () => {
  const stockGuest = () => reportFromSnapshot(loadSnapshot('vz-guest-m1-ultra-tahoe-stock')).devices[0]!;

  it('recomputes the derived fields from the new answers', () => {
    const patched = predictPatchedDevice(stockGuest(), resolveProfile('cua-release'));
    expect(patched.highestAppleFamily).toEqual({ value: 1009, name: 'apple9' });
    expect([patched.simd.reduction.value, patched.simd.matrix.value, patched.simd.bfloat16.value]).toEqual([
      true,
      true,
      true,
    ]);
    expect(patched.maxThreadgroupMemoryLength).toBe(65536);
    expect(patched.recommendedMaxWorkingSetSize).toBe(stockGuest().recommendedMaxWorkingSetSize);
  });

  it('an answer the device cannot give stays unknown, and a size it cannot give stays null', () => {
    const device = stockGuest();
    device.families.apple7 = null;
    device.maxThreadgroupMemoryLength = null;
    const patched = predictPatchedDevice(
      device,
      resolveProfile({ appleFamilyMax: 1009, maxThreadgroupMemoryLength: 65536 }),
    );
    expect(patched.families.apple7).toBeNull();
    expect(patched.families.apple8).toBe(true);
    expect(patched.maxThreadgroupMemoryLength).toBeNull();
  });

  it('exact mode without a size leaves that size alone; with one, sets it even downwards', () => {
    const device = stockGuest();
    expect(predictPatchedDevice(device, resolveProfile({ mode: 'exact' })).maxThreadgroupMemoryLength).toBe(32768);
    expect(
      predictPatchedDevice(device, resolveProfile({ mode: 'exact', maxThreadgroupMemoryLength: 16384 }))
        .maxThreadgroupMemoryLength,
    ).toBe(16384);
    expect(
      predictPatchedDevice(device, resolveProfile({ mode: 'exact', recommendedMaxWorkingSetSize: 67108864 }))
        .recommendedMaxWorkingSetSize,
    ).toBe(67108864);
  });
});

describe('diffAnswers, planProfile and isRaise', () => {
  const two = () => reportFromSnapshot(loadSnapshot('macbookpro16-intel-amd-two-gpus'), { allDevices: true }).devices;

  it('lists every changed answer, device by device, in family order then the sizes', () => {
    const stock = two();
    const { expected, changes } = planProfile(
      stock,
      resolveProfile({
        appleFamilyMax: 1002,
        maxThreadgroupMemoryLength: 65536,
        recommendedMaxWorkingSetSize: 2 ** 40,
      }),
    );
    expect(expected).toEqual(
      stock.map((d) =>
        predictPatchedDevice(
          d,
          resolveProfile({
            appleFamilyMax: 1002,
            maxThreadgroupMemoryLength: 65536,
            recommendedMaxWorkingSetSize: 2 ** 40,
          }),
        ),
      ),
    );
    const [intel, amd] = stock;
    expect(changes).toEqual([
      { device: 0, className: intel!.className, field: 'families.apple1', from: false, to: true },
      { device: 0, className: intel!.className, field: 'families.apple2', from: false, to: true },
      {
        device: 0,
        className: intel!.className,
        field: 'recommendedMaxWorkingSetSize',
        from: intel!.recommendedMaxWorkingSetSize,
        to: 2 ** 40,
      },
      { device: 1, className: amd!.className, field: 'families.apple1', from: false, to: true },
      { device: 1, className: amd!.className, field: 'families.apple2', from: false, to: true },
      {
        device: 1,
        className: amd!.className,
        field: 'recommendedMaxWorkingSetSize',
        from: amd!.recommendedMaxWorkingSetSize,
        to: 2 ** 40,
      },
    ]);
    expect(intel!.maxThreadgroupMemoryLength).toBe(65536);
  });

  it('matches devices by index and class, not by position, and skips a device that was not there before', () => {
    const before = two();
    const after = two().reverse();
    after[0]!.maxThreadgroupMemoryLength = 1024;
    expect(diffAnswers(before, after)).toEqual([
      { device: 1, className: before[1]!.className, field: 'maxThreadgroupMemoryLength', from: 65536, to: 1024 },
    ]);
    expect(diffAnswers([], after)).toEqual([]);
    expect(diffAnswers(before, [])).toEqual([]);
  });

  it('a device matches on index and class together, never on one of them alone', () => {
    const before = two();
    const [intel, amd] = before;
    // The Intel GPU reported under index 1: no device has both, so position 1 (the AMD GPU) is its match.
    expect(diffAnswers(before, [intel!, { ...intel!, index: 1 }])).toEqual([
      { device: 1, className: intel!.className, field: 'name', from: amd!.name, to: intel!.name },
      {
        device: 1,
        className: intel!.className,
        field: 'recommendedMaxWorkingSetSize',
        from: amd!.recommendedMaxWorkingSetSize,
        to: intel!.recommendedMaxWorkingSetSize,
      },
    ]);
    // The AMD GPU reported under index 0, at position 1: again position 1, which is itself.
    expect(diffAnswers(before, [intel!, { ...amd!, index: 0 }])).toEqual([]);
  });

  it('falls back to the same position when a device’s index or class changed', () => {
    const before = two();
    const after = two();
    after[1]!.index = 7;
    after[1]!.families.apple9 = true;
    expect(diffAnswers(before, after)).toEqual([
      { device: 7, className: before[1]!.className, field: 'families.apple9', from: false, to: true },
    ]);
  });

  it('isRaise: a NO becoming YES, or a size growing, and nothing else', () => {
    const change = (from: boolean | number | null, to: boolean | number | null) => ({
      device: 0,
      className: 'X',
      field: 'f',
      from,
      to,
    });
    expect(
      [
        change(false, true),
        change(true, false),
        change(false, false),
        change(true, true),
        change(32768, 65536),
        change(65536, 32768),
        change(65536, 65536),
        change(null, 65536),
        change(65536, null),
        change(false, 1),
        change(0, true),
      ].map(isRaise),
    ).toEqual([true, false, false, false, true, false, false, false, false, false, false]);
  });

  it('isRaise: another name is a claim, whatever the names are', () => {
    const named = (from: string, to: string) => ({ device: 0, className: 'X', field: 'name', from, to });
    expect([named('Apple Paravirtual device', 'Apple M1'), named('Apple M4 Max', 'Apple M1')].map(isRaise)).toEqual([
      true,
      true,
    ]);
  });

  it('diffAnswers: the name first, then the families and sizes', () => {
    const stock = reportFromSnapshot(loadSnapshot('vz-guest-m1-ultra-tahoe-stock')).devices[0]!;
    expect(diffAnswers([stock], [{ ...stock, name: 'Apple M1 Ultra', maxThreadgroupMemoryLength: 65536 }])).toEqual([
      {
        device: 0,
        className: 'AppleParavirtDevice',
        field: 'name',
        from: 'Apple Paravirtual device',
        to: 'Apple M1 Ultra',
      },
      { device: 0, className: 'AppleParavirtDevice', field: 'maxThreadgroupMemoryLength', from: 32768, to: 65536 },
    ]);
  });
});

describe('deviceName', () => {
  const NAME_RULE =
    'deviceName must be 1 to 128 printable ASCII characters without leading or trailing spaces (e.g. "Apple M1"), or "host" (the host chip\'s name), got ';

  it('accepts 1 to 128 printable ASCII characters, and "host"', () => {
    for (const name of [
      'X',
      'Apple M1 Ultra',
      '~'.repeat(128),
      ' !"#$%&\'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~'.trim(),
      'host',
    ]) {
      expect(resolveProfile({ deviceName: name }).deviceName).toBe(name);
    }
    expect(resolveProfile({}).deviceName).toBeNull();
    expect(resolveProfile({ deviceName: null }).deviceName).toBeNull();
  });

  it.each([
    ['empty', ''],
    ['129 characters', 'x'.repeat(129)],
    ['a leading space', ' Apple M1'],
    ['a trailing space', 'Apple M1 '],
    ['spaces only', '   '],
    ['a newline', 'Apple\nM1'],
    ['a tab', 'Apple\tM1'],
    ['DEL', 'Apple\u007f'],
    ['non-ASCII', 'Äpple M1'],
    ['a number', 1007],
    ['an object', { name: 'Apple M1' }],
    ['a name inside an array', ['Apple M1']],
  ])('rejects %s, naming the field', (_what, value) => {
    expect(thrown(() => resolveProfile({ deviceName: value as string }))).toEqual(
      invalid('deviceName', `${NAME_RULE}${JSON.stringify(value)}`),
    );
  });

  it('quotes at most 200 characters of a long name, and says how long it was', () => {
    expect(thrown(() => resolveProfile({ deviceName: 'x'.repeat(100_000) }))).toEqual(
      invalid('deviceName', `${NAME_RULE}"${'x'.repeat(200)}"… (100000 characters)`),
    );
  });

  it('a JSON profile with a name reads back as the same profile', () => {
    const p = resolveProfile('{"appleFamilyMax":1007,"deviceName":"Apple M1"}');
    expect(p).toEqual({ ...resolveProfile('apple7'), name: null, deviceName: 'Apple M1' });
    expect(resolveProfile(JSON.stringify(p))).toEqual(p);
  });

  it('the name is part of the settings: a built-in name on a profile with a name is dropped', () => {
    expect(resolveProfile({ ...resolveProfile('apple7'), deviceName: 'Apple M1' }).name).toBeNull();
  });

  it('predictPatchedDevice answers the name on every device; null leaves each device’s own', () => {
    const two = reportFromSnapshot(loadSnapshot('macbookpro16-intel-amd-two-gpus'), { allDevices: true }).devices;
    expect(two.map((d) => predictPatchedDevice(d, resolveProfile({ deviceName: 'Apple M1' })).name)).toEqual([
      'Apple M1',
      'Apple M1',
    ]);
    expect(two.map((d) => predictPatchedDevice(d, resolveProfile({})).name)).toEqual([
      'Intel(R) UHD Graphics 630',
      'AMD Radeon Pro 5500M',
    ]);
  });
});

describe('mlxArchitecture', () => {
  const wrong = (got: string) =>
    invalid(
      'mlxArchitecture',
      `mlxArchitecture must be a GPU architecture name as MLX reads it: "applegpu_g", two digits (the generation) and a lowercase class letter (e.g. "applegpu_g13d"), or "host" (the host chip's own), or null, got ${got}`,
    );

  it('takes a name MLX reads as a generation and a class, and "host"; null and absence offer nothing', () => {
    for (const name of ['applegpu_g13g', 'applegpu_g13d', 'applegpu_g17s', 'applegpu_g18p', 'applegpu_g10c', 'host']) {
      expect(resolveProfile({ mlxArchitecture: name })).toStrictEqual({ ...resolveProfile({}), mlxArchitecture: name });
    }
    // null, as a printed profile writes "nothing offered", is absence: the profile prints as it always has.
    expect(resolveProfile({ mlxArchitecture: null })).toStrictEqual(resolveProfile({}));
    expect('mlxArchitecture' in resolveProfile({ mlxArchitecture: null })).toBe(false);
    expect(resolveProfile('{"mlxArchitecture": "applegpu_g14s"}').mlxArchitecture).toBe('applegpu_g14s');
  });

  it.each([
    ['applegpu_g9p', '"applegpu_g9p"'],
    ['applegpu_g100s', '"applegpu_g100s"'],
    ['applegpu_g05g', '"applegpu_g05g"'],
    ['applegpu_g13', '"applegpu_g13"'],
    ['applegpu_g13G', '"applegpu_g13G"'],
    ['applegpu_g13gs', '"applegpu_g13gs"'],
    ['applegpu_g11g_8fstp', '"applegpu_g11g_8fstp"'],
    ['APPLEGPU_G13G', '"APPLEGPU_G13G"'],
    [' applegpu_g13g', '" applegpu_g13g"'],
    ['x', '"x"'],
    ['', '""'],
    ['Host', '"Host"'],
  ])('refuses %j, naming the field and the form', (name, got) => {
    expect(thrown(() => resolveProfile({ mlxArchitecture: name }))).toEqual(wrong(got));
  });

  it('refuses a value that is no string', () => {
    expect(thrown(() => resolveProfile({ mlxArchitecture: 13 }))).toEqual(wrong('13'));
    expect(thrown(() => resolveProfile({ mlxArchitecture: true }))).toEqual(wrong('true'));
  });

  it('is never in the native text: the native engine reads Metal answers only', () => {
    const p = resolveProfile({ appleFamilyMax: 1007, mlxArchitecture: 'applegpu_g13g' });
    expect(encodeNativeProfile(p, false)).toBe(encodeNativeProfile(resolveProfile({ appleFamilyMax: 1007 }), false));
  });

  it('an unbound "host" is never offered: a typed error says to bind it first', () => {
    expect(thrown(() => offeredMlxArchitecture(resolveProfile({ mlxArchitecture: 'host' })))).toEqual(
      invalid(
        'mlxArchitecture',
        'mlxArchitecture is "host": bind the profile to a host (bindToHost) before it is predicted or installed',
      ),
    );
    expect(offeredMlxArchitecture(resolveProfile({ mlxArchitecture: 'applegpu_g13g' }))).toBe('applegpu_g13g');
    expect(offeredMlxArchitecture(resolveProfile({}))).toBeNull();
  });
});

describe('the host profile and "host" values, bound to a host', () => {
  const host = (cpuBrand: string | null): HostInfo => ({
    osVersion: '14.5',
    osBuild: null,
    model: 'VirtualMac2,1',
    isVirtualMachine: true,
    arch: 'arm64',
    memoryBytes: null,
    translated: false,
    cpuBrand,
    chip: chipFromBrand(cpuBrand),
  });
  const HOST = resolveProfile('host');

  it('is built in: the host chip’s family and name, threadgroup memory left alone', () => {
    expect(HOST).toEqual({
      name: 'host',
      appleFamilyMax: 'host',
      maxThreadgroupMemoryLength: null,
      recommendedMaxWorkingSetSize: null,
      deviceName: 'host',
      families: {},
      mode: 'raise',
      mlxArchitecture: 'host',
    });
    expect(resolveProfile({ appleFamilyMax: 'host' }).appleFamilyMax).toBe('host');
    expect(resolveProfile(JSON.stringify(HOST))).toEqual(HOST);
  });

  it('on an M1 host: Apple7, "Apple M1" and applegpu_g13g; an M2 Max: Apple8, its name, no architecture; an M5: Apple10 and applegpu_g17g', () => {
    const { mlxArchitecture: _host, ...withoutArchitecture } = HOST;
    expect(bindToHost(HOST, host('Apple M1 (Virtual)'))).toEqual({
      ok: true,
      profile: { ...HOST, appleFamilyMax: 1007, deviceName: 'Apple M1', mlxArchitecture: 'applegpu_g13g' },
    });
    // No M2 Max has been seen to report its architecture: nothing is offered, rather than a guess.
    expect(bindToHost(HOST, host('Apple M2 Max (Virtual)'))).toEqual({
      ok: true,
      profile: { ...withoutArchitecture, appleFamilyMax: 1008, deviceName: 'Apple M2 Max' },
    });
    expect(bindToHost(HOST, host('Apple M5'))).toEqual({
      ok: true,
      profile: { ...HOST, appleFamilyMax: 1010, deviceName: 'Apple M5', mlxArchitecture: 'applegpu_g17g' },
    });
  });

  it('mlxArchitecture "host" alone binds to the chip’s architecture, to nothing where it is unknown, and never fails', () => {
    const alone = resolveProfile({ mlxArchitecture: 'host' });
    expect(alone).toEqual({ ...resolveProfile({}), mlxArchitecture: 'host' });
    expect(needsHost(alone)).toBe(true);
    expect(bindToHost(alone, host('Apple M1 Ultra (Virtual)'))).toEqual({
      ok: true,
      profile: resolveProfile({ mlxArchitecture: 'applegpu_g13d' }),
    });
    for (const brand of ['Apple M1 Pro (Virtual)', 'Apple M9 (Virtual)', 'Intel(R) Core(TM) i7', null]) {
      expect(bindToHost(alone, host(brand))).toEqual({ ok: true, profile: resolveProfile({}) });
    }
    // A name is no 'host' value: it comes back as it is.
    const named = resolveProfile({ mlxArchitecture: 'applegpu_g15s' });
    expect(bindToHost(named, host(null))).toEqual({ ok: true, profile: named });
  });

  it('the explicit family answers stay with the bound profile', () => {
    const masked = resolveProfile({ appleFamilyMax: 'host', families: { metal3: false, apple4: true } });
    expect(bindToHost(masked, host('Apple M1 (Virtual)'))).toEqual({
      ok: true,
      profile: { ...masked, appleFamilyMax: 1007, families: { apple4: true, metal3: false } },
    });
  });

  it('each "host" value is bound on its own; a profile without one comes back as it is', () => {
    const m3 = host('Apple M3 Pro (Virtual)');
    expect(bindToHost(resolveProfile({ appleFamilyMax: 'host', maxThreadgroupMemoryLength: 65536 }), m3)).toEqual({
      ok: true,
      profile: resolveProfile({ appleFamilyMax: 1009, maxThreadgroupMemoryLength: 65536 }),
    });
    expect(bindToHost(resolveProfile({ appleFamilyMax: 1007, deviceName: 'host' }), m3)).toEqual({
      ok: true,
      profile: resolveProfile({ appleFamilyMax: 1007, deviceName: 'Apple M3 Pro' }),
    });
    const plain = resolveProfile('cua-release');
    expect(bindToHost(plain, null)).toEqual({ ok: true, profile: plain });
    expect([needsHost(HOST), needsHost(plain), needsHost(resolveProfile({ deviceName: 'host' }))]).toEqual([
      true,
      false,
      true,
    ]);
  });

  it('an unknown chip is host-unknown, never a guess: no brand, an Intel brand, a chip not in the table', () => {
    const unknown = (why: string, label = 'host') => ({
      ok: false,
      reason: 'host-unknown',
      cause: `this host’s chip is unknown (${why})`,
      detail: `${label} claims the host chip’s own answers, but this host’s chip is unknown (${why}), so nothing is claimed rather than a guess`,
    });
    expect(bindToHost(HOST, host(null))).toEqual(unknown('it reports no machdep.cpu.brand_string'));
    expect(bindToHost(HOST, null)).toEqual(unknown('it reports no machdep.cpu.brand_string'));
    expect(
      bindToHost(resolveProfile({ deviceName: 'host' }), host('Intel(R) Core(TM) i7-9750H CPU @ 2.60GHz')),
    ).toEqual(
      unknown('machdep.cpu.brand_string "Intel(R) Core(TM) i7-9750H CPU @ 2.60GHz" names no Apple chip', 'the profile'),
    );
    expect(bindToHost(HOST, host('Apple M9 (Virtual)'))).toEqual({
      ok: false,
      reason: 'host-unknown',
      cause: 'Apple M9 is not in the chip table (lib/device/chips.ts)',
      detail:
        'host claims the host chip’s true Apple family, but Apple M9 is not in the chip table (lib/device/chips.ts), so nothing is claimed rather than a guess',
    });
    // The name alone needs only the chip's name.
    expect(bindToHost(resolveProfile({ deviceName: 'host' }), host('Apple M9 (Virtual)'))).toEqual({
      ok: true,
      profile: resolveProfile({ deviceName: 'Apple M9' }),
    });
  });

  it('a built-in bound to a host reads back under its name; other values, or a value where the built-in has none, are custom', () => {
    const bound = (p: string, host_: string) => {
      const b = bindToHost(resolveProfile(p), host(host_));
      if (!b.ok) throw new Error(b.detail);
      return JSON.parse(JSON.stringify(b.profile)) as object;
    };
    expect(resolveProfile(bound('host-family', 'Apple M1 (Virtual)'))).toEqual({
      ...resolveProfile('host-family'),
      appleFamilyMax: 1007,
      mlxArchitecture: 'applegpu_g13g',
    });
    expect(resolveProfile(bound('host', 'Apple M4 Max (Virtual)'))).toEqual({
      ...resolveProfile('host'),
      appleFamilyMax: 1009,
      deviceName: 'Apple M4 Max',
      mlxArchitecture: 'applegpu_g16s',
    });
    // Bound where the host's architecture is unknown, it offers none, and still reads back as the built-in.
    const { mlxArchitecture: _host, ...hostFamily } = resolveProfile('host-family');
    expect(resolveProfile(bound('host-family', 'Apple M2 Max (Virtual)'))).toStrictEqual({
      ...hostFamily,
      appleFamilyMax: 1008,
    });
    // An architecture where the built-in offers none makes it custom.
    expect(resolveProfile({ name: 'apple7', appleFamilyMax: 1007, mlxArchitecture: 'applegpu_g13g' }).name).toBeNull();
    // host-family leaves the name alone: a name makes it custom; so does a size it does not set.
    expect(resolveProfile({ name: 'host-family', appleFamilyMax: 1007, deviceName: 'Apple M1' }).name).toBeNull();
    expect(
      resolveProfile({ name: 'host-family', appleFamilyMax: 1007, maxThreadgroupMemoryLength: 32768 }).name,
    ).toBeNull();
    // A family left alone is not host-family bound to anything.
    expect(resolveProfile({ name: 'host-family' }).name).toBeNull();
    // The name of another built-in does not borrow host-family's binding.
    expect(resolveProfile({ name: 'apple7', appleFamilyMax: 1009 }).name).toBeNull();
  });

  it('an unbound "host" value is never predicted or encoded: a typed error says to bind it first', () => {
    const device = reportFromSnapshot(loadSnapshot('vz-guest-m1-ultra-tahoe-stock')).devices[0]!;
    const unboundError = (field: string) =>
      invalid(field, `${field} is "host": bind the profile to a host (bindToHost) before it is predicted or installed`);
    expect(thrown(() => predictPatchedDevice(device, HOST))).toEqual(unboundError('appleFamilyMax'));
    expect(thrown(() => encodeNativeProfile(HOST, false))).toEqual(unboundError('appleFamilyMax'));
    expect(thrown(() => patchedName(resolveProfile({ deviceName: 'host' })))).toEqual(unboundError('deviceName'));
    expect(thrown(() => encodeNativeProfile(resolveProfile({ deviceName: 'host' }), false))).toEqual(
      unboundError('deviceName'),
    );
    expect(familyCeiling(resolveProfile('apple7'))).toBe(1007);
    expect(patchedName(resolveProfile({ deviceName: 'Apple M1' }))).toBe('Apple M1');
  });

  it('bound, it predicts the chip’s family and name over the paravirtual device’s answers', () => {
    const device = reportFromSnapshot(loadSnapshot('github-macos-14-arm64-runner')).devices[0]!;
    const bound = bindToHost(HOST, host('Apple M1 (Virtual)')) as { ok: true; profile: Profile };
    const patched = predictPatchedDevice(device, bound.profile);
    expect([patched.name, patched.highestAppleFamily, patched.maxThreadgroupMemoryLength]).toEqual([
      'Apple M1',
      { value: 1007, name: 'apple7' },
      32768,
    ]);
  });
});

describe('encodeNativeProfile: the name', () => {
  it('as lower-case hex of its bytes, every byte of a 128-character name', () => {
    expect(encodeNativeProfile(resolveProfile({ deviceName: 'Apple M1' }), false)).toBe(
      'mcs1;max=-;tg=-;wss=-;mode=raise;trace=0;fam=;name=4170706c65204d31',
    );
    expect(encodeNativeProfile(resolveProfile({ deviceName: ' ~'.trim().padEnd(128, '~') }), false)).toBe(
      `mcs1;max=-;tg=-;wss=-;mode=raise;trace=0;fam=;name=${'7e'.repeat(128)}`,
    );
  });
});

describe('encodeNativeProfile', () => {
  it('writes every field, families in MTLGPUFamily order, the trace flag as asked', () => {
    expect(encodeNativeProfile(resolveProfile('mask-apple5'), false)).toBe(
      'mcs1;max=1005;tg=32768;wss=-;mode=exact;trace=0;fam=2001:0,2002:0,4001:0,4002:0,5001:0,5002:0;name=-',
    );
    expect(
      encodeNativeProfile(
        resolveProfile({ recommendedMaxWorkingSetSize: 2 ** 34, families: { metal3: false, apple7: true } }),
        true,
      ),
    ).toBe('mcs1;max=-;tg=-;wss=17179869184;mode=raise;trace=1;fam=1007:1,5001:0;name=-');
  });
});
