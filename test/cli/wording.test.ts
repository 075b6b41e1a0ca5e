// The CLI's words for the library's messages (lib/cli/wording.ts): the flag, not the API option; exec's offer only in
// exec; the command that ran named; and the offline hint of a command that takes --snapshot. And one wording per
// fact: every command's output holds the architecture a report lacks to the one word of lib/core/words.ts.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliWords, offlineHint } from '../../lib/cli/wording.js';
import { ARCHITECTURE_UNRECORDED } from '../../lib/core/words.js';
import { runCli } from '../support/helpers.js';
import { tempFolders } from '../support/temp-folders.js';

describe('cliWords', () => {
  it('names the flag the user typed instead of the API option behind it', () => {
    expect(
      cliWords("doctor() option 'device' (--device): there is no device 5; this machine has 1 (0–0)", 'doctor', []),
    ).toBe('--device: there is no device 5; this machine has 1 (0–0)');
    expect(cliWords("doctor() option 'timeoutMs' (--timeout-ms) must be a whole number", 'report', [])).toBe(
      '--timeout-ms must be a whole number',
    );
    // An API option with no flag beside it is left as it is: nothing to translate it to.
    expect(cliWords("audit() option 'engines' must be an array", 'audit', [])).toBe(
      "audit() option 'engines' must be an array",
    );
  });

  it('offers --allow-unpatched only to a command that has it, and names the command that injects', () => {
    const said = 'exec injects into programs that use Metal, which exists only on macOS; this is linux';
    const offer = ' (--allow-unpatched runs the program unpatched)';
    expect(cliWords(`${said}${offer}`, 'exec', ['allow-unpatched', 'profile'])).toBe(`${said}${offer}`);
    expect(cliWords(`${said}${offer}`, 'bench', ['profile', 'rounds'])).toBe(
      'bench injects into programs that use Metal, which exists only on macOS; this is linux',
    );
  });

  it("drops the library's audit-only suggestion (offlineHint gives each command its own)", () => {
    expect(
      cliWords(
        'Metal exists only on macOS; this is linux. Audit a recorded snapshot instead: metal-cap-shim audit --snapshot vz-guest-m1-ultra-tahoe-stock',
        'report',
        ['snapshot'],
      ),
    ).toBe('Metal exists only on macOS; this is linux');
  });
});

describe('offlineHint', () => {
  it('names the command that ran, on a recording that shows it; nothing for a command without --snapshot', () => {
    expect([
      offlineHint('probe', ['snapshot']),
      offlineHint('doctor', ['snapshot']),
      offlineHint('report', ['snapshot']),
      offlineHint('snapshot', ['label']),
    ]).toEqual([
      '. Offline, on any OS: metal-cap-shim probe --snapshot vz-guest-m1-ultra-tahoe-stock',
      '. Offline, on any OS: metal-cap-shim doctor --snapshot github-macos-14-arm64-runner',
      '. Offline, on any OS: metal-cap-shim report --snapshot vz-guest-m1-ultra-tahoe-stock --no-doctor',
      '',
    ]);
  });
});

describe('one wording per fact, every command', () => {
  const files = tempFolders('mcs-wording-');
  const GUEST = 'vz-guest-m1-ultra-tahoe-stock';

  it('an architecture the recording lacks has one word (ARCHITECTURE_UNRECORDED) in probe, probe --short, audit and matrix', () => {
    const word = ARCHITECTURE_UNRECORDED;
    const probe = runCli(['probe', '--snapshot', GUEST]).stdout;
    const short = runCli(['probe', '--short', '--snapshot', GUEST]).stdout;
    const audit = runCli(['audit', '--snapshot', GUEST]).stdout;
    const report = runCli(['report', '--snapshot', GUEST, '--no-doctor', '--json']);
    expect(report.status).toBe(0);
    const file = path.join(files.folder(), 'report.json');
    writeFileSync(file, report.stdout);
    const matrix = runCli(['matrix', file]).stdout;

    const said = {
      probe: probe.split('\n').filter((l) => l.includes('Architecture')),
      short: /· architecture (\S+) →/.exec(short)?.[1],
      auditRow: audit
        .split('\n')
        .filter((l) => /^ {2}architectureName /.test(l))
        .map((l) => l.trim().split(/ {2,}/)),
      auditMlx: /^ {2}MLX parses (architecture\.name \S+);/m.exec(audit)?.[1],
      matrix: matrix.split('\n')[2]?.split(' | ')[2],
    };
    expect(said).toEqual({
      probe: [`  Architecture             ${word}`],
      short: word,
      auditRow: [['architectureName', word, 'applegpu_g13d *']],
      auditMlx: `architecture.name ${word}`,
      matrix: word,
    });
    // "unknown" is the word for a value that cannot be predicted, never for the name a report lacks.
    expect(`${probe}${short}${audit}${matrix}`).not.toMatch(/architecture(\.name|Name)?[\s=]+unknown/i);
  });
});
