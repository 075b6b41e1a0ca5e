// Every file the tool writes (matrix --svg, exec --trace) follows one rule (lib/core/safefs.ts checkWriteTarget): no
// write through a link another user planted in any folder of the path, none into a folder others may write unless it is
// sticky and ours or root's, none into another user's folder; the file is a temporary file renamed into place, so a
// command rerun over its own output replaces it. The second user is `nobody` when the tests run as root (as CI does).
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeSim, requireSimBuild, runCli } from '../support/helpers.js';

const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;
const GUEST = { METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' };
const tmp = realpathSync(mkdtempSync(path.join(tmpdir(), 'mcs-writes-')));
chmodSync(tmp, 0o755);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let folders = 0;
function folder(mode = 0o755, parent = tmp): string {
  const dir = path.join(parent, `d${folders++}`);
  mkdirSync(dir);
  chmodSync(dir, mode);
  return dir;
}

/** A folder of the victim's holding a file whose content must never change. */
function victim(): { dir: string; intact: () => boolean } {
  const dir = folder();
  writeFileSync(path.join(dir, 'out.svg'), 'victim');
  return {
    dir,
    intact: () => readFileSync(path.join(dir, 'out.svg'), 'utf8') === 'victim' && readdirSync(dir).length === 1,
  };
}

/** A link in `shared` to `to`, owned by `nobody` when the tests run as root (planted by the other user). */
function plantedLink(shared: string, to: string): string {
  const link = path.join(shared, 'reports');
  symlinkSync(to, link);
  if (asRoot) execFileSync('chown', ['-h', `${NOBODY}:${NOBODY}`, link]);
  return link;
}

describeSim('matrix --svg writes by the one rule', () => {
  let report: string;
  beforeAll(() => {
    requireSimBuild();
    // A llama-bench that answers faster with the shim: a report with a speed result, so matrix has a chart to write.
    const tool = path.join(tmp, 'llama-bench');
    writeFileSync(
      tool,
      `#!/bin/sh\nts=100; [ -n "$LD_PRELOAD" ] && ts=200\necho '[{"build_commit":"abc1234","build_number":7010,"backends":"CPU","model_filename":"tiny.gguf","model_type":"llama ?B F32","n_prompt":512,"n_gen":0,"avg_ts":'$ts',"stddev_ts":1}]'\n`,
    );
    chmodSync(tool, 0o755);
    const speed = path.join(tmp, 'speed.json');
    const measured = runCli(['bench', '--rounds', '1', '--json', '--', tool], GUEST);
    expect(measured.status, measured.stderr).toBe(0);
    writeFileSync(speed, measured.stdout);
    const made = runCli(['report', '--json', '--no-doctor', '--bench', speed], GUEST);
    expect(made.status, made.stderr).toBe(0);
    report = path.join(tmp, 'report.json');
    writeFileSync(report, made.stdout);
  });

  it('a new file, then the same command over its own output: both written', () => {
    const out = path.join(folder(), 'out.svg');
    for (let i = 0; i < 2; i++) {
      const r = runCli(['matrix', '--svg', out, report]);
      expect([r.status, r.stderr]).toEqual([0, '']);
      expect(readFileSync(out, 'utf8').startsWith('<svg ')).toBe(true);
    }
    expect(readdirSync(path.dirname(out))).toEqual(['out.svg']);
  });

  it('into a folder anyone may write that is not sticky: refused, nothing written', () => {
    const open = folder(0o777);
    const r = runCli(['matrix', '--svg', path.join(open, 'out.svg'), report]);
    expect([r.status, r.stderr]).toEqual([
      2,
      `metal-cap-shim: ERR_FILE: --svg the folder ${open} can be written by other users (mode 0777) and is not a sticky folder of yours or root's, so another user could swap its entries for links\n`,
    ]);
    expect(readdirSync(open)).toEqual([]);
  });

  it.runIf(asRoot)(
    'through a link another user planted in a sticky shared folder: refused, the victim’s file intact',
    () => {
      const shared = folder(0o1777);
      const v = victim();
      const link = plantedLink(shared, v.dir);
      const r = runCli(['matrix', '--svg', path.join(link, 'out.svg'), report]);
      expect([r.status, r.stderr]).toEqual([
        2,
        `metal-cap-shim: ERR_FILE: --svg the folder ${link} is reached through ${link}, a link of another user's (uid ${NOBODY}), which could point anywhere\n`,
      ]);
      expect(v.intact()).toBe(true);
    },
  );

  it.runIf(asRoot)('into another user’s folder, or one below it: refused', () => {
    const theirs = folder();
    const below = folder(0o755, theirs);
    chownSync(theirs, NOBODY, NOBODY);
    const r = runCli(['matrix', '--svg', path.join(below, 'out.svg'), report]);
    expect([r.status, r.stderr]).toEqual([
      2,
      `metal-cap-shim: ERR_FILE: --svg the folder ${theirs}, on the way to ${below}, belongs to another user (uid ${NOBODY})\n`,
    ]);
    expect(readdirSync(below)).toEqual([]);
  });
});

describeSim('exec --trace writes by the same rule', () => {
  beforeAll(requireSimBuild);

  it.runIf(asRoot)('through a link another user planted in a parent folder: ERR_TRACE_FILE before the run', () => {
    const shared = folder(0o1777);
    const v = victim();
    const link = plantedLink(shared, v.dir);
    const trace = path.join(link, 'trace.json');
    const r = runCli(['exec', '--profile', 'apple7', '--trace', trace, '--', '/bin/true'], GUEST);
    // 125: exec's own failure, as env(1) has it.
    expect([r.status, r.stderr]).toEqual([
      125,
      `metal-cap-shim: ERR_TRACE_FILE: --trace ${trace}: the folder ${link} is reached through ${link}, a link of another user's (uid ${NOBODY}), which could point anywhere\n`,
    ]);
    expect(v.intact()).toBe(true);
  });
});
