// The exec injector on its own, loaded with LD_PRELOAD into a consumer compiled separately, without the CLI in front:
// the profile text reaches it through the environment, where anyone can put anything. The native parser
// (src-native/engine/profile.mm) must then refuse, say why on the status pipe, and install nothing.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { APPLE_FAMILY_MAX_KNOWN, APPLE_FAMILY_MIN } from '../../lib/core/families.js';
import { THREADGROUP_MEMORY_RANGE, WORKING_SET_RANGE } from '../../lib/patch/profiles.js';
import { buildConsumer, describeSim, requireSimBuild, root } from '../support/helpers.js';

const injector = path.join(root, 'build', 'Release', 'libmetal_cap_shim_inject.so');
const SLICE = process.arch === 'x64' ? 'x86_64' : process.arch;
let consumer: string;

/**
 * Runs the consumer with the injector preloaded; fd 3 is the status pipe the CLI would read, handed to it as the CLI
 * does (this process named as its parent). `statusLines` are the lines without their pid, which `pids` checks.
 */
function injected(profileText: string | undefined) {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock',
    LD_PRELOAD: injector,
    METAL_CAP_SHIM_STATUS_FD: '3',
    METAL_CAP_SHIM_STATUS_PID: String(process.pid),
  };
  delete env.METAL_CAP_SHIM_PROFILE_NATIVE;
  delete env.METAL_CAP_SHIM_STATUS_ID;
  if (profileText !== undefined) env.METAL_CAP_SHIM_PROFILE_NATIVE = profileText;
  const r = spawnSync(consumer, [], {
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    timeout: 30_000,
  });
  const lines = String(r.output[3] ?? '');
  return {
    status: r.status,
    stdout: r.stdout,
    stderr: r.stderr,
    statusLines: lines.replace(/^[1-9]\d* /gm, ''),
    pids: new Set(lines.match(/^\d+(?= )/gm)).size,
  };
}

const MAX_RANGE = `max must be an Apple family value from ${APPLE_FAMILY_MIN} to ${APPLE_FAMILY_MAX_KNOWN}`;
const TG = THREADGROUP_MEMORY_RANGE;
const TG_RANGE = `tg must be a byte count from ${TG.min} to ${TG.max}, a multiple of ${TG.multipleOf}`;
const WSS_RANGE = `wss must be a byte count from ${WORKING_SET_RANGE.min} to ${WORKING_SET_RANGE.max}`;

describeSim('exec injector: profile text from the environment', () => {
  let stockOutput: string;
  beforeAll(() => {
    requireSimBuild();
    consumer = buildConsumer();
    const plain = spawnSync(consumer, [], {
      env: { ...process.env, METAL_CAP_SHIM_SIM_SNAPSHOT: 'vz-guest-m1-ultra-tahoe-stock' },
      encoding: 'utf8',
    });
    stockOutput = plain.stdout;
    expect(JSON.parse(stockOutput)[0].families['1007']).toBe(false);
  });

  it('a valid text patches the device class the program obtains', () => {
    const r = injected('mcs1;max=1009;tg=65536;wss=-;mode=raise;trace=0;fam=');
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
    expect([r.statusLines, r.pids]).toEqual([`loaded ${SLICE}\npatched AppleParavirtDevice\n`, 1]);
    expect(JSON.parse(r.stdout)[0].families['1007']).toBe(true);
  });

  it.each([
    ['no text at all', undefined, 'missing or too long'],
    ['a text longer than the injector keeps', `mcs1;fam=${'5001:0,'.repeat(150)}5001:0`, 'missing or too long'],
    ['another format', 'mcs2;max=1009', "profile text must start with 'mcs1;'"],
    ['a field without a value', 'mcs1;max', "field 'max' has no '='"],
    ['an empty field', 'mcs1;;mode=raise', "field '' has no '='"],
    ['a ceiling below the Apple range', 'mcs1;max=1000', MAX_RANGE],
    ['a ceiling above the Apple range', 'mcs1;max=2000', MAX_RANGE],
    ['a ceiling above the known families, inside the Apple range', 'mcs1;max=1011', MAX_RANGE],
    ['a ceiling after a space', 'mcs1;max= 1009', MAX_RANGE],
    ['a negative threadgroup size', 'mcs1;tg=-5', TG_RANGE],
    ['a negative threadgroup size after a space (strtoull wraps it to 2^64 - 5)', 'mcs1;tg= -5', TG_RANGE],
    ['a threadgroup size with a plus sign', 'mcs1;tg=+1024', TG_RANGE],
    ['a threadgroup size of 0', 'mcs1;tg=0', TG_RANGE],
    ['a threadgroup size in hexadecimal', 'mcs1;tg=0x8000', TG_RANGE],
    ['a threadgroup size that is no multiple of 16', 'mcs1;tg=32769', TG_RANGE],
    ['a working set with a unit', 'mcs1;wss=12G', WSS_RANGE],
    ['a working set past 2^64', 'mcs1;wss=18446744073709551616', WSS_RANGE],
    ['a working set of 0', 'mcs1;wss=0', WSS_RANGE],
    ['a family value after a space', 'mcs1;fam= 5001:0', "bad family answer ' 5001:0'"],
    ['a family answer after a space', 'mcs1;fam=5001: 1', "bad family answer '5001: 1'"],
    ['a mode the engine does not have', 'mcs1;mode=lower', 'mode must be raise or exact'],
    ['a trace flag of 2', 'mcs1;trace=2', 'trace must be 0 or 1'],
    ['a family answer without a colon', 'mcs1;fam=5001', "bad family answer '5001'"],
    ['a family answer of 2', 'mcs1;fam=1007:1,5001:2', "bad family answer '5001:2'"],
    ['a family answer with a sign', 'mcs1;fam=+5001:0', "bad family answer '+5001:0'"],
    ['a family the table does not name', 'mcs1;fam=6000:1', 'unknown family value 6000'],
    ['an unknown field', 'mcs1;max=1009;turbo=1', "unknown field 'turbo'"],
    ['a threadgroup size given twice, the second left alone', 'mcs1;tg=65536;tg=-', "field 'tg' is given twice"],
    ['a mode given twice', 'mcs1;mode=raise;max=1009;mode=exact', "field 'mode' is given twice"],
    ['a name that is not hex', 'mcs1;name=Apple M1', 'name must be printable ASCII as lower-case hex'],
    ['a name in upper-case hex', 'mcs1;name=4170706C65', 'name must be printable ASCII as lower-case hex'],
    ['a name of an odd number of hex digits', 'mcs1;name=417', 'name must be 1 to 128 bytes as hex'],
    ['an empty name', 'mcs1;name=', 'name must be 1 to 128 bytes as hex'],
    ['a name of 129 bytes', `mcs1;name=${'41'.repeat(129)}`, 'name must be 1 to 128 bytes as hex'],
    ['a name with a control character', 'mcs1;name=41094d31', 'name must be printable ASCII as lower-case hex'],
    ['a name with a byte above ASCII', 'mcs1;name=41ff', 'name must be printable ASCII as lower-case hex'],
  ])('%s: nothing installed, the program runs stock, the reason on the status pipe', (_what, text, reason) => {
    const r = injected(text);
    expect(r).toEqual({
      status: 0,
      stdout: stockOutput,
      stderr: '',
      statusLines: `error ERR_INVALID_PROFILE ${reason}\n`,
      pids: 1,
    });
  });

  // The same bounds as the TypeScript validation, on both sides of each.
  it.each([
    ['max', APPLE_FAMILY_MIN, APPLE_FAMILY_MIN - 1, MAX_RANGE],
    ['max', APPLE_FAMILY_MAX_KNOWN, APPLE_FAMILY_MAX_KNOWN + 1, MAX_RANGE],
    ['tg', TG.min, TG.min - TG.multipleOf, TG_RANGE],
    ['tg', TG.max, TG.max + TG.multipleOf, TG_RANGE],
    ['wss', WORKING_SET_RANGE.min, WORKING_SET_RANGE.min - 1, WSS_RANGE],
    ['wss', WORKING_SET_RANGE.max, WORKING_SET_RANGE.max + 1, WSS_RANGE],
  ])('%s=%i is taken, %i is refused', (field, inside, outside, reason) => {
    expect(injected(`mcs1;${field}=${inside}`).statusLines).toBe(`loaded ${SLICE}\npatched AppleParavirtDevice\n`);
    expect(injected(`mcs1;${field}=${outside}`).statusLines).toBe(`error ERR_INVALID_PROFILE ${reason}\n`);
  });

  it('a name answers in place of the device’s own: 128 printable bytes are kept whole', () => {
    const longest = `${'~'.repeat(127)}x`;
    const hex = (text: string) => Buffer.from(text, 'latin1').toString('hex');
    for (const name of ['Apple M1', longest]) {
      const r = injected(`mcs1;name=${hex(name)}`);
      expect([r.statusLines, r.pids]).toEqual([`loaded ${SLICE}\npatched AppleParavirtDevice\n`, 1]);
      expect(r.stdout).toBe(stockOutput.replace('"Apple Paravirtual device"', JSON.stringify(name)));
    }
  });

  it('the bare tag with nothing after it is a profile that changes nothing', () => {
    const r = injected('mcs1');
    expect(r.statusLines).toBe(`loaded ${SLICE}\npatched AppleParavirtDevice\n`);
    expect(r.stdout).toBe(stockOutput);
  });
});
