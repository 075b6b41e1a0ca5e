import type { AuditResult, EngineComparison } from '../audit/audit.js';
import { FAMILY_NAMES, familyLabel, type FamilyName } from '../core/families.js';
import { inert } from '../core/escape.js';
import { architectureText, plural } from '../core/words.js';
import { HOST_VALUE, type BuiltinProfile, type Profile } from '../patch/profiles.js';
import type { CapabilityReport, DeviceReport, HostInfo } from '../device/types.js';
import {
  configurationLabel,
  configurationText,
  LLAMA_CPP_OTHER_WORKLOADS,
  LLAMA_CPP_RULE_SET_INFO,
  MLX_ARCHITECTURE_FLAGS,
  ruleSetBuildRange,
  type LlamaCppThreadgroup,
  type MlxPrediction,
} from '../engines/index.js';
import { APPLE_GPU_THREADGROUP_MEMORY } from '../device/chips.js';
import { stylerFor, type Styler } from './style.js';

export { COLOR_MODES, colorWanted, stylerFor, type ColorMode, type Styler } from './style.js';

export { plural };

/** A styler that never styles (for tests and files). */
export const plain: Styler = stylerFor({ isTTY: false }, {});

/** `12.0 GiB` style sizes, with the exact byte count alongside where it matters. */
export function bytes(n: number | null): string {
  if (n === null) return 'unknown';
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} bytes` : `${n} (${v.toFixed(v >= 100 ? 0 : 1)} ${units[u]})`;
}

// eslint-disable-next-line no-control-regex
const visibleLength = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '').length;

/** The width of each column position over every table given: sub-tables printed one under another keep one width. */
export function columnWidths(tables: readonly (readonly string[][])[]): number[] {
  const widths: number[] = [];
  for (const rows of tables) {
    for (const row of rows) {
      row.forEach((cell, i) => {
        widths[i] = Math.max(widths[i] ?? 0, visibleLength(cell));
      });
    }
  }
  return widths;
}

/** Table rows padded into columns (`widths`: columnWidths of the tables it is printed with; its own by default). */
export function table(rows: string[][], indent = '  ', widths = columnWidths([rows])): string {
  return rows
    .map((row) =>
      (
        indent +
        row
          .map((cell, i) => (i === row.length - 1 ? cell : cell + ' '.repeat((widths[i] ?? 0) - visibleLength(cell))))
          .join('  ')
      ).trimEnd(),
    )
    .join('\n');
}

/** `Apple1–5, Common1–3, Metal3`: the families answered YES, with runs collapsed. */
export function familySummary(families: Record<FamilyName, boolean | null>): string {
  const groups = new Map<string, number[]>();
  for (const name of FAMILY_NAMES) {
    if (families[name] !== true) continue;
    const match = /^([a-zA-Z]+?)(\d+)$/.exec(name);
    const base = match ? match[1]! : name;
    const n = match ? Number(match[2]) : 0;
    groups.set(base, [...(groups.get(base) ?? []), n]);
  }
  const parts: string[] = [];
  for (const [base, ns] of groups) {
    const label = familyLabel(base as FamilyName);
    const contiguous = ns.every((n, i) => i === 0 || n === ns[i - 1]! + 1);
    if (ns.length > 2 && contiguous) parts.push(`${label}${ns[0]}–${ns[ns.length - 1]}`);
    else parts.push(ns.map((n) => `${label}${n}`).join(', '));
  }
  return parts.length ? parts.join(', ') : 'none';
}

/** One line about the host. */
export function hostLine(host: HostInfo | null): string {
  if (!host) return 'unknown host';
  const vm = host.isVirtualMachine === null ? 'VM: unknown' : host.isVirtualMachine ? 'virtual machine' : 'not a VM';
  const chip = host.chip ?? (host.cpuBrand === null ? 'chip unknown' : `chip unknown (${host.cpuBrand})`);
  return [
    host.model ?? 'model unknown',
    host.osVersion ? `macOS ${host.osVersion}` : 'macOS version unknown',
    host.arch ?? 'arch unknown',
    vm,
    chip,
  ].join(' · ');
}

const yesNo = (v: boolean | null) => (v === null ? 'unknown' : v ? 'yes' : 'no');

function deviceTitle(d: DeviceReport, s: Styler): string {
  return `${s.bold(`Device ${d.index}${d.isDefault ? ' (default)' : ''}`)}: ${d.name} [${d.className}]`;
}

/** The human-readable probe output. */
export function formatReport(untrusted: CapabilityReport, s: Styler): string {
  // A report read from a snapshot holds other people's strings: printed, a control character only shows.
  const report = inert(untrusted);
  const source =
    report.source === 'snapshot'
      ? `snapshot ${report.snapshot} (recorded, offline)`
      : report.source === 'simulated'
        ? `simulated Metal, snapshot ${report.snapshot ?? 'none'}`
        : report.source === 'live'
          ? 'live Metal'
          : 'no Metal';
  const lines = [`${s.bold('metal-cap-shim probe')} — ${source}`];
  if (!report.supported) {
    lines.push(`${s.warn('not supported')}: ${report.reason}: ${report.detail}`);
    if (report.reason === 'unsupported-platform')
      lines.push('Offline: metal-cap-shim probe --snapshot vz-guest-m1-ultra-tahoe-stock');
    return lines.join('\n');
  }
  lines.push(`Host: ${hostLine(report.host)}`);
  for (const d of report.devices) {
    lines.push('', deviceTitle(d, s));
    const simd = (f: DeviceReport['simd']['reduction']) => `${yesNo(f.value)}  ${s.dim(f.rule)}`;
    lines.push(
      table([
        ['Highest Apple family', d.highestAppleFamily ? familyLabel(d.highestAppleFamily.name) : 'none'],
        ['Families', familySummary(d.families)],
        ['Threadgroup memory', bytes(d.maxThreadgroupMemoryLength)],
        [
          'Threads per threadgroup',
          d.maxThreadsPerThreadgroup
            ? `${d.maxThreadsPerThreadgroup.width} × ${d.maxThreadsPerThreadgroup.height} × ${d.maxThreadsPerThreadgroup.depth}`
            : 'unknown',
        ],
        ['Working set', bytes(d.recommendedMaxWorkingSetSize)],
        ['Max buffer', bytes(d.maxBufferLength)],
        ['Unified memory', yesNo(d.hasUnifiedMemory)],
        ['Location', d.location ?? 'unknown'],
        ['Architecture', architectureText(d.architecture)],
        ['SIMD-group reduction', simd(d.simd.reduction)],
        ['SIMD-group matrix', simd(d.simd.matrix)],
        ['bfloat16', simd(d.simd.bfloat16)],
      ]),
    );
  }
  return lines.join('\n');
}

/** A profile's settings on one line. */
export function profileLine(p: Profile): string {
  const parts = [
    `mode ${p.mode}`,
    p.appleFamilyMax === null
      ? null
      : p.appleFamilyMax === HOST_VALUE
        ? 'Apple families up to the host chip’s true family'
        : `Apple families up to ${p.appleFamilyMax} (Apple${p.appleFamilyMax - 1000})`,
    p.maxThreadgroupMemoryLength === null ? null : `threadgroup memory ${p.maxThreadgroupMemoryLength}`,
    p.recommendedMaxWorkingSetSize === null ? null : `working set ${p.recommendedMaxWorkingSetSize}`,
    p.deviceName === null
      ? null
      : p.deviceName === HOST_VALUE
        ? 'name: the host chip’s'
        : `name ${JSON.stringify(p.deviceName)}`,
    Object.keys(p.families).length
      ? `families ${Object.entries(p.families)
          .map(([k, v]) => `${k}=${v ? 'YES' : 'NO'}`)
          .join(' ')}`
      : null,
    p.mlxArchitecture === undefined
      ? null
      : p.mlxArchitecture === HOST_VALUE
        ? 'MLX offered the host chip’s GPU architecture'
        : `MLX offered ${p.mlxArchitecture}`,
  ];
  return parts.filter(Boolean).join(', ');
}

/** The human-readable list of built-in profiles. */
export function formatProfiles(
  list: (BuiltinProfile & { aboveHardwareRefused?: readonly string[] })[],
  defaultName: string,
  s: Styler,
): string {
  return list
    .map((p) =>
      [
        `${s.bold(p.name)}${p.name === defaultName ? s.dim(' (default)') : ''} — ${p.summary}`,
        `  ${profileLine(p.profile)}${p.fallback === undefined ? '' : `; ${p.fallback} where the host’s chip is unknown`}`,
        `  why: ${p.rationale}`,
        `  source: ${p.source}`,
        `  risks: ${p.risks}`,
        ...(p.aboveHardwareRefused === undefined
          ? []
          : [`  refused above hardware: ${refusedText(p.aboveHardwareRefused)}`]),
      ].join('\n'),
    )
    .join('\n\n');
}

/** The llama.cpp rule sets a profile is refused for on a stock guest, with their releases, or that none is. */
function refusedText(ruleSets: readonly string[]): string {
  if (ruleSets.length === 0) return 'for no llama.cpp release on a stock guest';
  const info = LLAMA_CPP_RULE_SET_INFO as Readonly<Record<string, { releases: string }>>;
  const sets = ruleSets.map((r) => `${r} (${info[r]!.releases})`).join('; ');
  return `on a stock guest, for llama.cpp ${sets}; --allow-above-hardware applies it anyway`;
}

const show = (v: boolean | number | null | undefined, field = '') => {
  if (v === null || v === undefined) return 'unknown';
  if (typeof v === 'boolean') return field.startsWith('families.') ? (v ? 'YES' : 'NO') : String(v);
  return String(v);
};

/**
 * An engine's predicted value in audit's table. MLX's architectureName is the report's architecture.name, so where the
 * report holds none it has that fact's word; any other value that cannot be predicted is `unknown`.
 */
function engineValueText(flag: string, value: unknown): string {
  if (value !== null && value !== undefined) return String(value);
  return flag === 'architectureName' ? architectureText(null) : 'unknown';
}

/** Where MLX's architecture name comes from, stock and under the profile, and which values an offered name changes. */
function mlxArchitectureLine(before: MlxPrediction, after: MlxPrediction): string {
  const stock = `MLX parses ${before.flags.architectureName.reason}`;
  if (after.offeredArchitecture === null) return `${stock}; no architecture offered.`;
  const changed = MLX_ARCHITECTURE_FLAGS.filter((f) => before.flags[f].value !== after.flags[f].value);
  return `${stock}; offered: ${after.flags.architectureName.reason}; architecture-driven values that change: ${changed.length === 0 ? 'none' : changed.join(', ')}.`;
}

/** What llama.cpp does with the answered threadgroup memory: the configurations the patch changes, and those above every Apple GPU. */
function threadgroupLines(
  after: LlamaCppThreadgroup,
  t: NonNullable<EngineComparison['threadgroup']>,
  s: Styler,
): string[] {
  const lines = [`  ${s.dim(`Threadgroup memory: ${after.source}.`)}`];
  if (after.reads !== 'sizes') return lines;
  if (t.changed.length === 0) lines.push(`  ${s.dim('No configuration asks for a different threadgroup size.')}`);
  for (const c of t.changed) {
    const was = c.stockBytes === null ? 'not on the GPU' : `${c.stockBytes} bytes`;
    const now = c.patchedBytes === null ? 'not on the GPU' : `${c.patchedBytes} bytes`;
    const above = c.patchedBytes !== null && c.patchedBytes > APPLE_GPU_THREADGROUP_MEMORY;
    const text = `${configurationLabel(c)}: ${was} → ${now}`;
    lines.push(`  ${above ? s.warn(`! ${text} (above ${APPLE_GPU_THREADGROUP_MEMORY})`) : s.dim(text)}`);
  }
  const changed = new Set(t.changed.map((c) => configurationLabel(c)));
  for (const c of t.aboveHardware.filter((x) => !changed.has(configurationLabel(x))))
    lines.push(`  ${s.warn(`! ${configurationText(c)} (above ${APPLE_GPU_THREADGROUP_MEMORY}, stock too)`)}`);
  return lines;
}

/** The human-readable audit: every changed answer, engine flags before and after, verification, warnings, verdict. */
export function formatAudit(untrusted: AuditResult, s: Styler): string {
  const a = inert(untrusted);
  const where =
    a.mode === 'offline'
      ? `snapshot ${a.snapshot} (offline)`
      : `this machine (${a.snapshot ? `simulated, ${a.snapshot}` : 'live'})`;
  const lines = [
    `${s.bold('metal-cap-shim audit')} — profile ${a.profile.name ?? 'custom'} on ${where}`,
    `Host: ${hostLine(a.host)}`,
  ];
  for (const d of a.devices) {
    lines.push('', `${s.bold(`Device ${d.index}${d.isDefault ? ' (default)' : ''}`)}: ${d.name} [${d.className}]`);
    // The device's sub-tables (answers, then each engine's) with the lines between them, laid out once all are known
    // so that a column keeps one width down the whole block.
    const block: (string[][] | string)[] = [];
    const rows: string[][] = [[s.dim('answer'), s.dim('stock'), s.dim('patched')]];
    for (const name of FAMILY_NAMES) {
      const from = d.stock.families[name];
      const to = d.patched.families[name];
      if (from === to && !(name.startsWith('apple') && (from || to))) continue;
      const mark = from !== to ? s.warn(' *') : '';
      rows.push([`supportsFamily(${familyLabel(name)})`, show(from, 'families.'), show(to, 'families.') + mark]);
    }
    for (const field of ['maxThreadgroupMemoryLength', 'recommendedMaxWorkingSetSize'] as const) {
      const mark = d.stock[field] !== d.patched[field] ? s.warn(' *') : '';
      rows.push([field, bytes(d.stock[field]), bytes(d.patched[field]) + mark]);
    }
    if (d.stock.name !== d.patched.name) rows.push(['name', d.stock.name, d.patched.name + s.warn(' *')]);
    block.push(rows);
    for (const e of d.engines) {
      const before = e.before;
      const after = e.after;
      const label =
        before.engine === 'llama.cpp'
          ? `llama.cpp (${before.rules} rules: ${before.releases})`
          : `MLX (${before.rules} rules: ${before.releases})`;
      const rowsE: string[][] = [[s.dim(label), s.dim('stock'), s.dim('patched')]];
      const afterFlags = after.flags as Record<string, { value: unknown }>;
      const entries: [string, { value: unknown; reason: string }, { value: unknown }][] = Object.entries(
        before.flags as Record<string, { value: unknown; reason: string }>,
      ).map(([k, v]) => [k, v, afterFlags[k]!]);
      for (const [flag, b, aft] of entries) {
        const changed = b.value !== aft.value;
        const to = engineValueText(flag, aft.value);
        rowsE.push([
          flag,
          engineValueText(flag, b.value),
          changed ? (aft.value === true ? s.good(to) : s.warn(to)) + s.warn(' *') : to,
        ]);
      }
      block.push(rowsE);
      if (before.engine === 'mlx' && after.engine === 'mlx')
        block.push(`  ${s.dim(mlxArchitectureLine(before, after))}`);
      if (after.engine === 'llama.cpp') {
        block.push(`  ${s.dim(after.consequences.summary)}`, `  ${s.dim(LLAMA_CPP_OTHER_WORKLOADS)}`);
        if (after.tuning !== null)
          block.push(`  ${s.dim(`Flash-attention tuning: ${after.tuning.value.tier} (${after.tuning.reason}).`)}`);
        if (e.threadgroup !== null) block.push(...threadgroupLines(after.threadgroup, e.threadgroup, s));
      }
    }
    const widths = columnWidths(block.filter((part) => typeof part !== 'string'));
    for (const part of block) lines.push(typeof part === 'string' ? part : table(part, '  ', widths));
  }
  // The b-numbers too, where the releases do not already give them: a release named by version (v0.5.0) and a build
  // named by b-number (b10167) are told apart here.
  const rules = a.llamaCppRules;
  const builds = ruleSetBuildRange(rules.rules);
  const releases = rules.releases.includes(builds) ? rules.releases : `${rules.releases}; b-numbers: ${builds}`;
  lines.push('', `llama.cpp rules: ${rules.rules} (${releases}): ${rules.detail}`);
  if (a.verification) {
    const v = (x: { ok: boolean; mismatches: unknown[] }) =>
      x.ok
        ? 'ok'
        : x.mismatches.length
          ? plural(x.mismatches.length, 'mismatch', 'mismatches')
          : 'the device list changed';
    lines.push('', `Verification: patched ${v(a.verification.apply)}, restored ${v(a.verification.restore)}`);
  }
  if (a.warnings.length) {
    lines.push('', s.bold('Warnings:'));
    for (const w of a.warnings) lines.push(`  ${s.warn('!')} ${w.message} ${s.dim(`[${w.code}]`)}`);
  }
  lines.push('', `${s.bold('Verdict:')} ${a.verdict.ok ? s.good(a.verdict.summary) : s.bad(a.verdict.summary)}`);
  return lines.join('\n');
}
