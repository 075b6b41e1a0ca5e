// Inside an Electron app whose RunAsNode fuse is off, `process.execPath script.js` starts the app again: doctor's
// probe runner must start another way or not at all. A Node process is made to look like such an app's main process
// (test/fixtures/electron: process.type, process.versions.electron, an `electron` module that records each
// utilityProcess.fork, and an app binary that, given a script, says it started as a second instance and stays up).
// doctor() works through the fork; the synchronous path (applyProfile('auto'), register) uses the cache or throws
// ERR_CHILD_HOST at once; a renderer gets ERR_CHILD_HOST at once. The app binary never starts, nothing waits.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeEach, expect, it } from 'vitest';
import { describeSim, dist, jsonFrom, requireSimBuild, root, runNode } from '../support/helpers.js';
import { useSimulation } from '../support/simulation.js';

const FIXTURES = path.join(root, 'test/fixtures/electron');
const PRELOAD = path.join(FIXTURES, 'app-preload.cjs');
const INDEX = JSON.stringify(path.join(dist, 'index.js'));

let work: string;
let env: NodeJS.ProcessEnv;

/** Runs `code` (an ES module) in the stand-in app's main process (or `processType`), its result printed as JSON. */
function inApp(code: string, processType = 'browser') {
  return runNode(code, { ...env, STANDIN_PROCESS_TYPE: processType }, ['--require', PRELOAD]);
}

function forks(): { modulePath: string; args: string[]; stdio: unknown; serviceName: string; runAsNode: null }[] {
  const log = path.join(work, 'forks.jsonl');
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
}

/** The app binary was started (a second instance of the app). */
function secondInstance(): boolean {
  return existsSync(path.join(work, 'marker'));
}

const ERROR_JSON = `(e) => console.log(JSON.stringify({ code: e.code, name: e.name, message: e.message, ms: Date.now() - t0 }))`;

describeSim('in an Electron app whose RunAsNode fuse is off', () => {
  useSimulation(() => 'vz-guest-m1-ultra-tahoe-stock');
  requireSimBuild();
  beforeEach(() => {
    work = mkdtempSync(path.join(tmpdir(), 'mcs-electron-'));
    env = {
      XDG_CACHE_HOME: path.join(work, 'cache'),
      STANDIN_FORK_LOG: path.join(work, 'forks.jsonl'),
      STANDIN_MARKER: path.join(work, 'marker'),
    };
  });

  it("doctor() in the main process runs its probes in Electron's utility process", () => {
    const r = inApp(`
      const { doctor } = await import(${INDEX});
      const report = await doctor({ probes: ['simdgroup-matrix', 'heap'], cache: false });
      console.log(JSON.stringify({ supported: report.supported, statuses: report.devices[0].probes.map((p) => p.id + ':' + p.status) }));
    `);
    expect(jsonFrom(r)).toEqual({
      supported: true,
      statuses: [
        'simdgroup-reduction:skipped',
        'simdgroup-matrix:pass',
        'bfloat:skipped',
        'threadgroup-memory:skipped',
        'nocopy-mmap:skipped',
        'residency-set:skipped',
        'heap:pass',
      ],
    });
    expect(forks()).toEqual([
      {
        modulePath: path.join(dist, 'doctor-runner.js'),
        args: [],
        stdio: 'pipe',
        serviceName: 'metal-cap-shim',
        runAsNode: null,
      },
    ]);
    expect(secondInstance()).toBe(false);
  });

  it("applyProfile('auto') with nothing cached throws ERR_CHILD_HOST at once, naming the remedy", () => {
    const r = inApp(`
      const { applyProfile } = await import(${INDEX});
      const t0 = Date.now();
      try { applyProfile('auto'); console.log('{}'); } catch (e) { (${ERROR_JSON})(e); }
    `);
    const e = jsonFrom<{ code: string; name: string; message: string; ms: number }>(r);
    expect({ code: e.code, name: e.name }).toEqual({ code: 'ERR_CHILD_HOST', name: 'NativeError' });
    expect(e.message).toBe(
      "doctor's probe runner cannot start here: Electron's main process starts a Node child only asynchronously (utilityProcess.fork), and the app's own binary would start a second instance of the app. Profile auto has no cached result to use instead: run `npx metal-cap-shim doctor` once on this machine, or apply a named profile (host-family).",
    );
    expect(e.ms).toBeGreaterThanOrEqual(0);
    expect(e.ms).toBeLessThan(2000);
    expect(forks()).toEqual([]);
    expect(secondInstance()).toBe(false);
  });

  it("applyProfile('auto') uses what doctor() cached there", () => {
    const r = inApp(`
      const { applyProfile, doctor, restore } = await import(${INDEX});
      const report = await doctor({ probes: ['simdgroup-reduction', 'simdgroup-matrix', 'bfloat', 'threadgroup-memory', 'residency-set', 'heap'] });
      const result = applyProfile('auto');
      restore();
      console.log(JSON.stringify({ cached: report.cache.written.length, from: result.auto.from, applied: result.applied }));
    `);
    expect(jsonFrom(r)).toEqual({ cached: 1, from: 'cache', applied: true });
    expect(forks().length).toBe(1);
    expect(secondInstance()).toBe(false);
  });

  it('register with METAL_CAP_SHIM_PROFILE=auto and nothing cached stops the app at once with ERR_CHILD_HOST', () => {
    const started = Date.now();
    const r = runNode(
      `import ${JSON.stringify(path.join(dist, 'register.js'))};`,
      {
        ...env,
        METAL_CAP_SHIM_PROFILE: 'auto',
      },
      ['--require', PRELOAD],
    );
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^metal-cap-shim\/register: ERR_CHILD_HOST: doctor's probe runner cannot start here: /);
    expect(forks()).toEqual([]);
    expect(secondInstance()).toBe(false);
  });

  it('doctor() in a renderer rejects with ERR_CHILD_HOST at once', () => {
    const r = inApp(
      `
      const { doctor } = await import(${INDEX});
      const t0 = Date.now();
      await doctor({ probes: ['heap'], cache: false }).then(() => console.log('{}'), ${ERROR_JSON});
    `,
      'renderer',
    );
    const e = jsonFrom<{ code: string; message: string; ms: number }>(r);
    expect(e.code).toBe('ERR_CHILD_HOST');
    expect(e.message).toBe(
      "doctor's probe runner cannot start here: Electron's renderer process cannot start a Node child (utilityProcess is the main process's), and the app's own binary would start a second instance of the app. Run `npx metal-cap-shim doctor` once on this machine (profile auto then reads its cached result); in Electron, call doctor() from the main process.",
    );
    expect(e.ms).toBeLessThan(2000);
    expect(forks()).toEqual([]);
    expect(secondInstance()).toBe(false);
  });

  it('the stand-in app binary is what the old start would have run: given a script, a second instance', () => {
    // Guards the test itself: were anything to spawn process.execPath, the marker would say so.
    const r = inApp(`
      const { spawnSync } = await import('node:child_process');
      spawnSync(process.execPath, ['dist/doctor-runner.js'], { env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' }, timeout: 500 });
      console.log('{}');
    `);
    expect(jsonFrom(r)).toEqual({});
    expect(readFileSync(path.join(work, 'marker'), 'utf8')).toBe('second instance: dist/doctor-runner.js\n');
  });
});
