// Each fault the simulated Metal can be given (test/fixtures/snapshots/doctor-faults.json) leads to its status,
// its judgement, the verified profile and its recommendations, through doctor() and the real addon. The faults are
// injected: this tests the decisions, not how a real GPU fails (test/live/ runs doctor on a Mac).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { status } from '../../lib/patch/apply.js';
import { doctor } from '../../lib/doctor/index.js';
import { DOCTOR_PROBE_IDS } from '../../lib/doctor/probes.js';
import type { DoctorDevice } from '../../lib/doctor/types.js';
import { resolveProfile, type ProfileInput } from '../../lib/patch/profiles.js';
import { describeSim, dist, jsonFrom, requireSimBuild, root, runCli, runNode } from '../support/helpers.js';
import { simulationJson } from '../sim-metal/simulation.js';

const FIXTURE = path.join(root, 'test', 'fixtures', 'snapshots', 'doctor-faults.json');
const temp = mkdtempSync(path.join(tmpdir(), 'mcs-doctor-faults-'));
process.env.METAL_CAP_SHIM_SIM_SNAPSHOT = FIXTURE;
process.env.XDG_CACHE_HOME = temp;

const MMAP = 1 << 20;
const NO_MMAP = ['--no-mmap (llama-bench: -mmp 0)', 'llama.loadModel({ useMmap: false })'];
const NO_RESIDENCY = ['GGML_METAL_NO_RESIDENCY=1', 'never advertise Metal3 (profile {"families":{"metal3":false}})'];
const BF16 = ['GGML_METAL_BF16_DISABLE=1'];
const KEEP_NAME = ['leave the device name alone (no deviceName in the profile)'];
const NOTHING = resolveProfile({});

async function run(device: number, timeoutMs = 5000, profile?: ProfileInput): Promise<DoctorDevice> {
  const r = await doctor({ device, mmapSize: MMAP, timeoutMs, profile, cache: false });
  expect(r.patchedRun).toEqual({ ran: true, why: null });
  return r.devices[0]!;
}

const verdicts = (d: DoctorDevice) => d.probes.map((p) => [p.id, p.status, p.judgement]);

describeSim('every simulated fault leads to its status, judgement and recommendation', () => {
  beforeAll(requireSimBuild);

  it('(a) a lost SIMD lane, a matrix pipeline error, truncating bfloat, a 32 KiB threadgroup limit, stale pages, no residency set, a lost write to a heap', async () => {
    // Under cua-release, which raises threadgroup memory to 65536: the verified size stays at what was proven.
    const d = await run(1, 5000, 'cua-release');
    // The guest claims no Apple7: a SIMD-group matrix pipeline it cannot build is not its feature (unsupported).
    expect(verdicts(d)).toEqual([
      ['simdgroup-reduction', 'wrong-result', 'faulty'],
      ['simdgroup-matrix', 'unsupported', 'absent'],
      ['bfloat', 'wrong-result', 'faulty'],
      ['threadgroup-memory', 'pass', 'proven'],
      ['nocopy-mmap', 'wrong-result', 'faulty'],
      ['residency-set', 'fail', 'faulty'],
      ['heap', 'wrong-result', 'faulty'],
    ]);
    expect(d.probes[6]!.detail).toBe(
      '1 of 256 words of the placed buffer differ from what the GPU was to write, and 1 read back wrong',
    );
    expect(d.probes[3]).toMatchObject({ provenThreadgroupMemory: 32768, failedThreadgroupMemory: 40960 });
    expect(d.probes[4]!.detail).toMatch(/^stale data: /);
    expect(d.verifiedProfile).toEqual(NOTHING);
    expect(d.verifiedProfileReasons[1]).toBe(
      'threadgroup memory left at the reported 32768 bytes, which were proven; the device reports 32768 stock, 65536 under cua-release',
    );
    expect(d.recommendations.map((r) => r.setting)).toEqual([...BF16, ...NO_MMAP, ...NO_RESIDENCY, ...KEEP_NAME]);
    expect(d.faults).toEqual([
      'simdgroup-reduction: wrong-result',
      'bfloat: wrong-result',
      'nocopy-mmap: wrong-result',
      'residency-set: fail',
      'heap: wrong-result',
    ]);
  });

  it('(b) a reduction pipeline error, a matrix off by one, MSL 3.1 rejected, unbacked memory past 32 KiB, a zero-length NoCopy buffer, no residency API, no heap', async () => {
    const d = await run(2);
    // Neither Apple7 nor Metal3 claimed: a reduction pipeline that cannot be built is unsupported.
    expect(verdicts(d)).toEqual([
      ['simdgroup-reduction', 'unsupported', 'absent'],
      ['simdgroup-matrix', 'wrong-result', 'faulty'],
      ['bfloat', 'unsupported', 'absent'],
      ['threadgroup-memory', 'wrong-result', 'faulty'],
      ['nocopy-mmap', 'wrong-result', 'faulty'],
      ['residency-set', 'unsupported', 'absent'],
      ['heap', 'fail', 'faulty'],
    ]);
    expect(d.probes[4]!.bufferLength).toBe(0);
    expect(d.probes[1]!.maxAbsError).toBe(1);
    expect(d.probes[6]!.detail).toBe('newHeapWithDescriptor: gave no heap of 1048576 bytes');
    expect(d.verifiedProfile).toEqual(NOTHING);
    // bfloat and residency sets are absent, not faulty, and nothing turns them on: no advice for them.
    expect(d.recommendations.map((r) => r.setting)).toEqual([...NO_MMAP, ...KEEP_NAME]);
  });

  it('(c) MSL 2.3 rejected, pipeline errors, a nil NoCopy buffer, a resident buffer read wrong, no heap API', async () => {
    const d = await run(3);
    expect(verdicts(d)).toEqual([
      ['simdgroup-reduction', 'unsupported', 'absent'],
      ['simdgroup-matrix', 'unsupported', 'absent'],
      // Neither Apple6 nor Metal3 claimed; threadgroup memory is every device's, so its pipeline error is a fault.
      ['bfloat', 'unsupported', 'absent'],
      ['threadgroup-memory', 'fail', 'faulty'],
      ['nocopy-mmap', 'fail', 'faulty'],
      ['residency-set', 'wrong-result', 'faulty'],
      ['heap', 'unsupported', 'absent'],
    ]);
    expect(d.probes[6]!.detail).toBe('this device has no heaps (newHeapWithDescriptor:)');
    expect(d.verifiedProfile).toEqual(NOTHING);
    // bfloat is absent here (its pipeline cannot be built, and the guest claims neither Apple6 nor Metal3): no advice.
    expect(d.recommendations.map((r) => r.setting)).toEqual([...NO_MMAP, ...NO_RESIDENCY]);
  });

  it('threadgroup memory that computes wrong even at 16 KiB: nothing proven, memory left as reported; the rest proves Apple7 and Metal3', async () => {
    const d = await run(5);
    expect(verdicts(d)).toEqual(
      DOCTOR_PROBE_IDS.map((id) =>
        id === 'threadgroup-memory' ? [id, 'wrong-result', 'faulty'] : [id, 'pass', 'proven'],
      ),
    );
    expect(d.probes[3]).toMatchObject({ provenThreadgroupMemory: null, failedThreadgroupMemory: 16384 });
    expect(d.verifiedProfile).toEqual({ ...NOTHING, appleFamilyMax: 1007, families: { metal3: true } });
    expect(d.recommendations).toEqual([]);
  });

  it('a device that works: everything proven', async () => {
    const d = await run(0);
    expect(verdicts(d)).toEqual(DOCTOR_PROBE_IDS.map((id) => [id, 'pass', 'proven']));
    // 64 KiB of threadgroup memory ran and computed right, but above 32768 a size is only accepted, never proven, and
    // no more than 32768 (what it reports) is claimed.
    expect(d.probes[3]).toMatchObject({ provenThreadgroupMemory: 32768, acceptedThreadgroupMemory: 65536 });
    expect(d.verifiedProfile).toEqual({ ...NOTHING, appleFamilyMax: 1007, families: { metal3: true } });
  });

  it('the timeout path: a hanging device times out on its first probe, the rest of its probes are skipped with the reason, the call returns, nothing is proven, no hook is left', async () => {
    const t0 = Date.now();
    const d = await run(4, 200);
    const elapsed = Date.now() - t0;
    const unusable = 'not run: the GPU was left unusable by simdgroup-reduction (timeout in the stock run)';
    expect(verdicts(d)).toEqual(
      DOCTOR_PROBE_IDS.map((id) =>
        id === 'simdgroup-reduction' ? [id, 'timeout', 'faulty'] : [id, 'skipped', 'unknown'],
      ),
    );
    // The one run that ran (the reduction's stock run) is bounded by its own deadline; the GPU then takes no more work.
    expect(d.probes.map((p) => [p.id, p.stock?.status ?? null, p.patched?.status ?? null])).toEqual(
      DOCTOR_PROBE_IDS.map((id) =>
        id === 'nocopy-mmap' ? [id, null, null] : [id, id === 'simdgroup-reduction' ? 'timeout' : 'skipped', 'skipped'],
      ),
    );
    expect(d.probes[0]!.stock!.ms!).toBeGreaterThanOrEqual(200);
    expect(elapsed).toBeGreaterThanOrEqual(200);
    expect(elapsed).toBeLessThan(200 + 3000);
    expect(d.probes[0]!.stock!.detail).toBe('the reduction dispatch did not complete within 200 ms');
    expect(d.probes[0]!.patched!.detail).toBe(unusable);
    expect(d.probes[6]!.stock!.detail).toBe(unusable);
    expect(d.probes[4]!.detail).toBe(unusable);
    expect(d.verifiedProfile).toEqual(NOTHING);
    // Only the reduction is faulty, and no engine setting avoids a hung reduction; the skipped probes prove nothing
    // either way, so nothing is advised for them.
    expect(d.faults).toEqual(['simdgroup-reduction: timeout']);
    expect(d.recommendations).toEqual([]);
    expect(status()).toMatchObject({ active: false, hooks: [] });
  });

  it('over every device at once, the report keeps them apart', async () => {
    const r = await doctor({ probes: ['bfloat', 'residency-set'], timeoutMs: 200, cache: false });
    expect(r.devices.map((d) => [d.index, d.className, d.faults])).toEqual([
      [0, 'SimDoctorHealthy', []],
      [1, 'SimDoctorFaultsA', ['bfloat: wrong-result', 'residency-set: fail']],
      [2, 'SimDoctorFaultsB', []],
      [3, 'SimDoctorFaultsC', ['residency-set: wrong-result']],
      // The hung bfloat dispatch leaves the device unusable: its residency-set probe is skipped, not another timeout.
      [4, 'SimDoctorHangs', ['bfloat: timeout']],
      [5, 'SimDoctorUnbacked', []],
    ]);
  });
});

describeSim('auto over faulty devices', () => {
  beforeAll(requireSimBuild);

  /** A snapshot of the fixture's device `index` alone. */
  function alone(index: number): string {
    const s = JSON.parse(readFileSync(FIXTURE, 'utf8'));
    s.id = `doctor-device-${index}`;
    s.devices = [s.devices[index]];
    const file = path.join(temp, `${s.id}.json`);
    writeFileSync(file, JSON.stringify(s));
    return file;
  }

  const auto = (snapshot: string, options: string) =>
    jsonFrom<{ applied: boolean; profile: unknown; from: string; warnings: string[]; ms: number; active: boolean }>(
      runNode(
        `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
         const t0 = Date.now();
         const r = m.applyProfile('auto', ${options});
         console.log(JSON.stringify({ applied: r.applied, profile: r.profile, from: r.auto.from, warnings: r.warnings.map((w) => w.code), ms: Date.now() - t0, active: m.status().active }));`,
        { METAL_CAP_SHIM_SIM_SNAPSHOT: snapshot, XDG_CACHE_HOME: mkdtempSync(path.join(temp, 'cache-')) },
      ),
    );

  it('the timeout path: a hanging device proves nothing, so auto applies a profile that changes nothing, within its deadlines', () => {
    const r = auto(alone(4), '{ timeoutMs: 150 }');
    expect(r).toMatchObject({ applied: true, profile: NOTHING, from: 'doctor', warnings: ['no-change'], active: true });
    // The first capability probe times out; the device's later probes, stock and patched, are skipped.
    expect(r.ms).toBeGreaterThanOrEqual(150);
    expect(r.ms).toBeLessThan(150 + 3000);
  });

  it('a faulty matrix keeps auto below Apple7: bfloat proven gives Apple6 only', () => {
    const s = JSON.parse(readFileSync(FIXTURE, 'utf8'));
    s.id = 'doctor-matrix-only';
    s.devices = [s.devices[0]];
    s.devices[0].doctor = {
      provenance: 'test-fixture',
      probes: Object.fromEntries(
        DOCTOR_PROBE_IDS.map((id) => [
          id,
          id === 'simdgroup-matrix'
            ? { status: 'wrong-result', detail: 'fixture: off by one' }
            : { status: 'not-recorded' },
        ]),
      ),
    };
    const file = path.join(temp, 'matrix-only.json');
    writeFileSync(file, JSON.stringify(s));
    expect(auto(file, '{}')).toMatchObject({
      applied: true,
      profile: { ...NOTHING, appleFamilyMax: 1006, families: { metal3: true } },
      from: 'doctor',
    });
  });
});

describeSim(
  'when the candidate profile cannot be installed, doctor still reports the stock run and leaves nothing behind',
  () => {
    beforeAll(requireSimBuild);

    function guestWith(name: string, edit: (s: Record<string, any>) => void): string {
      const s = JSON.parse(readFileSync(path.join(root, 'snapshots', 'vz-guest-m1-ultra-tahoe-stock.json'), 'utf8'));
      s.id = name;
      edit(s);
      const file = path.join(temp, `${name}.json`);
      writeFileSync(file, simulationJson(s));
      return file;
    }

    const doctorIn = (snapshot: string, profile: string) =>
      jsonFrom<{
        patchedRun: unknown;
        probes: [string, string, boolean][];
        status: { active: boolean; hooks: unknown[] };
      }>(
        runNode(
          `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
         const r = await m.doctor({ probes: ['bfloat', 'residency-set'], profile: '${profile}', cache: false });
         console.log(JSON.stringify({ patchedRun: r.patchedRun, probes: r.devices[0].probes.map((p) => [p.id, p.status, 'patched' in p]), status: m.status() }));`,
          { METAL_CAP_SHIM_SIM_SNAPSHOT: snapshot, XDG_CACHE_HOME: temp },
        ),
      );

    it('a hook that cannot be installed (hook-failed): no patched run, and why', () => {
      const file = guestWith('doctor-lacks', (s) => {
        const broken = structuredClone(s.devices[0]);
        broken.className = 'SimBrokenDevice';
        broken.simulation = { methodsOnConcreteClass: false, lacks: 'recommendedMaxWorkingSetSize' };
        delete broken.doctor;
        s.devices.push(broken);
      });
      const r = doctorIn(file, 'cua-release');
      expect(r.patchedRun).toMatchObject({ ran: false });
      expect((r.patchedRun as { why: string }).why).toMatch(
        /^cua-release was not applied \(hook-failed: .*SimBrokenDevice recommendedMaxWorkingSetSize/,
      );
      expect(r.probes).toEqual([
        ['simdgroup-reduction', 'skipped', false],
        ['simdgroup-matrix', 'skipped', false],
        ['bfloat', 'pass', false],
        ['threadgroup-memory', 'skipped', false],
        ['nocopy-mmap', 'skipped', false],
        ['residency-set', 'fail', false],
        ['heap', 'skipped', false],
      ]);
      expect(r.status).toMatchObject({ active: false, hooks: [] });
    });

    it('a profile that fails verification (the answer drifts): no patched run, and why', () => {
      // The threadgroup answer changes after two reads: the applied profile's answers then do not verify.
      const file = guestWith('doctor-drift', (s) => {
        s.devices[0].simulation = { methodsOnConcreteClass: false, driftAfter: 2 };
      });
      const r = doctorIn(file, 'apple9-hw-tg');
      expect(r.patchedRun).toEqual({
        ran: false,
        why: 'apple9-hw-tg was not applied (verification-failed: device 0 (AppleParavirtDevice) answered maxThreadgroupMemoryLength=32784, expected 32768; the patch was taken out)',
      });
      expect(r.status).toMatchObject({ active: false, hooks: [] });
    });
  },
);

describeSim('preparing the generated file is not the device: a slow or failed write finds no fault', () => {
  beforeAll(requireSimBuild);

  it('a write that outlasts the whole deadline: the GPU phase decides, so the device is proven and nothing is advised', async () => {
    const own = mkdtempSync(path.join(temp, 'tmp-'));
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = own;
    let d: DoctorDevice;
    try {
      d = (await doctor({ device: 0, probes: ['nocopy-mmap'], mmapSize: 256 << 20, timeoutMs: 100, cache: false }))
        .devices[0]!;
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
    const nocopy = d.probes.find((p) => p.id === 'nocopy-mmap')!;
    expect([nocopy.status, nocopy.judgement]).toEqual(['pass', 'proven']);
    // Writing 256 MiB took longer than the 100 ms budget; before, that was a timeout judged faulty.
    expect(nocopy.ms!).toBeGreaterThan(100);
    expect(d.faults).toEqual([]);
    expect(d.recommendations).toEqual([]);
    expect(readdirSync(own)).toEqual([]);
  });

  it('a write that fails (a file-size limit: EFBIG, as ENOSPC would): error, unknown, no fault, no advice, exit 0', () => {
    // The shell's file-size limit (ulimit -f, in KiB) stops the write at 2 MiB of 4; SIGXFSZ is ignored so pwrite
    // returns EFBIG instead of killing the process.
    const own = mkdtempSync(path.join(temp, 'tmp-'));
    const limited = (command: string) =>
      spawnSync('bash', ['-c', `trap '' XFSZ; ulimit -f 2048; exec ${command}`], {
        encoding: 'utf8',
        cwd: root,
        env: { ...process.env, TMPDIR: own, NO_COLOR: '1' },
        timeout: 60_000,
      });
    const code = `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
      const d = (await m.doctor({ device: 0, probes: ['nocopy-mmap'], mmapSize: ${4 << 20}, cache: false })).devices[0];
      const p = d.probes.find((x) => x.id === 'nocopy-mmap');
      console.log(JSON.stringify({ probe: [p.status, p.judgement, p.detail], faults: d.faults, recommendations: d.recommendations }));`;
    const script = path.join(temp, 'failed-write.mjs');
    writeFileSync(script, code);
    const r = jsonFrom<{ probe: string[]; faults: string[]; recommendations: unknown[] }>(
      limited(`${JSON.stringify(process.execPath)} ${JSON.stringify(script)}`),
    );
    expect(r).toEqual({
      probe: ['error', 'unknown', 'writing the generated file failed: File too large'],
      faults: [],
      recommendations: [],
    });
    const cliRun = limited(
      `${JSON.stringify(process.execPath)} ${JSON.stringify(path.join(dist, 'cli.js'))} doctor --device 0 --mmap-size 4M --json`,
    );
    expect(cliRun.status).toBe(0);
    const report = JSON.parse(cliRun.stdout) as { devices: DoctorDevice[] };
    expect(report.devices[0]!.probes.find((p) => p.id === 'nocopy-mmap')).toMatchObject({
      status: 'error',
      judgement: 'unknown',
      detail: 'writing the generated file failed: File too large',
    });
    expect(report.devices[0]!.faults).toEqual([]);
    expect(readdirSync(own)).toEqual([]);
  });

  it('the CLI killed while it writes a large file leaves no file behind (the file has no name once it is open)', async () => {
    const own = mkdtempSync(path.join(temp, 'tmp-'));
    const size = 512 << 20;
    const child = spawn(
      process.execPath,
      [path.join(dist, 'cli.js'), 'doctor', '--device', '0', '--mmap-size', '512M'],
      {
        env: { ...process.env, TMPDIR: own, XDG_CACHE_HOME: mkdtempSync(path.join(temp, 'cache-')) },
        stdio: 'ignore',
      },
    );
    let written = -1;
    // The CLI and the probe runner it starts (which writes the file): every process of the run.
    let tree: number[] = [];
    try {
      // Wait until the probe has both descriptors open and has begun writing.
      const end = Date.now() + 30_000;
      for (;;) {
        tree = processTree(child.pid!);
        const open = tree.flatMap((pid) => descriptorsUnder(pid, own));
        written = open.length === 2 ? statSync(open[0]!.fd).size : -1;
        if (written > 0) {
          expect(open.map((x) => x.target)).toEqual([open[0]!.target, open[0]!.target]);
          expect(open[0]!.target).toMatch(/ \(deleted\)$/);
          break;
        }
        if (Date.now() > end) throw new Error('the doctor never started writing its file');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(readdirSync(own)).toEqual([]);
    } finally {
      // The writer killed with the CLI: SIGKILL runs no destructor, so what is left is what any crash would leave.
      const exited = new Promise((resolve) => child.once('exit', resolve));
      for (const pid of processTree(child.pid!).reverse()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await exited;
      for (const pid of tree) {
        while (existsSync(`/proc/${pid}`) && !isZombie(pid)) await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
    // Killed mid-write: some of the file was written, not all of it.
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(size);
    expect(readdirSync(own)).toEqual([]);
  });
});

describeSim('a Metal exception is an error, not a fault', () => {
  beforeAll(requireSimBuild);
  const SNAPSHOT = path.join(root, 'test', 'fixtures', 'snapshots', 'doctor-sim-behaviours.json');
  const RAISED =
    'Metal raised NSInternalInconsistencyException: simulated exception at commit, recorded in the snapshot: fixture: Metal raises at commit';

  it('through doctor(): every probe error with the reason, judgement unknown, no fault, no advice, nothing proven', () => {
    const r = jsonFrom<{
      probes: [string, string, string, string | undefined][];
      faults: string[];
      recommendations: unknown[];
      profile: unknown;
    }>(
      runNode(
        `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
         const d = (await m.doctor({ device: 0, mmapSize: ${MMAP}, cache: false })).devices[0];
         console.log(JSON.stringify({ probes: d.probes.map((p) => [p.id, p.status, p.judgement, p.detail ?? p.stock?.detail]), faults: d.faults, recommendations: d.recommendations, profile: d.verifiedProfile }));`,
        { METAL_CAP_SHIM_SIM_SNAPSHOT: SNAPSHOT, XDG_CACHE_HOME: temp },
      ),
    );
    expect(r.probes.map(([id, status, judgement]) => [id, status, judgement])).toEqual(
      DOCTOR_PROBE_IDS.map((id) => [id, 'error', 'unknown']),
    );
    for (const [, , , detail] of r.probes) expect(detail).toContain(RAISED);
    expect(r.faults).toEqual([]);
    expect(r.recommendations).toEqual([]);
    expect(r.profile).toEqual(NOTHING);
  });

  it('through the CLI: exit 0, and the report shows the reason', () => {
    const r = runCli(['doctor', '--device', '0', '--mmap-size', '1M', '--json'], {
      METAL_CAP_SHIM_SIM_SNAPSHOT: SNAPSHOT,
      XDG_CACHE_HOME: temp,
    });
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout) as { devices: DoctorDevice[] };
    expect(report.devices[0]!.probes.map((p) => [p.id, p.status, p.judgement])).toEqual(
      DOCTOR_PROBE_IDS.map((id) => [id, 'error', 'unknown']),
    );
    expect(report.devices[0]!.faults).toEqual([]);
    expect(report.devices[0]!.recommendations).toEqual([]);
  });
});

describeSim(
  'a threadgroup limit that follows the answer: the stock and patched runs differ, and doctor says so',
  () => {
    beforeAll(requireSimBuild);
    const SNAPSHOT = path.join(root, 'test', 'fixtures', 'snapshots', 'doctor-sim-behaviours.json');

    it('through doctor(): the difference carries the measured sizes, and the verified size is what both runs proved', () => {
      const d = jsonFrom<{
        differences: unknown;
        reasons: string[];
        tg: number | null;
        stock: number | null;
        patched: number | null;
        accepted: [number | null, number | null];
      }>(
        runNode(
          `const m = await import(${JSON.stringify(path.join(dist, 'index.js'))});
         const d = (await m.doctor({ device: 1, profile: 'cua-release', mmapSize: ${MMAP}, cache: false })).devices[0];
         const p = d.probes.find((x) => x.id === 'threadgroup-memory');
         console.log(JSON.stringify({ differences: d.differences, reasons: d.verifiedProfileReasons, tg: d.verifiedProfile.maxThreadgroupMemoryLength, stock: p.stock.provenThreadgroupMemory, patched: p.patched.provenThreadgroupMemory, accepted: [p.stock.acceptedThreadgroupMemory, p.patched.acceptedThreadgroupMemory] }));`,
          { METAL_CAP_SHIM_SIM_SNAPSHOT: SNAPSHOT, XDG_CACHE_HOME: temp },
        ),
      );
      expect(d.differences).toEqual([
        {
          id: 'threadgroup-memory',
          stock: 'pass',
          patched: 'pass',
          measured: [
            { field: 'acceptedThreadgroupMemory', stock: null, patched: 65536 },
            { field: 'failedThreadgroupMemory', stock: 40960, patched: null },
          ],
        },
      ]);
      // Under cua-release 65536 bytes ran and computed right: accepted, not proven (no size above 32768 is).
      expect([d.stock, d.patched, d.accepted, d.tg]).toEqual([32768, 32768, [null, 65536], null]);
      expect(d.reasons[1]).toBe(
        'threadgroup memory left at the reported 32768 bytes, which were proven; the device reports 32768 stock, 65536 under cua-release',
      );
    });

    it('through the CLI: the difference line names the accepted and failed sizes of each run', () => {
      const r = runCli(['doctor', '--device', '1', '--profile', 'cua-release', '--mmap-size', '1M'], {
        METAL_CAP_SHIM_SIM_SNAPSHOT: SNAPSHOT,
        XDG_CACHE_HOME: temp,
        NO_COLOR: '1',
      });
      expect(r.status).toBe(0);
      expect(r.stdout.split('\n').filter((l) => l.includes('≠'))).toEqual([
        "  ≠ threadgroup-memory: no size accepted, failed from 40960 bytes with stock answers, accepted 65536 bytes, no size failed under cua-release: Metal's behaviour depends on what the device answers",
      ]);
    });
  },
);

/** `pid` and every process below it (its children, theirs, …), read from /proc. */
function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so read after the last `)`.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // exited between the listing and the read
    }
  }
  const out = [pid];
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i]!) ?? []));
  return out;
}

/** True when `pid` has exited and waits for its parent to reap it (or is gone). */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/** The descriptors process `pid` has open on files under `dir`: their /proc path and what they point to. */
function descriptorsUnder(pid: number, dir: string): { fd: string; target: string }[] {
  const out: { fd: string; target: string }[] = [];
  let fds: string[] = [];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out;
  }
  for (const n of fds) {
    try {
      const fd = `/proc/${pid}/fd/${n}`;
      const target = readlinkSync(fd);
      if (target.startsWith(`${dir}/`)) out.push({ fd, target });
    } catch {
      // closed between the listing and the readlink
    }
  }
  return out;
}
