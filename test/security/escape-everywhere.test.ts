// Every human output shows what a terminal, a bidi-aware viewer or a Markdown renderer would act on, and what nobody
// can see, as an escape (one escaper, lib/core/escape.ts): control, C1, bidi, invisible format characters, tag
// characters and non-characters in a device name, a host label, a file name or a custom profile reach no output raw,
// and --json keeps the value exact.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { root, runCli } from '../support/helpers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mcs-escape-'));
const STOCK = 'vz-guest-m1-ultra-tahoe-stock';

/** One code point of each class, and how every human output shows it. */
const CLASSES: readonly (readonly [string, string])[] = [
  ['\u001b]0;title\u0007', '\\u001b]0;title\\u0007'],
  ['\u009b2J', '\\u009b2J'],
  ['\u202e', '\\u202e'],
  ['\u2066', '\\u2066'],
  ['\u2028', '\\u2028'],
  ['\u00ad', '\\u00ad'],
  ['\u200b', '\\u200b'],
  ['\u2060', '\\u2060'],
  ['\ufeff', '\\ufeff'],
  ['\u{e0041}', '\\udb40\\udc41'],
  ['\ufffe', '\\ufffe'],
  ['\uffff', '\\uffff'],
  ['\ufdd0', '\\ufdd0'],
  ['\u{1fffe}', '\\ud83f\\udffe'],
];
const EVIL = `GPU ${CLASSES.map(([raw]) => raw).join('.')} end`;
const SHOWN = `GPU ${CLASSES.map(([, shown]) => shown).join('.')} end`;

// What must not appear raw anywhere in an output (a newline between lines is the output's own).
const RAW =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufdd0-\ufdef\ufffe\uffff]|\udb40[\udc00-\udc7f]|[\ud83f\udbff][\udffe\udfff]/;

const stockSnapshot = () =>
  JSON.parse(readFileSync(path.join(root, 'snapshots', `${STOCK}.json`), 'utf8')) as Record<string, any>;

/** A snapshot file whose first device is named `name`. */
function snapshotNamed(name: string): string {
  const snap = stockSnapshot();
  snap.devices[0].name = name;
  const file = path.join(dir, `named-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(snap));
  return file;
}

describe('human output: every class of code point is shown as an escape, never raw', () => {
  const file = snapshotNamed(EVIL);

  // doctor exits 1: the edited snapshot records no probe results (they are not-recorded, not passed).
  it.each([
    [['probe'], 0],
    [['probe', '--short'], 0],
    [['audit'], 0],
    [['doctor'], 1],
    [['report', '--no-doctor'], 0],
  ])('%j --snapshot prints the device name escaped', (args, status) => {
    const r = runCli([...args, '--snapshot', file]);
    expect(r.status, r.stderr).toBe(status);
    expect(r.stdout).not.toMatch(RAW);
    expect(r.stdout).toContain(SHOWN);
  });

  it('report prints a --host-label escaped', () => {
    const r = runCli(['report', '--no-doctor', '--snapshot', STOCK, '--host-label', EVIL]);
    expect(r.stdout).not.toMatch(RAW);
    expect(r.stdout).toContain(`Physical host: ${SHOWN}\n`);
  });

  it('an error line escapes the file name it quotes', () => {
    const r = runCli(['probe', '--snapshot', `${dir}/${EVIL}.json`]);
    expect(r.status).toBe(2);
    expect(r.stderr).not.toMatch(RAW);
    expect(r.stderr).toContain(`${SHOWN}.json`);
  });

  it.each([[['probe', '--json']], [['report', '--json', '--no-doctor']]])(
    '%j writes every class as a JSON escape and keeps the name exact',
    (args) => {
      const r = runCli([...args, '--snapshot', file]);
      expect(r.stdout).not.toMatch(RAW);
      const parsed = JSON.parse(r.stdout) as { devices?: { name: string }[]; audit?: { devices: { name: string }[] } };
      expect((parsed.devices ?? parsed.audit!.devices)[0]!.name).toBe(EVIL);
    },
  );
});

describe('matrix: the Markdown table and its legend', () => {
  it('a host label holding every class is one escaped cell', () => {
    const report = path.join(dir, 'labelled.json');
    writeFileSync(
      report,
      runCli(['report', '--json', '--no-doctor', '--snapshot', STOCK, '--host-label', EVIL]).stdout,
    );
    const r = runCli(['matrix', report]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(RAW);
    // markdownCell escapes the backslash of each escape, and the `]` of the OSC, once more: rendered, the cell shows
    // the escapes.
    const cell = SHOWN.replaceAll('\\', '\\\\').replaceAll(']', '\\]');
    expect(r.stdout.split('\n')[2]!.startsWith(`| ${cell} | macOS`)).toBe(true);
  });

  it('a backtick in a custom profile’s deviceName does not close the legend’s code span', () => {
    const report = path.join(dir, 'custom.json');
    const name = 'x` [a](http://e) <img src=x onerror=alert(1)> `y';
    const made = runCli([
      'report',
      '--json',
      '--no-doctor',
      '--snapshot',
      STOCK,
      '--profile',
      JSON.stringify({ deviceName: name }),
    ]);
    expect(made.status, made.stderr).toBe(0);
    writeFileSync(report, made.stdout);
    const r = runCli(['matrix', report]);
    expect(r.status, r.stderr).toBe(0);
    // The custom profiles' legend: the line after 'Custom profiles:' (the markers' legend may follow it).
    const lines = r.stdout.trimEnd().split('\n');
    const legend = lines[lines.indexOf('Custom profiles:') + 1]!;
    expect(legend).toMatch(/^- `custom-[0-9a-f]{8}`: ``\{/);
    expect(legend).toContain(`"deviceName":"${name}"`);
    // The span opened by `` is closed only at the end of the line: no run of exactly two backticks inside.
    const span = legend.slice(legend.indexOf('``') + 2, -2);
    expect(legend.endsWith('``')).toBe(true);
    expect(span).not.toMatch(/(^|[^`])``([^`]|$)/);
  });
});
