// The profiles command (lib/cli/profiles.ts): the built-ins with their values, rationale and risks, as JSON that
// --profile takes back and as text.
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/helpers.js';

describe('metal-cap-shim profiles', () => {
  it('profiles --json lists the built-ins with values and rationale', () => {
    const r = runCli(['profiles', '--json']);
    const out = JSON.parse(r.stdout) as {
      default: string;
      profiles: { name: string; rationale: string; profile: { appleFamilyMax: number | 'host' } }[];
    };
    expect(out.default).toBe('host-family');
    expect(out.profiles.map((p) => p.name)).toEqual([
      'host-family',
      'cua-release',
      'apple9-hw-tg',
      'apple7',
      'mask-apple5',
      'host',
    ]);
    expect(out.profiles.map((p) => p.profile.appleFamilyMax)).toEqual(['host', 1009, 1009, 1007, 1005, 'host']);
    expect(out.profiles.every((p) => p.rationale.length > 20)).toBe(true);
  });

  it('profiles in human form name each profile and its risks', () => {
    const r = runCli(['profiles']);
    const lines = r.stdout.split('\n');
    expect(lines.slice(0, 2)).toEqual([
      'host-family (default) — The host chip’s true Apple family, and its GPU architecture offered to MLX; threadgroup memory and name left as the device answers (apple7 where the chip is unknown)',
      '  mode raise, Apple families up to the host chip’s true family, MLX offered the host chip’s GPU architecture; apple7 where the host’s chip is unknown',
    ]);
    expect(lines.filter((l) => l.includes('(default)'))).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith('  risks: '))).toHaveLength(6);
  });
});
