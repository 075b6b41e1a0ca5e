import { readFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { audit, type AuditResult } from './audit.js';
import { DOCTOR_HELP, doctorCommand, doctorReportOptions } from './commands/doctor.js';
import { formatDoctor } from './doctor/format.js';
import { profileForExec } from './doctor.js';
import { MetalCapShimError, RefusedError, UsageError } from './errors.js';
import { prepareExec, runWithInjector } from './exec.js';
import { familyLabel, FAMILY_NAMES } from './families.js';
import { buildMatrix, fieldReport, matrixMarkdown, packageVersion } from './fieldreport.js';
import { bytes, formatProfiles, formatReport, hostLine, stylerFor, table, type Styler } from './format.js';
import { ENGINES, type Engine, type LlamaCppRuleSet } from './gates.js';
import { probe, probeSnapshot } from './probe.js';
import { DEFAULT_PROFILE, profiles, resolveProfile } from './profiles.js';

/** Exit codes, as documented in the README. */
export const EXIT = { ok: 0, failure: 1, usage: 2, refused: 3 } as const;

/** Errors that mean the command line asked for something that does not exist or cannot be read: exit 2. */
const USAGE_CODES = new Set([
  'ERR_USAGE',
  'ERR_INVALID_PROFILE',
  'ERR_INVALID_OPTIONS',
  'ERR_SNAPSHOT_NOT_FOUND',
  'ERR_INVALID_SNAPSHOT',
  'ERR_INVALID_REPORT',
  'ERR_FILE',
  'ERR_TRACE_FILE',
]);

const out = (s: string) => process.stdout.write(`${s}\n`);
const err = (s: string) => process.stderr.write(`${s}\n`);

const HELP: Record<string, string> = {
  main: `metal-cap-shim — probe Apple Metal device capabilities and patch them inside one process

Usage: metal-cap-shim <command> [options]

Commands:
  probe      what Metal reports here (or in a recorded snapshot)
  audit      stock vs a profile: changed answers, engine flags before/after, warnings, verdict
  exec       run a program with a profile injected into it
  report     a field report to attach to an issue
  matrix     merge field reports into a host × guest OS × profile table
  profiles   the built-in profiles and why they exist
  doctor     run real Metal work on each device: what is proven, the faults, the verified profile

Options: --help (also after a command), --version
Exit codes: 0 ok, 1 failure, 2 usage, 3 refused`,
  probe: `Usage: metal-cap-shim probe [--json] [--all-devices] [--snapshot NAME|PATH]

  --json           machine-readable report (schema metal-cap-shim/report@1)
  --all-devices    every device, not only the default one
  --snapshot S     a recorded snapshot (bundled name or .json path) instead of this machine; works on any OS`,
  audit: `Usage: metal-cap-shim audit [--profile P] [--snapshot S] [--engine E] [--rules R] [--force] [--json]

  --profile P      built-in name or JSON (default ${DEFAULT_PROFILE})
  --snapshot S     audit a recorded snapshot offline (any OS); without it the profile is applied in this
                   process, verified and restored (macOS)
  --engine E       llama.cpp, mlx or all (default all)
  --rules R        llama.cpp rule generation: current or legacy (default current)
  --force          allow raising answers on a host that is not a VM
  --json           machine-readable result (schema metal-cap-shim/audit@1)
Exit code 3 when the profile would be refused on that host.`,
  exec: `Usage: metal-cap-shim exec [--profile P] [--trace FILE] [--force] [--allow-unpatched] [--json] -- command [args…]

  --profile P        built-in name, JSON, or auto (the verified profile of doctor, resolved before the program
                     starts); default: METAL_CAP_SHIM_PROFILE if set, else ${DEFAULT_PROFILE}
  --trace FILE       write what the program asked and what it was told to FILE (JSON) at exit; a second
                     process that uses Metal (one the program started) writes FILE.<pid>
  --force            allow raising answers on a host that is not a VM
  --allow-unpatched  run even when macOS would strip the injection (SIP-protected programs and scripts)
  --json             after the program ends, one JSON line on stderr: exit code, signal, whether the injector
                     loaded (and which slice), the patched classes, warnings
The program's exit code is passed through; if it dies from a signal, that is reported and re-raised.
Nothing is printed into the program's output; notices from metal-cap-shim go to stderr.`,
  report: `Usage: metal-cap-shim report [--profile P] [--snapshot S] [--host-label TEXT] [--force] [--json]
                             [--mmap-file F | --mmap-size BYTES] [--no-doctor]

  --profile P        built-in name or JSON (default ${DEFAULT_PROFILE}); on a Mac it is applied in this process,
                     verified and restored
  --snapshot S       report on a recorded snapshot (bundled name or .json path) instead, offline, on any OS
  --host-label TEXT  the physical host, e.g. "M1 Ultra, macOS 26.6.1" (a guest cannot see it)
  --force            allow raising answers on a host that is not a VM
  --json             the report as JSON (schema metal-cap-shim/field-report@1): attach it to an issue
  --mmap-file F      doctor maps your model file (read only) to test the NoCopy path, instead of a generated file
  --mmap-size BYTES  size of doctor's generated file (default 1G)
  --no-doctor        leave doctor's results out (they are included by default; see metal-cap-shim doctor --help)
Exit code 3 when the profile would be refused on that host.`,
  matrix: `Usage: metal-cap-shim matrix [--json] FILE…

Merges field reports (metal-cap-shim report --json) into a host × guest OS × profile table (Markdown, or JSON).`,
  profiles: `Usage: metal-cap-shim profiles [--json]`,
  doctor: DOCTOR_HELP,
};

type Values = Record<string, string | boolean | undefined>;

function parse(command: string, argv: string[], options: ParseArgsConfig['options'], positionals = false) {
  try {
    const parsed = parseArgs({ args: argv, options: { ...options, help: { type: 'boolean' } }, allowPositionals: positionals, strict: true });
    return { values: parsed.values as Values, positionals: parsed.positionals };
  } catch (e) {
    throw new UsageError(`${(e as Error).message}\n\n${HELP[command]}`);
  }
}

function styler(): Styler {
  return stylerFor(process.stdout);
}

function printJson(value: unknown) {
  out(JSON.stringify(value, null, 2));
}

function engineList(value: string | undefined): Engine[] {
  if (value === undefined || value === 'all') return [...ENGINES];
  if (!(ENGINES as readonly string[]).includes(value)) {
    throw new UsageError(`--engine must be ${ENGINES.join(', ')} or all, got '${value}'\n\n${HELP.audit}`);
  }
  return [value as Engine];
}

function rulesOf(value: string | undefined): LlamaCppRuleSet {
  if (value === undefined) return 'current';
  if (value !== 'current' && value !== 'legacy') {
    throw new UsageError(`--rules must be current or legacy, got '${value}'\n\n${HELP.audit}`);
  }
  return value;
}

function cmdProbe(argv: string[]): number {
  const { values } = parse('probe', argv, {
    json: { type: 'boolean' },
    'all-devices': { type: 'boolean' },
    snapshot: { type: 'string' },
  });
  if (values.help) return help('probe');
  const opts = { allDevices: values['all-devices'] === true };
  const report = typeof values.snapshot === 'string' ? probeSnapshot(values.snapshot, opts) : probe(opts);
  if (values.json) printJson(report);
  else out(formatReport(report, styler()));
  return report.supported ? EXIT.ok : EXIT.failure;
}

const show = (v: boolean | number | null | undefined, field = '') => {
  if (v === null || v === undefined) return 'unknown';
  if (typeof v === 'boolean') return field.startsWith('families.') ? (v ? 'YES' : 'NO') : String(v);
  return String(v);
};

function formatAudit(a: AuditResult, s: Styler): string {
  const where = a.mode === 'offline' ? `snapshot ${a.snapshot} (offline)` : `this machine (${a.snapshot ? `simulated, ${a.snapshot}` : 'live'})`;
  const lines = [
    `${s.bold('metal-cap-shim audit')} — profile ${a.profile.name ?? 'custom'} on ${where}`,
    `Host: ${hostLine(a.host)}`,
  ];
  for (const d of a.devices) {
    lines.push('', `${s.bold(`Device ${d.index}${d.isDefault ? ' (default)' : ''}`)}: ${d.name} [${d.className}]`);
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
    lines.push(table(rows));
    for (const e of d.engines) {
      const before = e.before;
      const after = e.after;
      const label = before.engine === 'llama.cpp' ? `llama.cpp (${before.rules} rules)` : 'MLX';
      const rowsE: string[][] = [[s.dim(label), s.dim('stock'), s.dim('patched')]];
      const entries: [string, { value: unknown; reason: string }, { value: unknown }][] =
        before.engine === 'llama.cpp' && after.engine === 'llama.cpp'
          ? Object.entries(before.flags).map(([k, v]) => [k, v, (after.flags as Record<string, { value: unknown }>)[k]!])
          : before.engine === 'mlx' && after.engine === 'mlx'
            ? [
                ['residencySets', before.residencySets, after.residencySets],
                ['architectureGeneration', before.architectureGeneration, after.architectureGeneration],
                ['allocatorLimitBytes', before.allocatorLimitBytes, after.allocatorLimitBytes],
              ]
            : [];
      for (const [flag, b, aft] of entries) {
        const changed = b.value !== aft.value;
        const to = String(aft.value ?? 'unknown');
        rowsE.push([flag, String(b.value ?? 'unknown'), changed ? (aft.value === true ? s.good(to) : s.warn(to)) + s.warn(' *') : to]);
      }
      lines.push(table(rowsE));
      if (after.engine === 'llama.cpp') lines.push(`  ${s.dim(after.consequences.summary)}`);
    }
  }
  if (a.verification) {
    const v = (x: { ok: boolean; mismatches: unknown[] } | null) => (x === null ? 'not run' : x.ok ? 'ok' : `${x.mismatches.length} mismatches`);
    lines.push('', `Verification: patched ${v(a.verification.apply)}, restored ${v(a.verification.restore)}`);
  }
  if (a.warnings.length) {
    lines.push('', s.bold('Warnings:'));
    for (const w of a.warnings) lines.push(`  ${s.warn('!')} ${w.message} ${s.dim(`[${w.code}]`)}`);
  }
  lines.push('', `${s.bold('Verdict:')} ${a.verdict.ok ? s.good(a.verdict.summary) : s.bad(a.verdict.summary)}`);
  return lines.join('\n');
}

function cmdAudit(argv: string[]): number {
  const { values } = parse('audit', argv, {
    profile: { type: 'string' },
    snapshot: { type: 'string' },
    engine: { type: 'string' },
    rules: { type: 'string' },
    force: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  if (values.help) return help('audit');
  const engines = engineList(values.engine as string | undefined);
  const rules = rulesOf(values.rules as string | undefined);
  const profile = resolveProfile((values.profile as string | undefined) ?? DEFAULT_PROFILE);
  const result = audit({
    profile,
    engines,
    rules,
    force: values.force === true,
    ...(typeof values.snapshot === 'string' ? { snapshot: values.snapshot } : {}),
  });
  if (values.json) printJson(result);
  else out(formatAudit(result, styler()));
  if (result.refused) return EXIT.refused;
  return result.verdict.ok ? EXIT.ok : EXIT.failure;
}

async function cmdExec(argv: string[]): Promise<number> {
  const dash = argv.indexOf('--');
  const own = dash === -1 ? argv : argv.slice(0, dash);
  const { values } = parse('exec', own, {
    profile: { type: 'string' },
    trace: { type: 'string' },
    force: { type: 'boolean' },
    'allow-unpatched': { type: 'boolean' },
    json: { type: 'boolean' },
  });
  if (values.help) return help('exec');
  const rest = dash === -1 ? [] : argv.slice(dash + 1);
  if (rest.length === 0) throw new UsageError(`exec needs a command after \`--\`\n\n${HELP.exec}`);
  const profile = profileForExec(values.profile as string | undefined, process.env, values.force === true);
  const options = {
    profile,
    command: rest[0]!,
    args: rest.slice(1),
    force: values.force === true,
    allowUnpatched: values['allow-unpatched'] === true,
    ...(typeof values.trace === 'string' ? { traceFile: values.trace } : {}),
  };
  const prepared = prepareExec(options);
  const outcome = await runWithInjector(options, prepared.injector, prepared.warnings);
  // The program owns stdout; the summary for scripts goes to stderr, after it has finished.
  if (values.json) err(JSON.stringify({ schema: 'metal-cap-shim/exec@1', command: options.command, ...outcome }));
  if (!outcome.injectorLoaded) {
    err(`metal-cap-shim: the shim did not load into ${options.command}, so it ran unpatched (the loader dropped ${process.platform === 'darwin' ? 'DYLD_INSERT_LIBRARIES' : 'LD_PRELOAD'}; on macOS: SIP, a hardened runtime without the allow-dyld-environment-variables entitlement, or a platform binary)`);
  }
  for (const e of outcome.injectorErrors) err(`metal-cap-shim: injector error: ${e}`);
  if (outcome.signal) {
    err(`metal-cap-shim: ${options.command} was killed by ${outcome.signal}`);
    // Die the same way, so a parent shell sees the signal, not an ordinary exit. Node ignores a few signals
    // (SIGPIPE), so if we are still here, exit the way a shell reports a signal death: 128 + its number.
    process.kill(process.pid, outcome.signal);
    return 128 + (osConstants.signals[outcome.signal] ?? 0);
  }
  return outcome.exitCode ?? EXIT.failure;
}

function cmdReport(argv: string[]): number {
  const { values } = parse('report', argv, {
    profile: { type: 'string' },
    snapshot: { type: 'string' },
    'host-label': { type: 'string' },
    force: { type: 'boolean' },
    json: { type: 'boolean' },
    'mmap-file': { type: 'string' },
    'mmap-size': { type: 'string' },
    'no-doctor': { type: 'boolean' },
  });
  if (values.help) return help('report');
  const report = fieldReport({
    profile: (values.profile as string | undefined) ?? DEFAULT_PROFILE,
    force: values.force === true,
    ...doctorReportOptions(values),
    ...(typeof values.snapshot === 'string' ? { snapshot: values.snapshot } : {}),
    ...(typeof values['host-label'] === 'string' ? { hostLabel: values['host-label'] } : {}),
  });
  if (values.json) printJson(report);
  else {
    const s = styler();
    out(
      [
        `${s.bold('metal-cap-shim field report')} ${report.packageVersion} · ${report.generatedAt} · Node ${report.node}`,
        report.hostLabel ? `Physical host: ${report.hostLabel}` : 'Physical host: not given (--host-label)',
        '',
        formatAudit(report.audit, s),
        ...(report.doctor ? ['', formatDoctor(report.doctor, s)] : []),
        '',
        s.dim('Attach `metal-cap-shim report --json --host-label "…"` output to an issue.'),
      ].join('\n'),
    );
  }
  if (report.audit.refused) return EXIT.refused;
  return report.audit.verdict.ok ? EXIT.ok : EXIT.failure;
}

function cmdMatrix(argv: string[]): number {
  const { values, positionals } = parse('matrix', argv, { json: { type: 'boolean' } }, true);
  if (values.help) return help('matrix');
  if (positionals.length === 0) throw new UsageError(`matrix needs at least one report file\n\n${HELP.matrix}`);
  const reports = positionals.map((file) => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new MetalCapShimError('ERR_FILE', `cannot read ${file}: ${(e as Error).message}`);
    }
    try {
      return { where: file, report: JSON.parse(text) as unknown };
    } catch (e) {
      throw new MetalCapShimError('ERR_FILE', `${file} is not JSON: ${(e as Error).message}`);
    }
  });
  const matrix = buildMatrix(reports);
  if (values.json) printJson(matrix);
  else out(matrixMarkdown(matrix));
  return EXIT.ok;
}

function cmdProfiles(argv: string[]): number {
  const { values } = parse('profiles', argv, { json: { type: 'boolean' } });
  if (values.help) return help('profiles');
  const list = Object.values(profiles);
  if (values.json) printJson({ default: DEFAULT_PROFILE, profiles: list });
  else out(formatProfiles(list, DEFAULT_PROFILE, styler()));
  return EXIT.ok;
}

function help(topic: string): number {
  out(HELP[topic] ?? HELP.main!);
  return EXIT.ok;
}

const COMMANDS: Record<string, (argv: string[]) => number | Promise<number>> = {
  probe: cmdProbe,
  audit: cmdAudit,
  exec: cmdExec,
  report: cmdReport,
  matrix: cmdMatrix,
  profiles: cmdProfiles,
  doctor: (argv) => doctorCommand(argv, { out, exit: EXIT, styler }),
};

/** Runs the CLI with `argv` (without node and script) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      if (command === undefined) {
        err(HELP.main!);
        return EXIT.usage;
      }
      return help(rest[0] ?? 'main');
    }
    if (command === '--version' || command === '-v') {
      out(packageVersion());
      return EXIT.ok;
    }
    const run = COMMANDS[command];
    if (!run) throw new UsageError(`unknown command '${command}'\n\n${HELP.main}`);
    return await run(rest);
  } catch (e) {
    if (e instanceof MetalCapShimError) {
      err(`metal-cap-shim: ${e.code}: ${e.message}`);
      if (USAGE_CODES.has(e.code)) return EXIT.usage;
      if (e instanceof RefusedError) return EXIT.refused;
      if (e.code === 'ERR_COMMAND_NOT_FOUND') return 127;
      return EXIT.failure;
    }
    throw e;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    err(`metal-cap-shim: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exitCode = EXIT.failure;
  },
);
