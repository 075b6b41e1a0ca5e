import { hostLine, plural, profileLine, table, type Styler } from './text.js';
import { inert } from '../core/escape.js';
import { JUDGEMENTS, type RecordedStatus } from '../doctor/probes.js';
import type { DoctorDevice, DoctorReport, MeasuredField, ProbeDifference } from '../doctor/types.js';

function sourceLine(r: DoctorReport): string {
  if (r.source === 'snapshot') return `snapshot ${r.snapshot} (recorded result, replayed: nothing ran)`;
  if (r.source === 'simulated') return `simulated Metal, snapshot ${r.snapshot ?? 'none'}`;
  if (r.source === 'live') return 'live Metal';
  return 'no Metal';
}

function statusText(status: RecordedStatus | undefined, s: Styler): string {
  if (status === undefined) return '–';
  const judgement = JUDGEMENTS[status].judgement;
  if (judgement === 'proven') return s.good(status);
  if (judgement === 'faulty') return s.bad(status);
  return s.dim(status);
}

const ms = (v: number | null) => (v === null ? '–' : v.toFixed(1));

function measuredText(field: MeasuredField, bytes: number | null): string {
  if (field === 'provenThreadgroupMemory') return bytes === null ? 'no size proven' : `proven ${bytes} bytes`;
  if (field === 'acceptedThreadgroupMemory') return bytes === null ? 'no size accepted' : `accepted ${bytes} bytes`;
  return bytes === null ? 'no size failed' : `failed from ${bytes} bytes`;
}

/** One run's side of a difference: its status when the statuses differ, and the measurements that differ. */
function sideText(diff: ProbeDifference, side: 'stock' | 'patched'): string {
  const measured = diff.measured.map((m) => measuredText(m.field, m[side])).join(', ');
  if (diff.stock === diff.patched) return measured;
  return measured === '' ? diff[side] : `${diff[side]} (${measured})`;
}

function formatDevice(d: DoctorDevice, r: DoctorReport, s: Styler): string[] {
  const candidate = r.candidateProfile.name ?? 'the candidate profile';
  const lines = ['', `${s.bold(`Device ${d.index}${d.isDefault ? ' (default)' : ''}`)}: ${d.name} [${d.className}]`];
  const rows: string[][] = [
    [
      s.dim('probe'),
      s.dim('result'),
      s.dim('stock'),
      s.dim('patched'),
      s.dim('ms'),
      s.dim('compile ms'),
      s.dim('detail'),
    ],
  ];
  for (const p of d.probes) {
    rows.push([
      p.id,
      statusText(p.status, s),
      statusText(p.stock?.status, s),
      statusText(p.patched?.status, s),
      ms(p.ms),
      ms(p.compileMs),
      p.detail,
    ]);
  }
  lines.push(table(rows));
  for (const diff of d.differences) {
    lines.push(
      `  ${s.warn('≠')} ${diff.id}: ${sideText(diff, 'stock')} with stock answers, ${sideText(diff, 'patched')} under ${candidate}: Metal's behaviour depends on what the device answers`,
    );
  }
  const name = d.verifiedProfile.name ? `${d.verifiedProfile.name} — ` : '';
  lines.push(`  ${s.bold('Verified profile:')} ${name}${profileLine(d.verifiedProfile)}`);
  for (const reason of d.verifiedProfileReasons) lines.push(`    · ${reason}`);
  if (d.recommendations.length === 0) {
    lines.push(`  ${s.bold('Recommendations:')} none`);
  } else {
    lines.push(`  ${s.bold('Recommendations:')}`);
    for (const rec of d.recommendations) lines.push(`    ${s.warn('!')} ${rec.engine}: ${rec.setting} — ${rec.why}`);
  }
  const replayed =
    r.replayed && d.faults.length ? ` (recorded in snapshot ${r.snapshot ?? ''} and replayed: not measured now)` : '';
  lines.push(`  ${s.bold('Faults:')} ${d.faults.length ? s.bad(d.faults.join(', ')) : 'none found'}${replayed}`);
  return lines;
}

/** The human-readable doctor output. */
export function formatDoctor(untrusted: DoctorReport, s: Styler): string {
  // A replayed recording holds other people's strings: printed, a control character only shows.
  const r = inert(untrusted);
  const lines = [`${s.bold('metal-cap-shim doctor')} — ${sourceLine(r)}`];
  if (!r.supported) {
    lines.push(`${s.warn('not supported')}: ${r.reason}: ${r.detail}`);
    lines.push('Offline: metal-cap-shim doctor --snapshot github-macos-14-arm64-runner');
    return lines.join('\n');
  }
  lines.push(`Host: ${hostLine(r.host)}`);
  const candidate = r.candidateProfile.name ?? 'custom profile';
  lines.push(
    r.patchedRun.ran ? `Patched runs: under ${candidate}, then restored` : `Patched runs: none (${r.patchedRun.why})`,
  );
  // Reports written before the field existed have none.
  for (const w of r.candidateWarnings ?? []) lines.push(`  ${s.warn('!')} ${w.message} ${s.dim(`[${w.code}]`)}`);
  for (const d of r.devices) lines.push(...formatDevice(d, r, s));
  if (r.restore?.conflicts.length) {
    lines.push(
      '',
      s.warn(
        `Restore left ${plural(r.restore.conflicts.length, 'hook', 'hooks')} under another library's: ${r.restore.conflicts.map((c) => `${c.className} ${c.selector}`).join(', ')}`,
      ),
    );
  }
  if (r.cache?.error) lines.push('', s.warn(r.cache.error));
  return lines.join('\n');
}
