import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { MATRIX_MARKERS, type FieldReport, type Matrix } from '../../lib/audit/field-report.js';
import { describeSim, requireSimBuild, root, runCli } from '../support/helpers.js';

const STOCK = 'vz-guest-m1-ultra-tahoe-stock';

describe('metal-cap-shim report and matrix', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcs-reports-'));
  const make = (name: string, args: string[], env: NodeJS.ProcessEnv = {}) => {
    const r = runCli(['report', '--json', ...args], env);
    expect([0, 3], r.stderr).toContain(r.status);
    const file = path.join(dir, `${name}.json`);
    writeFileSync(file, r.stdout);
    return file;
  };

  it('a report carries the package version, the host, the stock and patched devices and the verdict', () => {
    const file = make('one', ['--snapshot', STOCK, '--host-label', 'M1 Ultra, macOS 26.6.1']);
    const report = JSON.parse(readFileSync(file, 'utf8')) as FieldReport;
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
    expect(report).toMatchObject({
      schema: 'metal-cap-shim/field-report@1',
      packageVersion: pkg.version,
      hostLabel: 'M1 Ultra, macOS 26.6.1',
      host: { model: 'VirtualMac2,1', osVersion: '26.5.2', isVirtualMachine: true },
    });
    expect(report.audit.devices[0]!.stock.families.apple7).toBe(false);
    expect(report.audit.devices[0]!.patched.families.apple7).toBe(true);
  });

  it('matrix merges reports into a host × guest OS × profile table', () => {
    const files = [
      make('a', ['--snapshot', STOCK, '--host-label', 'M1 Ultra, macOS 26.6.1']),
      make('b', ['--snapshot', STOCK, '--host-label', 'M1 Ultra, macOS 26.6.1', '--profile', 'apple7']),
      make('c', ['--snapshot', 'github-macos-14-arm64-runner', '--host-label', 'GitHub macos-14 runner']),
      make('d', ['--snapshot', 'm1-ultra-bare-metal', '--profile', 'cua-release']),
    ];
    const md = runCli(['matrix', ...files]);
    expect(md.status, md.stderr).toBe(0);
    expect(md.stdout.trim()).toBe(
      [
        '| Host | Guest OS | Architecture | apple7 | cua-release | host-family | Proven profile (doctor) | Faults (doctor) | Speed-up (bench) | Fidelity (bench) |',
        '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
        '| GitHub macos-14 runner | macOS 14.5 (VirtualMac2,1) | unrecorded | – | – | predicted offline (1); gates: reduction, mm, bfloat | not measured (1) | nocopy-mmap: wrong-result (1/1) | – | – |',
        '| M1 Ultra, macOS 26.6.1 | macOS 26.5.2 (VirtualMac2,1) | unrecorded | predicted offline (1); gates: reduction, mm, bfloat | – | predicted offline (1); gates: reduction, mm, bfloat | not measured (2) | residency-set: fail (2/2) | – | – |',
        '| Mac13,2 | macOS 26.6.1 (bare metal) | applegpu\\_g13d | – | refused (1) | – | not measured (1) | none found | – | – |',
        '',
        'Where the evidence comes from: unmarked is measured on macOS; speed-ups are geometric means with their 95 % interval (paired t on log ratios).',
        `- predicted: ${MATRIX_MARKERS.predicted}`,
      ].join('\n'),
    );
    const json = JSON.parse(runCli(['matrix', '--json', ...files]).stdout) as Matrix;
    expect(json.profiles).toEqual(['apple7', 'cua-release', 'host-family']);
    expect(json.rows).toHaveLength(3);
    // As each snapshot records it: both VM snapshots lack it; the bare-metal one has it.
    expect(json.rows.map((r) => [r.host, r.architectures])).toEqual([
      ['GitHub macos-14 runner', [null]],
      ['M1 Ultra, macOS 26.6.1', [null]],
      ['Mac13,2', ['applegpu_g13d']],
    ]);
    expect(json.rows[1]!.cells['host-family']).toMatchObject({ reports: 1, offline: 1, verified: 0 });
    expect(json.rows[1]!.doctor).toEqual({
      reports: 2,
      measured: 0,
      simulated: 0,
      provenProfile: null,
      faults: [{ fault: 'residency-set: fail', reports: 2 }],
    });
  });

  it("matrix lists as gates only llama.cpp's own switches: a report's made-up or prototype keys are none", () => {
    const good = JSON.parse(readFileSync(make('gates', ['--snapshot', STOCK]), 'utf8')) as FieldReport;
    const edited = structuredClone(good) as any;
    const flags = edited.audit.devices[0].engines.find((e: { engine: string }) => e.engine === 'llama.cpp').after.flags;
    Object.defineProperty(flags, '__proto__', { value: { value: true, rule: 'x' }, enumerable: true });
    flags.made_up_gate = { value: true, rule: 'x' };
    const file = path.join(dir, 'gates-edited.json');
    writeFileSync(file, JSON.stringify(edited));
    const m = JSON.parse(runCli(['matrix', '--json', file]).stdout) as Matrix;
    const plain = JSON.parse(runCli(['matrix', '--json', make('gates-plain', ['--snapshot', STOCK])]).stdout) as Matrix;
    expect(m.rows[0]!.cells['host-family']!.gatesOn).toEqual(plain.rows[0]!.cells['host-family']!.gatesOn);
    expect(m.rows[0]!.cells['host-family']!.gatesOn).toEqual([
      'has_simdgroup_reduction',
      'has_simdgroup_mm',
      'has_bfloat',
      'use_residency_sets',
      'use_shared_buffers',
    ]);
  });

  it('matrix rejects a report whose doctor section is damaged, naming the field', () => {
    const good = JSON.parse(readFileSync(make('doctor-ok', ['--snapshot', STOCK]), 'utf8')) as FieldReport;
    for (const [edit, field] of [
      [
        (r: any) => (r.doctor = { schema: 'metal-cap-shim/doctor@0' }),
        'doctor must be null or a metal-cap-shim/doctor@1 result',
      ],
      [(r: any) => (r.doctor.devices = {}), 'doctor.devices must be an array'],
      [(r: any) => (r.doctor.devices[0].faults = 'none'), 'doctor.devices[0].faults must be an array of strings'],
      [(r: any) => delete r.doctor.devices[0].probes, 'doctor.devices[0].probes must be an array of judged probes'],
      [
        (r: any) => (r.doctor.devices[0].probes[2] = null),
        'doctor.devices[0].probes must be an array of judged probes',
      ],
      [(r: any) => (r.doctor.source = 7), 'doctor.source must be a string'],
      [
        (r: any) => (r.doctor.devices[0].verifiedProfile.appleFamilyMax = 5),
        'doctor.devices[0].verifiedProfile is not a profile',
      ],
    ] as const) {
      const bad = structuredClone(good);
      edit(bad);
      const file = path.join(dir, 'bad-doctor.json');
      writeFileSync(file, JSON.stringify(bad));
      const r = runCli(['matrix', file]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`ERR_INVALID_REPORT: ${file} is not a usable metal-cap-shim field report (${field}`);
    }
  });

  it.each([
    ['another schema', { schema: 'other' }, 'schema'],
    ['no audit', { schema: 'metal-cap-shim/field-report@1', host: null, hostLabel: null }, 'audit'],
    [
      'an empty audit',
      { schema: 'metal-cap-shim/field-report@1', host: null, hostLabel: null, audit: {} },
      'audit.mode',
    ],
  ])('matrix rejects a file that is not a usable field report (%s) with ERR_INVALID_REPORT', (_, content, field) => {
    const bad = path.join(dir, `bad-${field}.json`);
    writeFileSync(bad, JSON.stringify(content));
    const r = runCli(['matrix', bad]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('ERR_INVALID_REPORT');
    expect(r.stderr).toContain('not a usable metal-cap-shim field report');
    expect(r.stderr).not.toContain('    at ');
  });
});

describeSim('metal-cap-shim report on the simulated build', () => {
  beforeAll(requireSimBuild);
  it('live reports over the simulated Metal: verified, marked simulated; their doctor proves nothing about a Mac', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-live-'));
    const file = path.join(dir, 'live.json');
    const r = runCli(['report', '--json', '--host-label', 'sim host', '--mmap-size', '1M'], {
      METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK,
      XDG_CACHE_HOME: dir,
    });
    expect(r.status, r.stderr).toBe(0);
    writeFileSync(file, r.stdout);
    const report = JSON.parse(r.stdout) as FieldReport;
    expect(report.doctor).toMatchObject({
      schema: 'metal-cap-shim/doctor@1',
      source: 'simulated',
      patchedRun: { ran: true },
    });
    expect(report.doctor!.settings.mmapSize).toBe(1 << 20);
    expect(report.doctor!.devices[0]!.faults).toEqual(['residency-set: fail']);
    const m = JSON.parse(runCli(['matrix', '--json', file]).stdout) as Matrix;
    expect(m.rows[0]!.cells['host-family']).toEqual({
      reports: 1,
      verified: 1,
      refused: 0,
      offline: 0,
      simulated: 1,
      gatesOn: [
        'has_simdgroup_reduction',
        'has_simdgroup_mm',
        'has_bfloat',
        'use_residency_sets',
        'use_shared_buffers',
      ],
    });
    expect(m.rows[0]!.doctor).toEqual({
      reports: 1,
      measured: 0,
      simulated: 1,
      provenProfile: null,
      faults: [{ fault: 'residency-set: fail', reports: 1 }],
    });
    expect(runCli(['matrix', file]).stdout).toContain(
      '✓ verified 1/1 \\[simulated\\]; gates: reduction, mm, bfloat | not measured (1; 1 simulated) | residency-set: fail (1/1) |',
    );
  });

  it('report --no-doctor leaves doctor out; a report without doctor still merges (–)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-live-'));
    const file = path.join(dir, 'bare.json');
    const r = runCli(['report', '--json', '--no-doctor'], { METAL_CAP_SHIM_SIM_SNAPSHOT: STOCK, XDG_CACHE_HOME: dir });
    expect(r.status, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as FieldReport).doctor).toBeNull();
    writeFileSync(file, r.stdout);
    expect(runCli(['matrix', file]).stdout.trim().split('\n')[2]).toMatch(/ \| – \| – \|$/);
  });
});

describe('metal-cap-shim --help, --version and usage errors', () => {
  it('--version prints the package version', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
    expect(runCli(['--version']).stdout.trim()).toBe(pkg.version);
  });

  it.each(['probe', 'audit', 'exec', 'bench', 'report', 'matrix', 'profiles'])(
    '%s --help exits 0 with usage',
    (cmd) => {
      const r = runCli([cmd, '--help']);
      expect(r.status).toBe(0);
      expect(r.stdout).toContain(`Usage: metal-cap-shim ${cmd}`);
    },
  );

  it('no command prints the help on stderr, exit 2', () => {
    const r = runCli([]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^metal-cap-shim — probe Apple Metal device capabilities/);
    expect(r.stderr).toContain('Usage: metal-cap-shim <command>');
    expect(r.stdout).toBe('');
  });

  it.each([
    [
      ['frobnicate'],
      "unknown command 'frobnicate'; commands: probe, audit, exec, bench, report, matrix, profiles, snapshot, doctor",
      'metal-cap-shim --help',
    ],
    [['probe', '--all-devices=yes'], "--all-devices takes no value, got 'yes'", 'metal-cap-shim probe --help'],
    [
      ['audit', '--engine', 'tensorflow'],
      "--engine takes llama.cpp, mlx, ollama or all, got 'tensorflow'",
      'metal-cap-shim audit --help',
    ],
    [
      ['audit', '--rules', 'ancient'],
      "--rules takes legacy-b0, legacy-b1853, legacy-b4040, legacy-b4053, legacy, device-b6501, device-b6968, device-b7010, device-b7411, device, chip-tuning or current, or a llama.cpp release like b4753 or v0.4.0, got 'ancient'",
      'metal-cap-shim audit --help',
    ],
    [
      ['exec', 'llama-bench'],
      "put `--` before the program, so that its options are not read as exec's: metal-cap-shim exec -- llama-bench",
      'metal-cap-shim exec --help',
    ],
    [['report', '--bogus'], "unknown option '--bogus'", 'metal-cap-shim report --help'],
    [['matrix'], 'matrix needs at least one report file', 'metal-cap-shim matrix --help'],
    [
      ['profiles', 'extra'],
      "unexpected argument 'extra': profiles takes options only",
      'metal-cap-shim profiles --help',
    ],
  ])(
    '%j is a usage error: one line, then where the usage is; exit 2 (exec: 125, its own failure), nothing on stdout',
    (args, message, help) => {
      const r = runCli(args as string[]);
      expect(r.status).toBe((args as string[])[0] === 'exec' ? 125 : 2);
      expect(r.stderr).toBe(`metal-cap-shim: ERR_USAGE: ${message}\nRun \`${help}\` for usage.\n`);
      expect(r.stdout).toBe('');
    },
  );

  it.each([
    [['audit', '--profile', 'apple99'], 'ERR_INVALID_PROFILE'],
    [['audit', '--snapshot', STOCK, '--profile', '{"families":{"apple11":true}}'], 'ERR_INVALID_PROFILE'],
    [['audit', '--snapshot', 'no-such-snapshot'], 'ERR_SNAPSHOT_NOT_FOUND'],
    [['report', '--snapshot', 'no-such-snapshot'], 'ERR_SNAPSHOT_NOT_FOUND'],
    [['matrix', '/nonexistent/report.json'], 'ERR_FILE'],
  ])('%j is a usage error: exit 2, one %s line on stderr, nothing on stdout', (args, code) => {
    const r = runCli(args as string[]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^metal-cap-shim: ${code}: [^\n]+\n$`));
    expect(r.stdout).toBe('');
  });
});
