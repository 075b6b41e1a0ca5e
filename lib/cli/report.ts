import { checkBenchResult } from '../bench/result.js';
import { FileError } from '../core/errors.js';
import { JSON_LIMITS, jsonDepth, readJsonFile } from '../core/jsonfile.js';
import { formatBench } from '../format/bench.js';
import { formatDoctor } from '../format/doctor.js';
import { fieldReport } from '../audit/field-report.js';
import { formatAudit } from '../format/text.js';
import { inert, jsonText } from '../core/escape.js';
import { DEFAULT_PROFILE } from '../patch/profiles.js';
import { mmapOptions } from './doctor-options.js';
import { progressLine } from './progress.js';
import { profileArgument, profileHelp } from './profile-option.js';
import { EXIT, out, outText, styler, text, type Command } from './shared.js';
import { bundledSnapshotsHelp } from './snapshot-help.js';

const command: Command = {
  help: () => `Usage: metal-cap-shim report [--profile P] [--snapshot S] [--host-label TEXT] [--force] [--json]
                             [--mmap-file F | --mmap-size BYTES] [--allow-above-hardware] [--no-doctor]
                             [--bench FILE]…

  ${profileHelp(19)}
                     On a Mac it is applied in this process, verified and restored.
  --snapshot S       report on a recorded snapshot (bundled name or .json path) instead, offline, on any OS
  --host-label TEXT  the physical host, e.g. "M1 Ultra, macOS 26.6.1" (a guest cannot see it)
  --force            allow raising answers on a host that is not a VM
  --json             the report as JSON (schema metal-cap-shim/field-report@1): attach it to an issue
  --mmap-file F      doctor maps your model file (read only) to test the NoCopy path, instead of a generated file
  --mmap-size BYTES  size of doctor's generated file (default 1G)
  --allow-above-hardware
                     doctor also dispatches threadgroup sizes above what the GPU can prove (see doctor --help)
  --no-doctor        leave doctor's results out (they are in by default; see metal-cap-shim doctor --help)
  --bench FILE       attach a result of \`metal-cap-shim bench --json\` (speed or fidelity); give it once per file
Exit code ${EXIT.ok} when the report was collected: a refusal or a failed verification is recorded in it, as data;
${EXIT.noMetal} where there is nothing to report on (no Metal, no device).

${bundledSnapshotsHelp()}`,
  options: {
    profile: { type: 'string' },
    snapshot: { type: 'string' },
    'host-label': { type: 'string' },
    force: { type: 'boolean' },
    json: { type: 'boolean' },
    'mmap-file': { type: 'string' },
    'mmap-size': { type: 'string' },
    'allow-above-hardware': { type: 'boolean' },
    'no-doctor': { type: 'boolean' },
    bench: { type: 'string', multiple: true },
  },
  async run({ values }) {
    const snapshot = text(values, 'snapshot');
    const hostLabel = text(values, 'host-label');
    const profile = text(values, 'profile');
    // A live doctor takes seconds: a terminal sees which probe runs (not with --json, whose stdout may be a file).
    const live = snapshot === undefined && values['no-doctor'] !== true;
    const progress = live && !values.json && process.stderr.isTTY ? progressLine(process.stderr) : undefined;
    // Each file read and checked before anything runs: a bad one is a usage error naming it.
    const benchFiles = values.bench === undefined ? [] : (values.bench as string[]);
    const bench = benchFiles.map((file) => {
      const read = readJsonFile(file);
      if (!read.ok) throw new FileError(`--bench ${file} ${read.problem}`);
      return checkBenchResult(read.value, file);
    });
    const report = await fieldReport({
      ...(bench.length > 0 ? { bench } : {}),
      ...(progress !== undefined ? { onProgress: progress.show } : {}),
      profile: profile !== undefined ? profileArgument(profile) : DEFAULT_PROFILE,
      force: values.force === true,
      ...mmapOptions(values),
      ...(values['allow-above-hardware'] === true ? { allowAboveHardware: true } : {}),
      ...(values['no-doctor'] === true ? { doctor: false } : {}),
      ...(snapshot !== undefined ? { snapshot } : {}),
      ...(hostLabel !== undefined ? { hostLabel } : {}),
    }).finally(() => progress?.done());
    if (values.json) out(readableBack(jsonText(report, 2)));
    else {
      const s = styler();
      // The label is the reporter's own text: printed, a control character only shows.
      const shown = inert({ hostLabel: report.hostLabel, generatedAt: report.generatedAt });
      outText(
        [
          `${s.bold('metal-cap-shim field report')} ${report.packageVersion} · ${report.generatedAt} · Node ${report.node}`,
          shown.hostLabel ? `Physical host: ${shown.hostLabel}` : 'Physical host: not given (--host-label)',
          '',
          formatAudit(report.audit, s),
          ...(report.doctor ? ['', formatDoctor(report.doctor, s)] : []),
          ...(report.bench ?? []).flatMap((b) => ['', formatBench(b, s)]),
          '',
          s.dim('Attach `metal-cap-shim report --json --host-label "…"` output to an issue.'),
        ].join('\n'),
      );
    }
    // Collecting is the job: the report was written, with a refusal or a failed verification recorded in it as data.
    return EXIT.ok;
  },
};

/**
 * The report as printed, when `matrix` can read it back (JSON_LIMITS, the bound every reader shares, in bytes and
 * nesting): a larger or deeper one, made of bench results near the bound, is refused rather than written unreadable.
 */
function readableBack(json: string): string {
  const bytes = Buffer.byteLength(json) + 1;
  if (bytes > JSON_LIMITS.maxBytes)
    throw new FileError(
      `the report would be ${bytes} bytes, more than the ${JSON_LIMITS.maxBytes} that matrix reads back: attach fewer --bench files, or results of fewer rounds`,
    );
  // A bench result sits two levels down (bench[i]): one that nests nearly to the bound would make a report past it.
  if (jsonDepth(json, JSON_LIMITS.maxDepth) > JSON_LIMITS.maxDepth)
    throw new FileError(
      `the report would nest more than the ${JSON_LIMITS.maxDepth} levels that matrix reads back: attach bench results as \`bench --json\` wrote them`,
    );
  return json;
}

export default command;
