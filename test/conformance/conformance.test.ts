// The conformance suite (test/conformance/README.md): llama.cpp's own Metal device initialisation, built from the
// node-llama-cpp tarballs of eras.mjs against the simulated Metal, run over every bundled snapshot × every built-in
// profile (and none) × the GGML_METAL_* switches, in-process (applyProfile, then ggml's init) and through `exec`.
// Every value llama.cpp computes is compared with predictGates / audit(), field by field.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { audit, predictGates, profiles, type DeviceReport, type HostInfo } from '../../lib/index.js';
import { listSnapshots, loadSnapshot, reportFromSnapshot } from '../../lib/tables.js';
import {
  deviceIdToken,
  LLAMA_CPP_CHIPS,
  LLAMA_CPP_SWITCHES,
  parseRelease,
  ruleSetForRelease,
  type LlamaCppPrediction,
} from '../../lib/engines/index.js';
import { cli, describeSim, requireSimBuild, root } from '../support/helpers.js';
import { buildConformance, buildLauncher, type BuiltEra } from './build.mjs';
import { absentFields, ERAS, type Era } from './eras.mjs';
import type { ProfileInput } from '../../lib/patch/profiles.js';

type Props = Record<string, unknown>;

/** Cases compared, by era and way, printed at the end. */
const counts: Record<string, number> = {};

type Env = Record<string, string>;

/**
 * The in-process cases of one era: `read`, the switches of any llama.cpp rule set that the era's sources name (build
 * output `switches`: a switch they do not spell out, they cannot read), set to "1": none, each alone, every pair and
 * all together; each alone set to the empty string (ggml only checks that a variable exists); and where the era cannot
 * read some (`unread`), those together, and every switch together. No rule reads more than two switches
 * (TENSOR_DISABLE/ENABLE, SHARED_BUFFERS_DISABLE/ENABLE), so the pairs cover every interaction a rule has; a switch
 * the sources do not name interacts with nothing, so the two cases with all of them set show the prediction ignores
 * them too. For the six switches, 29 cases where an era reads all six, fewer before (b4753 5, b6673 8, b7347 24).
 */
function switchCases(read: readonly string[], unread: readonly string[]): Env[] {
  const on = (names: readonly string[]): Env => Object.fromEntries(names.map((name) => [name, '1']));
  const pairs = read.flatMap((a, i) => read.slice(i + 1).map((b) => [a, b]));
  const cases = [
    on([]),
    ...read.map((name) => on([name])),
    ...pairs.map(on),
    on(read),
    ...(unread.length > 0 ? [on(unread), on([...read, ...unread])] : []),
    ...read.map((name) => ({ [name]: '' })),
  ];
  const seen = new Set<string>();
  return cases.filter((c) => {
    const key = caseText([c]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * The cases through `exec`, the same for every era (one launcher feeds every era's driver the same cases): none, each
 * switch alone and all together. exec is done before the driver sets a case's switches, so they exercise llama.cpp's
 * rules and audit()'s `env`, not exec; every combination runs in-process.
 */
const EXEC_CASES: Env[] = [
  {},
  ...LLAMA_CPP_SWITCHES.map((name) => ({ [name]: '1' })),
  Object.fromEntries(LLAMA_CPP_SWITCHES.map((name) => [name, '1'])),
];

/** Cases as the driver reads them: one line each, NAME=VALUE separated by spaces. */
function caseText(cases: readonly Env[]): string {
  return `${cases
    .map((c) =>
      Object.entries(c)
        .map(([k, v]) => `${k}=${v}`)
        .join(' '),
    )
    .join('\n')}\n`;
}

/** The in-process cases of a built era (switchCases). */
function eraCases(b: BuiltEra): Env[] {
  const named = new Set(b.switches);
  return switchCases(
    LLAMA_CPP_SWITCHES.filter((name) => named.has(name)),
    LLAMA_CPP_SWITCHES.filter((name) => !named.has(name)),
  );
}

/**
 * Snapshots that reach rule branches no bundled one does, derived from bundled ones into a private folder: an
 * external GPU on an x86_64 host and on an arm64 host (v0.5.0 reads the location in x86_64 builds only), and an
 * x86_64 build under Rosetta on Apple silicon (residency sets compiled out).
 */
function derivedSnapshots(dir: string): string[] {
  const bundled = (id: string) =>
    JSON.parse(readFileSync(path.join(root, 'snapshots', `${id}.json`), 'utf8')) as Record<string, any>;
  const write = (snapshot: Record<string, any>, id: string, title: string) => {
    const file = path.join(dir, `${id}.json`);
    writeFileSync(file, JSON.stringify({ ...snapshot, id, title: `${title} (derived for the conformance suite)` }));
    return file;
  };
  const intel = bundled('macbookpro16-intel-amd-two-gpus');
  intel.devices[intel.defaultDevice].location = 'external';
  const arm = bundled('m1-ultra-bare-metal');
  Object.assign(arm.devices[0], { location: 'external', hasUnifiedMemory: false });
  const rosetta = bundled('vz-guest-m1-ultra-tahoe-stock');
  rosetta.host.translated = true;
  return [
    write(intel, 'conformance-intel-egpu', 'the Intel MacBook Pro with its AMD GPU as an external one'),
    write(arm, 'conformance-arm64-external-gpu', 'an arm64 host whose GPU is external, without unified memory'),
    write(rosetta, 'conformance-rosetta-guest', 'the M1 Ultra guest running an x86_64 build under Rosetta'),
  ];
}

const derivedDir = mkdtempSync(path.join(tmpdir(), 'mcs-conformance-'));
const SNAPSHOTS = [...listSnapshots(), ...derivedSnapshots(derivedDir)];
const snapshotName = (s: string) => path.basename(s, '.json');
/** Every built-in profile from the table, so a new one adds its cases; null is the stock device. */
const PROFILES: (string | null)[] = [null, ...Object.keys(profiles)];
/**
 * The profiles a snapshot runs: `host` claims the host chip's family and name, so it runs only where the chip is
 * known. Elsewhere it is not applied (host-unknown), which the in-process run checks without running llama.cpp.
 */
function profilesOf(snapshot: string): (string | null)[] {
  return hostOf(snapshot).chip === null ? PROFILES.filter((p) => p !== 'host') : PROFILES;
}
/** Cases an era compares one way: every snapshot's profiles × that way's cases. */
const caseCount = (cases: readonly Env[]) => SNAPSHOTS.reduce((n, s) => n + profilesOf(s).length * cases.length, 0);
/** What `exec` runs for the stock cases: a profile that leaves every answer alone (hooks in, answers unchanged). */
const STOCK_PROFILE = JSON.stringify({
  appleFamilyMax: null,
  maxThreadgroupMemoryLength: null,
  recommendedMaxWorkingSetSize: null,
});

/** The engine build a snapshot's host runs: x86_64 on an Intel Mac or under Rosetta, else arm64. */
function buildArchOf(host: HostInfo): 'arm64' | 'x86_64' {
  return host.arch === 'x86_64' || host.translated === true ? 'x86_64' : 'arm64';
}

function hostOf(snapshot: string): HostInfo {
  return reportFromSnapshot(loadSnapshot(snapshot), { allDevices: true }).host;
}

/** Runs a program with `input` on stdin; resolves with its output, or rejects with its stderr. */
function runProgram(file: string, args: string[], env: NodeJS.ProcessEnv, input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd: root, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve(out);
      else reject(new Error(`${path.basename(file)} ${args.join(' ')} exited ${code ?? signal}: ${err.slice(-2000)}`));
    });
    child.stdin.end(input);
  });
}

/**
 * One queue for every child process of the suite (in-process runs and `exec` runs alike), POOL_WIDTH at a time: each
 * job starts when a slot frees, so the runs keep the cores busy while the tests compare the results already in.
 */
const POOL_WIDTH = Math.max(2, availableParallelism() + 1);
function queue(width: number): <T>(job: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async (job) => {
    if (active >= width) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await job();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

/** A promise a test awaits later: its rejection is that test's failure, not an unhandled one meanwhile. */
function later<T>(p: Promise<T>): Promise<T> {
  p.catch(() => {});
  return p;
}

/** The environment for a child: this one without any GGML_ variable (the driver sets its own per case). */
function childEnv(snapshot: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { NO_COLOR: '1' };
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GGML_')) env[k] = v;
  env.METAL_CAP_SHIM_SIM_SNAPSHOT = snapshot;
  return env;
}

/** The driver's output: its identity line, then one props object per case, in order. */
function parseOutput(text: string): { identity: Props; props: Props[] } {
  const lines = text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { identity?: Props; case?: number; props?: Props });
  const props = lines.slice(1).map((l, i) => {
    if (l.case !== i) throw new Error(`driver output line ${i + 1} is case ${l.case}`);
    return l.props!;
  });
  return { identity: lines[0]!.identity!, props };
}

/** The fields llama.cpp computes, as the real run reports them and as the prediction says. */
function realFields(era: Era, props: Props): Props {
  if (era.kind === 'legacy') {
    const { has_simdgroup_reduction, has_simdgroup_mm, has_bfloat, use_bfloat, has_residency_sets, name } = props;
    return { has_simdgroup_reduction, has_simdgroup_mm, has_bfloat, use_bfloat, has_residency_sets, name };
  }
  return props;
}

function predictedFields(era: Era, p: LlamaCppPrediction, device: DeviceReport): Props {
  const flags = Object.fromEntries(Object.entries(p.flags).map(([k, v]) => [k, (v as { value: unknown }).value]));
  if (era.kind === 'legacy') {
    // ggml-metal.m keeps no props: its working set is read by get_memory, which the legacy driver does not call.
    const { max_working_set_size: _memory, ...computed } = flags;
    return { ...computed, name: device.name };
  }
  // A field the era lacks is absent from what its driver reports, so a prediction that has it differs; likewise
  // a field the era has and the prediction lacks (device_id, gpu_family, tuning).
  return {
    ...flags,
    has_unified_memory: device.hasUnifiedMemory,
    max_buffer_size: device.maxBufferLength,
    max_theadgroup_memory_size: device.maxThreadgroupMemoryLength,
    // From b8390 on, name is "MTL<n>" and desc the device's name; before, name is the device's name.
    ...(era.lacks.includes('desc') ? { name: device.name } : { desc: device.name }),
    // The driver prints the device's own answer; llama.cpp keeps it beside the flags it derives from it.
    supports_gpu_family_apple7: device.families.apple7,
    ...(p.tuning === null ? {} : { tuning: p.tuning.value }),
  };
}

/** The fields an era's driver reports absent, checked against eras.mjs: each era's build says what it left out. */
function checkAbsent(tally: Tally, era: Era, label: string, identity: Props): void {
  compare(tally, `${label}: identity`, { absent: identity.absent }, { absent: absentFields(era) }, false);
}

interface Tally {
  compared: number;
  mismatches: string[];
}

function compare(tally: Tally, label: string, real: Props, predicted: Props, counted = true): void {
  if (counted) tally.compared++;
  for (const key of new Set([...Object.keys(real), ...Object.keys(predicted)])) {
    if (JSON.stringify(real[key]) !== JSON.stringify(predicted[key])) {
      tally.mismatches.push(
        `${label}: ${key} real ${JSON.stringify(real[key]) ?? 'absent'}, predicted ${JSON.stringify(predicted[key]) ?? 'absent'}`,
      );
    }
  }
}

/**
 * Fails with the mismatches, if any: how many per field first (an era whose rule set is wrong on one field differs
 * on every case), then the first ones in full.
 */
function expectNoMismatches(tally: Tally): void {
  if (tally.mismatches.length === 0) return;
  const perField = new Map<string, number>();
  for (const m of tally.mismatches) {
    const field = / (\w+) real /.exec(m)?.[1] ?? '?';
    perField.set(field, (perField.get(field) ?? 0) + 1);
  }
  const fields = [...perField].map(([field, n]) => `${field} ${n}`).join(', ');
  expect.fail(
    `${tally.mismatches.length} mismatches of ${tally.compared} cases (by field: ${fields}); the first:\n${tally.mismatches.slice(0, 40).join('\n')}`,
  );
}

function envText(env: Record<string, string>): string {
  const parts = Object.entries(env).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return parts.length ? parts.join(' ') : 'no switches';
}

describeSim("conformance: llama.cpp's own device code against predictGates and audit", () => {
  let built: BuiltEra[] = [];
  let launcher = '';
  let execRuns: Promise<ExecRun[]>;
  const inProcessRuns = new Map<string, Promise<InProcessRun[]>>();
  const casesOf = new Map<string, Env[]>();

  beforeAll(async () => {
    requireSimBuild();
    [built, launcher] = await Promise.all([buildConformance(), buildLauncher()]);
    for (const b of built) casesOf.set(b.era.id, eraCases(b));
    // Every run is queued now, in the order the tests read them; each test awaits only its own.
    const run = queue(POOL_WIDTH);
    for (const b of built)
      inProcessRuns.set(b.era.id, later(Promise.all(SNAPSHOTS.map((s) => run(() => inProcess(b, s))))));
    execRuns = later(
      Promise.all(
        SNAPSHOTS.flatMap((snapshot) => profilesOf(snapshot).map((profile) => run(() => exec(snapshot, profile)))),
      ),
    );
  }, 600_000);

  /** One Node process per era and snapshot: the simulated Metal reads its snapshot once per process. */
  async function inProcess(b: BuiltEra, snapshot: string): Promise<InProcessRun> {
    const host = hostOf(snapshot);
    const text = await runProgram(
      process.execPath,
      [path.join(root, 'test', 'conformance', 'in-process.mjs'), b.outputs[buildArchOf(host)].addon],
      childEnv(snapshot),
      caseText(casesOf.get(b.era.id)!),
    );
    return { era: b.era.id, snapshot, host, result: JSON.parse(text) as InProcessResult };
  }

  /**
   * One `exec` per snapshot and profile runs every era's driver (through the launcher, whose children inherit the
   * injector with exec's environment): the process start-ups are per snapshot and profile, not per era.
   */
  async function exec(snapshot: string, profile: string | null): Promise<ExecRun> {
    const arch = buildArchOf(hostOf(snapshot));
    const args = [
      cli,
      'exec',
      '--profile',
      profile ?? STOCK_PROFILE,
      '--force',
      '--',
      launcher,
      ...built.map((b) => b.outputs[arch].cli),
    ];
    const text = await runProgram(process.execPath, args, childEnv(snapshot), caseText(EXEC_CASES));
    const outputs = text.split(/^@@ \d+\n/m).slice(1);
    return { snapshot, profile, outputs: Object.fromEntries(built.map((b, i) => [b.era.id, outputs[i]!])) };
  }

  afterAll(() => {
    rmSync(derivedDir, { recursive: true, force: true });
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    console.log(
      `conformance: ${total} cases compared (${Object.entries(counts)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')})`,
    );
  });

  it('builds each era from its node-llama-cpp tarball: the release it ships and ggml_version() of its ggml', () => {
    expect(
      built.map((b) => ({ era: b.era.id, package: b.era.package, release: b.release, ggmlVersion: b.ggmlVersion })),
    ).toEqual([
      { era: 'b4753', package: 'node-llama-cpp@3.6.0', release: 'b4753', ggmlVersion: null },
      { era: 'b6673', package: 'node-llama-cpp@3.14.0', release: 'b6673', ggmlVersion: '0.9.4' },
      { era: 'b7347', package: 'node-llama-cpp@3.14.5', release: 'b7347', ggmlVersion: '0.9.4' },
      { era: 'b8390', package: 'node-llama-cpp@3.18.1', release: 'b8390', ggmlVersion: '0.9.7' },
      { era: 'b10361', package: 'node-llama-cpp@3.20.0', release: 'b10361', ggmlVersion: '0.19.0' },
      { era: 'v0.4.0', package: 'node-llama-cpp@3.21.1', release: 'v0.4.0', ggmlVersion: '0.23.0' },
      { era: 'v0.5.0', package: 'node-llama-cpp@3.22.1', release: 'v0.5.0', ggmlVersion: '0.25.1' },
    ]);
  });

  for (const eraDef of ERAS) {
    it(`${eraDef.id}: in-process (applyProfile, then ggml's init) equals predictGates on every snapshot, profile and switch`, async () => {
      const b = built.find((x) => x.era.id === eraDef.id)!;
      const tally: Tally = { compared: 0, mismatches: [] };
      const results = await inProcessRuns.get(eraDef.id)!;
      const cases = casesOf.get(eraDef.id)!;
      const expectedRules = ruleSetForRelease(parseRelease(eraDef.id)!).ruleSet;
      for (const { snapshot, host, result } of results) {
        // The consumer scan found the driver's libggml-metal.so and named its release and rules.
        expect(
          result.loaded.map((l) => ({
            image: path.basename(l.image),
            ggmlVersion: l.ggmlVersion,
            release: l.release,
            rules: l.rules,
          })),
        ).toEqual([
          { image: 'libggml-metal.so', ggmlVersion: b.ggmlVersion, release: eraDef.id, rules: expectedRules },
        ]);
        expect({
          rules: result.liveAuditRules.rules,
          release: result.liveAuditRules.release,
          source: result.liveAuditRules.source,
        }).toEqual({
          rules: expectedRules,
          release: eraDef.id,
          source: 'loaded',
        });
        for (const run of result.runs) {
          if (run.profile === 'host' && host.chip === null) {
            // Where the chip is unknown nothing is claimed: a result, never a guess.
            if (run.applied !== false || run.reason !== 'host-unknown')
              tally.mismatches.push(`${snapshotName(snapshot)} host: applied on a host whose chip is unknown`);
            continue;
          }
          if (run.device === undefined) {
            tally.mismatches.push(
              `${snapshotName(snapshot)} ${run.profile}: not applied (${run.reason}: ${run.detail})`,
            );
            continue;
          }
          const { identity, props } = parseOutput(run.output!);
          checkAbsent(tally, eraDef, `${snapshotName(snapshot)} ${run.profile ?? 'stock'}`, identity);
          props.forEach((p, i) => {
            const prediction = predictGates(run.device!, 'llama.cpp', { env: cases[i]!, host, release: eraDef.id });
            compare(
              tally,
              `${snapshotName(snapshot)} ${run.profile ?? 'stock'} ${envText(cases[i]!)}`,
              realFields(eraDef, p),
              predictedFields(eraDef, prediction, run.device!),
            );
          });
        }
      }
      expectNoMismatches(tally);
      expect(tally.compared).toBe(caseCount(cases));
      counts[`${eraDef.id} in-process`] = tally.compared;
    }, 300_000);

    it(`${eraDef.id}: through exec (the injector, then ggml's init) equals audit() on every snapshot, profile and switch`, async () => {
      const tally: Tally = { compared: 0, mismatches: [] };
      for (const { snapshot, profile, outputs } of await execRuns) {
        const { identity, props } = parseOutput(outputs[eraDef.id]!);
        expect(identity.release).toBe(eraDef.id);
        checkAbsent(tally, eraDef, `${snapshotName(snapshot)} ${profile ?? 'stock'}`, identity);
        props.forEach((p, i) => {
          const a = audit({
            snapshot,
            profile: (profile ?? STOCK_PROFILE) as ProfileInput,
            env: EXEC_CASES[i]!,
            release: eraDef.id,
            engines: ['llama.cpp'],
            force: true,
          });
          const device = a.devices.find((d) => d.isDefault)!;
          const after = device.engines[0]!.after as LlamaCppPrediction;
          compare(
            tally,
            `${snapshotName(snapshot)} ${profile ?? 'stock'} ${envText(EXEC_CASES[i]!)}`,
            realFields(eraDef, p),
            predictedFields(eraDef, after, device.patched),
          );
        });
      }
      expectNoMismatches(tally);
      expect(tally.compared).toBe(caseCount(EXEC_CASES));
      counts[`${eraDef.id} exec`] = tally.compared;
    }, 300_000);

    if (eraDef.kind !== 'device') continue;
    // The fields of this era that say which chip it is: the name always, gpu_family and device_id where it has them.
    const chipFields = [
      eraDef.lacks.includes('desc') ? 'name' : 'desc',
      ...(['gpu_family', 'device_id'] as const).filter((f) => !eraDef.lacks.includes(f)),
    ];
    it(`${eraDef.id}: on the macOS 14 runner with profile host, llama.cpp reads the M1 (${chipFields.join(', ')}), as audit --json predicts`, async () => {
      const run = (await execRuns).find(
        (r) => r.profile === 'host' && snapshotName(r.snapshot) === 'github-macos-14-arm64-runner',
      )!;
      const real = parseOutput(run.outputs[eraDef.id]!).props[0]!;
      const a = JSON.parse(
        execFileSync(
          process.execPath,
          [
            cli,
            'audit',
            '--snapshot',
            'github-macos-14-arm64-runner',
            '--profile',
            'host',
            '--rules',
            eraDef.id,
            '--json',
          ],
          { encoding: 'utf8', env: childEnv(run.snapshot) },
        ),
      );
      const after = a.devices[0].engines.find((e: { engine: string }) => e.engine === 'llama.cpp').after;
      const wanted = pick(
        { gpu_family: 7, device_id: 'GGML_METAL_DEVICE_M1', desc: 'Apple M1', name: 'Apple M1' },
        ...chipFields,
      );
      expect(pick(real, ...chipFields)).toEqual(wanted);
      expect(
        pick(
          {
            gpu_family: after.flags.gpu_family?.value,
            device_id: after.flags.device_id?.value,
            desc: after.deviceName,
            name: after.deviceName,
          },
          ...chipFields,
        ),
      ).toEqual(wanted);
      // Fields the era lacks are not predicted either.
      for (const field of ['gpu_family', 'device_id'] as const) {
        if (eraDef.lacks.includes(field))
          expect({ [field]: after.flags[field]?.value }).toEqual({ [field]: undefined });
      }
      expect(real.tuning).toEqual(after.tuning?.value);
    });

    if (eraDef.chips === null) continue;
    it(`${eraDef.id}: device_id for every name${eraDef.tuning === null ? '' : ' and the tuning tier for every chip and family'} equal llama.cpp's own ${eraDef.chips === 'table' ? 'tables' : 'parser'}`, async () => {
      const b = built.find((x) => x.era.id === eraDef.id)!;
      const names = [...LLAMA_CPP_CHIPS.map((c) => `Apple ${c}`), ...DECOY_NAMES];
      const real = JSON.parse(
        await runProgram(b.outputs.arm64.cli, ['--tables'], childEnv(SNAPSHOTS[0]!), `${names.join('\n')}\n`),
      ) as Tables;
      // llama.cpp's chip list is the model's, name for name and token for token (where the era has the list outside
      // its parser: v0.4.0 and later).
      if (eraDef.chips === 'table')
        expect(real.chips).toEqual(LLAMA_CPP_CHIPS.map((name) => ({ name, token: deviceIdToken(name) })));
      else expect(real.chips).toBeNull();
      const tally: Tally = { compared: 0, mismatches: [] };
      const release = eraDef.id;
      for (const { name, device_id } of real.parsed) {
        const p = predictGates(deviceNamed(name, 0), 'llama.cpp', { release, env: {} });
        compare(tally, `name ${JSON.stringify(name)}`, { device_id }, { device_id: flagsOf(p).device_id });
      }
      if (eraDef.tuning === null) expect(real.tiers).toBeNull();
      const nameOf = new Map((real.chips ?? []).map((c) => [c.token, `Apple ${c.name}`]));
      for (const { device_id, gpu_family, tuning } of real.tiers ?? []) {
        // A report holds Apple1–Apple10 only: families llama.cpp asks beyond them cannot be answered YES here.
        if (gpu_family > 10) continue;
        const p = predictGates(
          deviceNamed(nameOf.get(device_id) ?? 'Apple Paravirtual device', gpu_family),
          'llama.cpp',
          { release, env: {} },
        );
        compare(
          tally,
          `${device_id} Apple${gpu_family}`,
          { device_id, gpu_family, tuning },
          { ...pick(flagsOf(p), 'device_id', 'gpu_family'), tuning: p.tuning?.value },
        );
      }
      expectNoMismatches(tally);
      expect(tally.compared).toBe(names.length + (eraDef.tuning === null ? 0 : (LLAMA_CPP_CHIPS.length + 1) * 11));
      counts[`${eraDef.id} tables`] = tally.compared;
    });
  }
});

/** Names llama.cpp must not take for a chip: the VM's device, a guest's CPU brand, near misses. */
const DECOY_NAMES = [
  'Apple Paravirtual device',
  'Apple M1 Ultra (Virtual)',
  'Apple M1 Ultra ',
  'M1 Ultra',
  'Apple m1 ultra',
  'Apple M4 Max Pro',
  'Apple A18',
  'AMD Radeon Pro 5500M',
  'Apple ',
];

/** What the driver's --tables prints (driver.h): chips null where the table is local to the parser, tiers null
 * without a tuning table. */
interface Tables {
  chips: { name: string; token: string }[] | null;
  parsed: { name: string; device_id: string }[];
  tiers: { device_id: string; gpu_family: number; tuning: unknown }[] | null;
}

/** The stock guest's device under another name, answering Apple1 … Apple`family` YES and no higher Apple family. */
function deviceNamed(name: string, family: number): DeviceReport {
  const base = reportFromSnapshot(loadSnapshot('vz-guest-m1-ultra-tahoe-stock'), { allDevices: true }).devices[0]!;
  const families = { ...base.families };
  for (let n = 1; n <= 10; n++) families[`apple${n}` as keyof typeof families] = n <= family;
  return { ...base, name, families };
}

function flagsOf(p: LlamaCppPrediction): Props {
  return Object.fromEntries(Object.entries(p.flags).map(([k, v]) => [k, (v as { value: unknown }).value]));
}

function pick(o: Props, ...keys: string[]): Props {
  return Object.fromEntries(keys.map((k) => [k, o[k]]));
}

interface InProcessRun {
  era: string;
  snapshot: string;
  host: HostInfo;
  result: InProcessResult;
}

interface ExecRun {
  snapshot: string;
  profile: string | null;
  /** Each era's driver output, by era. */
  outputs: Record<string, string>;
}

interface InProcessResult {
  loaded: { image: string; ggmlVersion: string | null; release: string | null; rules: string; detail: string }[];
  liveAuditRules: { rules: string; release: string | null; source: string };
  runs: {
    profile: string | null;
    applied: boolean | null;
    device?: DeviceReport;
    output?: string;
    reason?: string;
    detail?: string;
  }[];
}
