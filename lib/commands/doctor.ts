/** `metal-cap-shim doctor`: parses its flags, runs or replays doctor, prints the result. */
import { parseArgs } from 'node:util';
import { doctor, type DoctorOptions } from '../doctor.js';
import { formatDoctor } from '../doctor/format.js';
import { MMAP_SIZE, TIMEOUT_MS } from '../doctor/probes.js';
import { UsageError } from '../errors.js';
import type { Styler } from '../format.js';
import { DEFAULT_PROFILE } from '../profiles.js';

/** What a command needs from the CLI around it. */
export interface CommandContext {
  out: (line: string) => void;
  exit: { ok: number; failure: number };
  styler: () => Styler;
}

export const DOCTOR_HELP = `Usage: metal-cap-shim doctor [--json] [--profile P] [--mmap-file FILE | --mmap-size BYTES] [--device N]
                            [--timeout-ms N] [--force] [--snapshot NAME|PATH]

Runs real Metal work on each device: SIMD-group reduction and matrix, bfloat, threadgroup memory, a GPU read
through a NoCopy buffer over a file-backed mmap, and a residency set. Each result is checked against the CPU.
The capability probes run with stock answers, then again with the profile installed; then it is taken out.
Prints each device's verified profile (what metal-cap-shim profile auto applies) and the engine settings that
avoid the faults found.

  --json             machine-readable result (schema metal-cap-shim/doctor@1)
  --profile P        the profile to run the capability probes under a second time (default ${DEFAULT_PROFILE})
  --mmap-file FILE   map this file (e.g. your model), read only, instead of a generated one
  --mmap-size BYTES  size of the generated file, deleted after (default 1G; ${MMAP_SIZE.min} to 64G, a multiple of
                     ${MMAP_SIZE.multipleOf}; K, M and G suffixes are binary)
  --device N         only device N (MTLCopyAllDevices order)
  --timeout-ms N     deadline per probe (default ${TIMEOUT_MS.default}; ${TIMEOUT_MS.min} to ${TIMEOUT_MS.max})
  --force            on a host that is not a VM, also run under a raising profile (hooks are removed after)
  --snapshot S       replay the result a snapshot records (bundled name or .json path), on any OS
Results are cached for profile auto. Exit code 1 when a probe found a fault or there is no Metal.`;

function wholeNumber(flag: string, text: string): number {
  if (!/^\d+$/.test(text)) throw new UsageError(`${flag} takes a whole number, got '${text}'\n\n${DOCTOR_HELP}`);
  return Number(text);
}

/** `1073741824`, `1024M`, `1G`: a byte count with an optional binary suffix. */
export function byteCount(flag: string, text: string): number {
  const m = /^(\d+)([KMG])?$/i.exec(text);
  if (!m) throw new UsageError(`${flag} takes a byte count such as 1073741824, 512M or 3G, got '${text}'\n\n${DOCTOR_HELP}`);
  const scale = { K: 2 ** 10, M: 2 ** 20, G: 2 ** 30 }[(m[2] ?? '').toUpperCase() as 'K' | 'M' | 'G'] ?? 1;
  return Number(m[1]) * scale;
}

/** Runs the command; returns the exit code. */
export function doctorCommand(argv: string[], ctx: CommandContext): number {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: argv,
      options: {
        json: { type: 'boolean' },
        profile: { type: 'string' },
        'mmap-file': { type: 'string' },
        'mmap-size': { type: 'string' },
        device: { type: 'string' },
        'timeout-ms': { type: 'string' },
        force: { type: 'boolean' },
        snapshot: { type: 'string' },
        help: { type: 'boolean' },
      },
      strict: true,
    }).values;
  } catch (e) {
    throw new UsageError(`${(e as Error).message}\n\n${DOCTOR_HELP}`);
  }
  if (values.help) {
    ctx.out(DOCTOR_HELP);
    return ctx.exit.ok;
  }
  const str = (k: string) => (typeof values[k] === 'string' ? (values[k] as string) : undefined);
  const options: DoctorOptions = {
    ...(str('profile') !== undefined ? { profile: str('profile') } : {}),
    ...(str('mmap-file') !== undefined ? { mmapFile: str('mmap-file') } : {}),
    ...(str('mmap-size') !== undefined ? { mmapSize: byteCount('--mmap-size', str('mmap-size')!) } : {}),
    ...(str('device') !== undefined ? { device: wholeNumber('--device', str('device')!) } : {}),
    ...(str('timeout-ms') !== undefined ? { timeoutMs: wholeNumber('--timeout-ms', str('timeout-ms')!) } : {}),
    ...(values.force === true ? { force: true } : {}),
    ...(str('snapshot') !== undefined ? { snapshot: str('snapshot') } : {}),
  };
  const report = doctor(options);
  ctx.out(values.json ? JSON.stringify(report, null, 2) : formatDoctor(report, ctx.styler()));
  const faulty = report.devices.some((d) => d.faults.length > 0);
  return report.supported && !faulty ? ctx.exit.ok : ctx.exit.failure;
}

/** The doctor part of `report`'s flags (`--mmap-file`, `--mmap-size`, `--no-doctor`) as fieldReport options. */
export function doctorReportOptions(values: Record<string, string | boolean | undefined>): {
  doctor?: boolean;
  mmapFile?: string;
  mmapSize?: number;
} {
  return {
    ...(values['no-doctor'] === true ? { doctor: false } : {}),
    ...(typeof values['mmap-file'] === 'string' ? { mmapFile: values['mmap-file'] } : {}),
    ...(typeof values['mmap-size'] === 'string' ? { mmapSize: byteCount('--mmap-size', values['mmap-size']) } : {}),
  };
}
