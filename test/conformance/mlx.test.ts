// MLX's own architecture parsing, compiled from MLX's sources at pinned commits (mlx-build.mjs; nothing of MLX is
// vendored), run over the architecture names at the edges, with and without MLX's switches and on either side of
// macOS 26.2, and compared with predictMlx field by field: the generation, the class letter, the command-buffer limits,
// NAX and the quantized batch limits (test/conformance/README.md, "MLX").
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadSnapshot, reportFromSnapshot } from '../../lib/tables.js';
import { parseMacos, predictMlx } from '../../lib/engines/index.js';
import { buildMlxHarness, MLX_COMMITS, MlxSourceUnreachable } from './mlx-build.mjs';

const run = promisify(execFile);

type Built = Awaited<ReturnType<typeof buildMlxHarness>>[number];
let built: Built[] = [];
/** Why MLX's sources could not be read here (a machine without GitHub and without MLX_SOURCE_GIT), or null. */
let unreachable: string | null = null;
beforeAll(async () => {
  try {
    built = await buildMlxHarness();
  } catch (e) {
    if (!(e instanceof MlxSourceUnreachable)) throw e;
    unreachable = `MLX's sources are unreachable here: ${e.message}`;
  }
}, 600_000);

/** The names at the edges: every class letter, both sides of each generation bound, digits that are not. */
const NAMES = [
  'applegpu_g13d',
  'applegpu_g13s',
  'applegpu_g14g',
  'applegpu_g14p',
  'applegpu_g15s',
  'applegpu_g16g',
  'applegpu_g17g',
  'applegpu_g17p',
  'applegpu_g18p',
  'applegpu_g17c',
  'applegpu_g9',
  'applegpu_gXYs',
  'applegpu_g1Xs',
  '13s',
  'xy',
  'x',
];
const ENVS: Record<string, string>[] = [
  {},
  { MLX_METAL_GPU_ARCH: 'applegpu_g18p' },
  { MLX_METAL_GPU_ARCH: '' },
  { MLX_MAX_OPS_PER_BUFFER: ' 12x', MLX_MAX_MB_PER_BUFFER: 'many' },
];

const m1 = reportFromSnapshot(loadSnapshot('m1-ultra-bare-metal'));

interface Outcome {
  name: string;
  generation: number;
  class: number;
  maxOps: number;
  maxMb: number;
  nax: boolean;
  qmv: [number, number, number];
}

describe("MLX's own architecture parsing against predictMlx", () => {
  it.for(MLX_COMMITS.map((c): [string, string] => [c.release, c.commit.slice(0, 9)]))(
    'MLX %s (%s): every name, switch and macOS side',
    { timeout: 300_000 },
    async ([release], ctx) => {
      if (unreachable !== null) ctx.skip(unreachable);
      const b = built.find((x) => x.release === release)!;
      // Before v0.31.0 a name shorter than 3 is read from before the string (undefined behaviour); an empty name is
      // undefined behaviour in every release: neither can be compared.
      const names = NAMES.filter((n) => n.length >= 3 || release !== 'v0.30.6');
      let compared = 0;
      for (const name of names) {
        for (const env of ENVS) {
          for (const macosOk of [true, false]) {
            const { stdout } = await run(b.exe, [name, macosOk ? '1' : '0'], {
              env: { PATH: process.env.PATH, ...env },
            });
            const got = JSON.parse(stdout) as Outcome;
            const host = { ...m1.host!, osVersion: macosOk ? '26.2' : '26.1' };
            const device = { ...m1.devices[0]!, architecture: name };
            const p = predictMlx({ device, host, env, macos: parseMacos(host) }, { release }).flags;
            const predicted = {
              name: p.architectureName.value,
              generation: p.architectureGeneration.value,
              class: p.architectureClass.value,
              maxOps: p.maxOpsPerBuffer.value,
              maxMb: p.maxMbPerBuffer.value,
              nax: p.nax.value,
              qmv: p.qmvBatchLimits.value,
            };
            expect({ case: [name, env, macosOk], ...predicted }).toEqual({
              case: [name, env, macosOk],
              name: got.name,
              generation: got.generation,
              class: String.fromCharCode(got.class),
              maxOps: got.maxOps,
              maxMb: got.maxMb,
              nax: got.nax,
              qmv: got.qmv.join('/'),
            });
            compared++;
          }
        }
      }
      expect(compared).toBe(names.length * ENVS.length * 2);
    },
  );

  it('MLX v0.30.6 throws std::out_of_range on a name shorter than 3 where predictMlx has no batch limits', async (ctx) => {
    if (unreachable !== null) ctx.skip(unreachable);
    const b = built.find((x) => x.release === 'v0.30.6')!;
    // Its generation is undefined behaviour there, so only the quantized batch limits' substr is checked: the
    // harness reaches it only if the read before the string did not crash first, so either way it does not finish.
    const finished = await run(b.exe, ['xy', '1'], { env: { PATH: process.env.PATH } }).then(
      () => true,
      () => false,
    );
    expect(finished).toBe(false);
    const host = m1.host!;
    const device = { ...m1.devices[0]!, architecture: 'xy' };
    expect(
      predictMlx({ device, host, env: {}, macos: parseMacos(host) }, { release: 'v0.30.6' }).flags.qmvBatchLimits,
    ).toEqual({
      value: null,
      reason:
        'architecture.name="xy", fewer than 3 bytes: substr throws std::out_of_range at the first quantized mat-vec product',
    });
  });
});
