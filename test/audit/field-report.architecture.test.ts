// The matrix's Architecture column: the GPU architecture each row's reports recorded for the default device, stock.
// Both bundled VM snapshots leave it unrecorded, so field reports from real guests are what will fill it in.
import { describe, expect, it } from 'vitest';
import {
  architecturesText,
  buildMatrix,
  fieldReport,
  matrixMarkdown,
  type FieldReport,
  type Matrix,
} from '../../lib/audit/field-report.js';
import type { InvalidOptionsError } from '../../lib/core/errors.js';

const offline = (snapshot: string, hostLabel: string) =>
  fieldReport({ snapshot, hostLabel, doctor: false, profile: 'apple7' });

/** The same report as a real guest would send it: its paravirtual device reporting `architecture`. */
function reporting(report: FieldReport, architecture: string): FieldReport {
  const r = structuredClone(report);
  r.generatedAt = `${r.generatedAt} (${architecture})`;
  for (const d of r.audit.devices) d.stock = { ...d.stock, architecture };
  return r;
}

describe('the matrix’s architecture column', () => {
  it('each row lists what its reports recorded, each once, sorted, unrecorded last', async () => {
    const guest = await offline('vz-guest-m1-ultra-tahoe-stock', 'M1 Ultra');
    const bare = await offline('m1-ultra-bare-metal', 'M1 Ultra');
    const m = buildMatrix([guest, reporting(guest, 'applegpu_g13d'), reporting(guest, 'applegpu_g13d'), bare]);
    // The same report twice counts once.
    expect(m.duplicates).toHaveLength(1);
    expect(m.rows.map((r) => [r.guestOs, r.architectures])).toEqual([
      ['macOS 26.5.2 (VirtualMac2,1)', ['applegpu_g13d', null]],
      ['macOS 26.6.1 (bare metal)', ['applegpu_g13d']],
    ]);
    expect(matrixMarkdown(m).split('\n').slice(0, 4)).toEqual([
      '| Host | Guest OS | Architecture | apple7 | Proven profile (doctor) | Faults (doctor) | Speed-up (bench) | Fidelity (bench) |',
      '| --- | --- | --- | --- | --- | --- | --- | --- |',
      '| M1 Ultra | macOS 26.5.2 (VirtualMac2,1) | applegpu\\_g13d, unrecorded | predicted offline (2); gates: reduction, mm, bfloat | – | – | – | – |',
      '| M1 Ultra | macOS 26.6.1 (bare metal) | applegpu\\_g13d | predicted offline (1); gates: reduction, mm, bfloat | – | – | – | – |',
    ]);
  });

  it('a matrix made before the column existed reads with – there; a damaged one is refused, naming the field', async () => {
    const m = buildMatrix([await offline('github-macos-14-arm64-runner', 'runner')]);
    expect(m.rows[0]!.architectures).toEqual([null]);
    const { architectures: _gone, ...old } = m.rows[0]!;
    expect(matrixMarkdown({ ...m, rows: [old] }).split('\n')[2]).toMatch(
      /^\| runner \| macOS 14\.5 \(VirtualMac2,1\) \| – \| /,
    );
    const damaged = { ...m, rows: [{ ...m.rows[0]!, architectures: [7] }] } as unknown as Matrix;
    const e = (() => {
      try {
        matrixMarkdown(damaged);
      } catch (err) {
        return err as InvalidOptionsError;
      }
      return null;
    })();
    expect([e?.code, e?.option]).toEqual(['ERR_INVALID_OPTIONS', 'rows[0].architectures[0]']);
  });

  it('architecturesText: the names, unrecorded for none recorded, – for none at all', () => {
    expect([
      architecturesText(['applegpu_g13d', null]),
      architecturesText([null]),
      architecturesText([]),
      architecturesText(undefined),
    ]).toEqual(['applegpu_g13d, unrecorded', 'unrecorded', '–', '–']);
  });
});
