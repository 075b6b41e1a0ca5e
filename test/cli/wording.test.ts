// The CLI's words for the library's messages (lib/cli/wording.ts): the flag, not the API option; exec's offer only in
// exec; the command that ran named; and the offline hint of a command that takes --snapshot.
import { describe, expect, it } from 'vitest';
import { cliWords, offlineHint } from '../../lib/cli/wording.js';

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
