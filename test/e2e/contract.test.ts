// The command contract: one exit-code table (lib/cli/exit.ts) that every command uses, and the decisions users met
// differently per command (the kill switch, a file named like a bundled snapshot, a report's doctor results, matrix
// inputs that cannot be read, where a bad value came from).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT, EXIT_TABLE } from '../../lib/cli/exit.js';
import { root, runCli } from '../support/helpers.js';

const GUEST = 'vz-guest-m1-ultra-tahoe-stock';
const BARE = 'm1-ultra-bare-metal';
const GITHUB = 'github-macos-14-arm64-runner';
const NO_SIM = { METAL_CAP_SHIM_SIM_SNAPSHOT: undefined };
const SIM = { METAL_CAP_SHIM_SIM_SNAPSHOT: GUEST };
const dir = mkdtempSync(path.join(tmpdir(), 'mcs-contract-'));

function cli(args: string[], env: NodeJS.ProcessEnv = {}): string {
  return execFileSync(process.execPath, [path.join(root, 'dist/cli.js'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', ...env },
  });
}

describe('one exit-code table for every command', () => {
  it('the README’s table is generated from it, and is current (else: npm run build && node scripts/check/exit-table.mjs)', () => {
    const r = spawnSync(process.execPath, [path.join(root, 'scripts/check/exit-table.mjs'), '--check'], {
      encoding: 'utf8',
    });
    expect([r.status, r.stderr]).toEqual([0, '']);
  });

  it('the table names each code once, in order', () => {
    expect(EXIT_TABLE.map((r) => [r.code, r.name])).toEqual(Object.entries(EXIT).map(([name, code]) => [code, name]));
  });

  const report = path.join(dir, 'guest-report.json');
  writeFileSync(report, cli(['report', '--json', '--snapshot', GUEST, '--no-doctor']));
  const empty = path.join(dir, 'empty.json');
  writeFileSync(empty, '');

  it.each<[string, string[], NodeJS.ProcessEnv, keyof typeof EXIT]>([
    ['probe of a guest', ['probe'], SIM, 'ok'],
    ['probe with no Metal', ['probe'], NO_SIM, 'noMetal'],
    ['probe with a bad option', ['probe', '--frobnicate'], SIM, 'usage'],
    ['audit of a recorded guest', ['audit', '--snapshot', GUEST], {}, 'ok'],
    ['audit raising on bare metal', ['audit', '--snapshot', BARE, '--profile', 'cua-release'], {}, 'refused'],
    ['audit of bare metal with the default, which raises nothing there', ['audit', '--snapshot', BARE], {}, 'ok'],
    ['audit live with no Metal', ['audit'], NO_SIM, 'noMetal'],
    ['audit of a snapshot that does not exist', ['audit', '--snapshot', 'no-such'], {}, 'usage'],
    ['doctor of a recording without a fault', ['doctor', '--snapshot', BARE], {}, 'ok'],
    ['doctor of a recording with a fault', ['doctor', '--snapshot', GITHUB], {}, 'finding'],
    ['doctor live with no Metal', ['doctor'], NO_SIM, 'noMetal'],
    ['snapshot with no Metal', ['snapshot'], NO_SIM, 'noMetal'],
    ['snapshot of the simulated guest', ['snapshot'], SIM, 'ok'],
    ['report of a bare-metal recording (the refusal is data)', ['report', '--snapshot', BARE, '--no-doctor'], {}, 'ok'],
    ['report live with no Metal', ['report'], NO_SIM, 'noMetal'],
    ['report with an unknown profile', ['report', '--snapshot', GUEST, '--profile', 'apple99'], {}, 'usage'],
    ['matrix of a report', ['matrix', report], {}, 'ok'],
    ['matrix with a report it skips', ['matrix', report, empty], {}, 'usage'],
    ['profiles', ['profiles'], {}, 'ok'],
  ])('%s: %s', (_what, args, env, code) => {
    const r = runCli(args, env);
    expect([args.join(' '), r.status]).toEqual([args.join(' '), EXIT[code]]);
  });
});

describe('decisions users met differently per command', () => {
  it('METAL_CAP_SHIM_PROFILE=off: exec runs the program unpatched and says so once (nothing with -q)', () => {
    const marker = path.join(dir, 'ran');
    const r = runCli(['exec', '--', 'sh', '-c', `echo ran > '${marker}'; exit 7`], {
      METAL_CAP_SHIM_PROFILE: 'off',
      ...SIM,
    });
    expect([r.status, r.stderr]).toEqual([7, 'metal-cap-shim: METAL_CAP_SHIM_PROFILE=off: running sh unpatched\n']);
    const quiet = runCli(['exec', '-q', '--', 'true'], { METAL_CAP_SHIM_PROFILE: 'OFF', ...SIM });
    expect([quiet.status, quiet.stderr]).toEqual([0, '']);
  });

  it('a bad METAL_CAP_SHIM_PROFILE names the variable', () => {
    const r = runCli(['exec', '--', 'true'], { METAL_CAP_SHIM_PROFILE: 'garbage', ...SIM });
    expect(r.status).toBe(125);
    expect(r.stderr.split('\n')[0]).toMatch(
      /^metal-cap-shim: ERR_INVALID_PROFILE: METAL_CAP_SHIM_PROFILE: unknown profile 'garbage'/,
    );
  });

  it('a name that is an existing file is read as the file, for --snapshot and --profile', () => {
    const cwd = mkdtempSync(path.join(tmpdir(), 'mcs-names-'));
    writeFileSync(path.join(cwd, 'guest'), cli(['snapshot'], SIM));
    writeFileSync(path.join(cwd, 'myprof'), '{"appleFamilyMax": 1007}');
    const run = (args: string[]) =>
      execFileSync(process.execPath, [path.join(root, 'dist/cli.js'), ...args], {
        cwd,
        encoding: 'utf8',
        env: { ...process.env, NO_COLOR: '1' },
      });
    const audited = JSON.parse(run(['audit', '--json', '--snapshot', 'guest', '--profile', 'myprof']));
    expect([audited.mode, audited.profile.appleFamilyMax, audited.refused]).toEqual(['offline', 1007, false]);
    // A bundled name still means the bundled snapshot.
    expect(JSON.parse(run(['probe', '--json', '--snapshot', GUEST])).snapshot).toBe(GUEST);
  });

  it('only one input can be standard input: a usage error, not the second one’s bad JSON', () => {
    const r = runCli(['audit', '--snapshot', '-', '--profile', '-'], {}, '{}');
    expect([r.status, r.stderr.split('\n')[0]]).toEqual([
      EXIT.usage,
      'metal-cap-shim: ERR_USAGE: only one input can be standard input: --snapshot and --profile both read -; give the others as files',
    ]);
  });

  it('doctor --snapshot on a field report shows the faults the report holds, as matrix does', () => {
    const withFault = path.join(dir, 'github-report.json');
    writeFileSync(withFault, cli(['report', '--json', '--snapshot', GITHUB]));
    const doctor = runCli(['doctor', '--snapshot', withFault]);
    expect(doctor.status).toBe(EXIT.finding);
    expect(doctor.stdout).toContain('Faults: nocopy-mmap: wrong-result');
    expect(runCli(['matrix', withFault]).stdout).toContain('nocopy-mmap: wrong-result (1/1)');
  });

  it('matrix: an unreadable report is skipped with one warning, the others are tabled, and a custom column has a legend', () => {
    const custom = path.join(dir, 'custom-report.json');
    writeFileSync(
      custom,
      cli(['report', '--json', '--snapshot', GUEST, '--no-doctor', '--profile', '{"appleFamilyMax": 1008}']),
    );
    const empty = path.join(dir, 'skipped.json');
    writeFileSync(empty, '');
    const r = runCli(['matrix', custom, empty]);
    expect(r.status).toBe(EXIT.usage);
    expect(r.stderr).toBe(`metal-cap-shim: warning: skipped ${empty} is empty\n`);
    const column = /custom-[0-9a-f]{8}/.exec(r.stdout)![0];
    expect(r.stdout).toContain(
      `Custom profiles:\n- \`${column}\`: \`{"appleFamilyMax":1008,"maxThreadgroupMemoryLength":null,"recommendedMaxWorkingSetSize":null,"deviceName":null,"families":{},"mode":"raise"}\``,
    );
    const json = JSON.parse(runCli(['matrix', '--json', custom]).stdout);
    expect(json.legend).toEqual({
      [column]: {
        appleFamilyMax: 1008,
        maxThreadgroupMemoryLength: null,
        recommendedMaxWorkingSetSize: null,
        deviceName: null,
        families: {},
        mode: 'raise',
      },
    });
  });

  it('probe --short --profile host binds the profile to the host, as audit, report, doctor and exec do', () => {
    const r = runCli(['probe', '--short', '--profile', 'host'], SIM);
    expect([r.status, r.stderr]).toEqual([EXIT.ok, '']);
    expect(r.stdout).toContain('Apple5 → Apple7 (host)');
  });
});
