// The above-host-family warning, in-process: which answer changes count as claiming a family, which family is the
// highest claimed, and the one line that names it, the host's chip and what llama.cpp then tunes for. The CLI tests
// show the line reaches audit, exec and register; these pin the decision itself.
import { describe, expect, it } from 'vitest';
import { aboveHostFamilyMessage, claimsAboveHostFamily, profileWarnings } from '../lib/patch/apply.js';
import { reportFromSnapshot, loadSnapshot } from '../lib/device/snapshots.js';
import { resolveProfile, type AnswerChange } from '../lib/patch/profiles.js';
import type { DeviceReport, HostInfo } from '../lib/device/types.js';

const guest = reportFromSnapshot(loadSnapshot('vz-guest-m1-ultra-tahoe-stock'));
const m1Host = (chip: string | null): HostInfo => ({ ...guest.host!, chip });

function change(field: string, from: AnswerChange['from'], to: AnswerChange['to']): AnswerChange {
  return { device: 0, className: 'AGXParavirtualDevice', field, from, to };
}
const raise = (family: string) => change(`families.${family}`, false, true);

describe('claimsAboveHostFamily', () => {
  it('a family raised above the chip’s true family claims above it; the true family itself does not', () => {
    // Apple M1's true family is Apple7.
    expect(claimsAboveHostFamily([raise('apple8')], m1Host('Apple M1'))).toBe(true);
    expect(claimsAboveHostFamily([raise('apple7')], m1Host('Apple M1'))).toBe(false);
    expect(claimsAboveHostFamily([raise('apple9')], m1Host('Apple M3'))).toBe(false);
    expect(claimsAboveHostFamily([raise('apple10')], m1Host('Apple M3'))).toBe(true);
  });

  it('an unknown chip or no host: nothing to compare with, never a claim', () => {
    expect(claimsAboveHostFamily([raise('apple10')], m1Host(null))).toBe(false);
    expect(claimsAboveHostFamily([raise('apple10')], null)).toBe(false);
  });

  it('only an Apple family turned from NO to YES counts', () => {
    const host = m1Host('Apple M1');
    expect(
      [
        [change('families.apple9', null, true)],
        [change('families.apple9', true, false)],
        [change('families.apple9', false, false)],
        [raise('metal3')],
        [raise('mac2')],
        [change('maxThreadgroupMemoryLength', 32768, 65536)],
        [change('name', 'Apple Paravirtual device', 'Apple M4 Max')],
        [],
      ].map((changes) => claimsAboveHostFamily(changes, host)),
    ).toEqual([false, false, false, false, false, false, false, false]);
  });
});

describe('profileWarnings: the above-host-family line', () => {
  const stock: DeviceReport[] = guest.devices;
  const warn = (changes: AnswerChange[], chip: string | null, deviceName: string | null = null) =>
    profileWarnings(
      { ...resolveProfile({ appleFamilyMax: 1009 }), deviceName },
      stock,
      changes,
      [],
      m1Host(chip),
      'current',
    ).filter((w) => w.code === 'above-host-family');

  it('names the highest family raised, whatever the order of the changes', () => {
    const expected = [
      { code: 'above-host-family', message: aboveHostFamilyMessage(1009, 'Apple M1', 1007, 'current', stock[0]!.name) },
    ];
    expect(warn([raise('apple8'), raise('apple9')], 'Apple M1')).toEqual(expected);
    expect(warn([raise('apple9'), raise('apple8')], 'Apple M1')).toEqual(expected);
    expect(warn([raise('apple9'), raise('apple8'), raise('apple9')], 'Apple M1')).toEqual(expected);
  });

  it('tunes by the name the profile answers, when it has one', () => {
    expect(warn([raise('apple9')], 'Apple M1', 'Apple M1')).toEqual([
      { code: 'above-host-family', message: aboveHostFamilyMessage(1009, 'Apple M1', 1007, 'current', 'Apple M1') },
    ]);
  });

  it('no line at or below the true family, or without a known chip', () => {
    expect([warn([raise('apple7')], 'Apple M1'), warn([raise('apple9')], null)]).toEqual([[], []]);
  });
});

describe('aboveHostFamilyMessage', () => {
  it('under rules that tune by chip: the chip llama.cpp will tune for, and the host’s', () => {
    expect(
      aboveHostFamilyMessage(1009, 'Apple M1', 1007, 'chip-tuning', 'Apple Paravirtual device'),
    ).toMatchInlineSnapshot(
      `"the profile claims Apple9, above Apple7, the true family of this host's Apple M1: llama.cpp v0.4.x will tune for an M4 Max (Apple9's representative), not this host's Apple M1 (profile host claims exactly the host's)"`,
    );
  });

  it('where the name still picks the host’s own rows (bare metal), or the rules tune by family alone: the family phrase', () => {
    expect([
      aboveHostFamilyMessage(1009, 'Apple M1', 1007, 'chip-tuning', 'Apple M1'),
      aboveHostFamilyMessage(1009, 'Apple M1', 1007, 'device', 'Apple Paravirtual device'),
    ]).toMatchInlineSnapshot(`
      [
        "the profile claims Apple9, above Apple7, the true family of this host's Apple M1: an engine that tunes by family tunes for a newer GPU than the one doing the work (profile host claims exactly the host's)",
        "the profile claims Apple9, above Apple7, the true family of this host's Apple M1: an engine that tunes by family tunes for a newer GPU than the one doing the work (profile host claims exactly the host's)",
      ]
    `);
  });

  it('under the current rules (tuning by family): the family llama.cpp tunes for', () => {
    expect(aboveHostFamilyMessage(1009, 'Apple M1', 1007, 'current', 'Apple Paravirtual device')).toMatchInlineSnapshot(
      `"the profile claims Apple9, above Apple7, the true family of this host's Apple M1: llama.cpp v0.5.0 and later will tune with its Apple9 table (swept on the A18 Pro, M3 Max, M3 Pro, M3 Ultra, M4, M4 Max, M4 Pro), not this host's Apple M1 (profile host claims exactly the host's)"`,
    );
  });

  it('a family the package knows by no name is given by its number', () => {
    expect(aboveHostFamilyMessage(1011, 'Apple M1', 1007, 'legacy', 'Apple Paravirtual device')).toMatchInlineSnapshot(
      `"the profile claims family 1011, above Apple7, the true family of this host's Apple M1: an engine that tunes by family tunes for a newer GPU than the one doing the work (profile host claims exactly the host's)"`,
    );
  });
});
