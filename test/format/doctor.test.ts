// doctor's human output, as whole strings: a replayed recording, a run with stock and patched runs on two devices,
// and the report where nothing could run. The styles are shown as tags, so the colour of each part is pinned too.
import { describe, expect, it } from 'vitest';
import { doctor } from '../../lib/doctor/index.js';
import { assessDevice } from '../../lib/doctor/derive.js';
import { formatDoctor } from '../../lib/format/doctor.js';
import { judgeProbe } from '../../lib/doctor/judge.js';
import { DOCTOR_PROBE_IDS, type RecordedStatus } from '../../lib/doctor/probes.js';
import type { DoctorReport, DoctorRun, SupportedDoctorReport } from '../../lib/doctor/types.js';
import { hostLine, plain, type Styler } from '../../lib/format/text.js';
import { profiles, resolveProfile } from '../../lib/patch/profiles.js';
import { loadSnapshot, reportFromSnapshot } from '../../lib/device/snapshots.js';

// Escape codes the table measures as zero width; turned into tags for reading.
const tagged: Styler = {
  bold: (s) => `\x1b[1m${s}\x1b[22m`,
  dim: (s) => `\x1b[2m${s}\x1b[22m`,
  good: (s) => `\x1b[32m${s}\x1b[39m`,
  bad: (s) => `\x1b[31m${s}\x1b[39m`,
  warn: (s) => `\x1b[33m${s}\x1b[39m`,
};
const TAGS: Record<string, string> = {
  '1': '<b>',
  '2': '<dim>',
  '32': '<good>',
  '31': '<bad>',
  '33': '<warn>',
  '22': '</>',
  '39': '</>',
};
// eslint-disable-next-line no-control-regex
const readable = (text: string) => text.replace(/\x1b\[(\d+)m/g, (_, code: string) => TAGS[code]!);

const vz = reportFromSnapshot(loadSnapshot('vz-guest-m1-ultra-tahoe-stock'));
const guest = vz.devices[0]!;

function run(status: RecordedStatus, ms: number | null, extra: Partial<DoctorRun> = {}): DoctorRun {
  return {
    status,
    detail: `${status} here`,
    ms,
    compileMs: null,
    provenThreadgroupMemory: null,
    acceptedThreadgroupMemory: null,
    failedThreadgroupMemory: null,
    bufferLength: null,
    maxAbsError: null,
    ...extra,
  };
}

/**
 * A run over two devices, both measured stock and under cua-release, restored with one hook left behind. The first
 * reports 16384 bytes of threadgroup memory and proves 32768 (49152 accepted, which is never claimed).
 */
function liveReport(): SupportedDoctorReport {
  const first = assessDevice(
    { ...guest, maxThreadgroupMemoryLength: 16384 },
    null,
    [
      judgeProbe(
        'simdgroup-reduction',
        run('pass', 1.2, { compileMs: 0.4 }),
        run('pass', 2.1, { compileMs: 0.65 }),
        'cua-release',
      ),
      judgeProbe('simdgroup-matrix', run('pass', 4, { compileMs: 3 }), run('wrong-result', 5), 'cua-release'),
      judgeProbe('bfloat', run('pass', 1), run('pass', 1), 'cua-release'),
      judgeProbe(
        'threadgroup-memory',
        run('pass', 10, { provenThreadgroupMemory: 32768, acceptedThreadgroupMemory: 49152 }),
        run('pass', 10, { provenThreadgroupMemory: 32768, acceptedThreadgroupMemory: 49152 }),
        'cua-release',
      ),
      judgeProbe('nocopy-mmap', run('skipped', null, { detail: 'not asked' })),
      judgeProbe('residency-set', run('unsupported', 0.04), run('unsupported', 0.04), 'cua-release'),
      judgeProbe('heap', run('pass', 0.5), run('pass', 0.5), 'cua-release'),
    ],
    vz.host,
    'the candidate profile',
    true,
  );
  const second = assessDevice(
    { ...guest, index: 1, isDefault: false, name: 'Second GPU', className: 'SecondDevice' },
    null,
    [
      judgeProbe('simdgroup-reduction', run('pass', 1), run('pass', 1), 'cua-release'),
      judgeProbe('simdgroup-matrix', run('pass', 1), run('pass', 1), 'cua-release'),
      judgeProbe('bfloat', run('pass', 1), run('pass', 1), 'cua-release'),
      judgeProbe(
        'threadgroup-memory',
        run('pass', 1, { provenThreadgroupMemory: 32768 }),
        run('pass', 1, { provenThreadgroupMemory: 32768 }),
        'cua-release',
      ),
      judgeProbe('nocopy-mmap', run('timeout', 5000, { compileMs: 12.25 })),
      judgeProbe('residency-set', run('fail', 1), run('fail', 1), 'cua-release'),
      judgeProbe('heap', run('fail', 1), run('fail', 1), 'cua-release'),
    ],
    vz.host,
  );
  return {
    schema: 'metal-cap-shim/doctor@1',
    packageVersion: '0.1.0',
    generatedAt: '2026-08-09T10:00:00.000Z',
    supported: true,
    reason: null,
    detail: null,
    source: 'simulated',
    snapshot: 'vz-guest-m1-ultra-tahoe-stock',
    replayed: false,
    host: vz.host,
    candidateProfile: profiles['cua-release']!.profile,
    candidateWarnings: [],
    patchedRun: { ran: true, why: null },
    settings: { probes: [], timeoutMs: 5000, mmapFile: null, mmapSize: null, device: null, allowAboveHardware: false },
    devices: [first, second],
    restore: {
      restoredHooks: [],
      conflicts: [
        { className: 'AppleParavirtDevice', selector: 'supportsFamily:' },
        { className: 'AppleParavirtDevice', selector: 'maxThreadgroupMemoryLength' },
      ],
    },
    cache: { written: [], error: 'the doctor cache could not be written: EACCES' },
  };
}

const RESIDENCY_WHY = {
  llama:
    'residency-set fail: fail here. ggml-metal creates residency sets by default (arm64 builds with a macOS 15+ SDK); node-llama-cpp 3.19 already sets this while it loads backends',
  mlx: 'residency-set fail: fail here. MLX (from v0.19.2) creates residency sets when the device answers Metal3 on macOS 15+, and throws when that fails; no switch of its own turns them off (MLX_RESIDENCY_SET_MAX_PCT, from v0.32.1, only spreads them over several sets)',
};
const MMAP_WHY =
  'llama.cpp hands Metal its mmap-ed weights through newBufferWithBytesNoCopy by default; without mmap it reads them into buffers Metal owns';

describe('hostLine', () => {
  it('ends with the host’s chip, or says it is unknown, with the brand string when there is one', () => {
    const h = vz.host;
    expect([
      hostLine(h),
      hostLine({ ...h, cpuBrand: 'Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz', chip: null }),
      hostLine({ ...h, cpuBrand: null, chip: null }),
    ]).toEqual([
      'VirtualMac2,1 · macOS 26.5.2 · arm64 · virtual machine · Apple M1 Ultra',
      'VirtualMac2,1 · macOS 26.5.2 · arm64 · virtual machine · chip unknown (Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz)',
      'VirtualMac2,1 · macOS 26.5.2 · arm64 · virtual machine · chip unknown',
    ]);
  });
});

describe('formatDoctor', () => {
  it('a replayed recording, plain: the probe table, the verified profile and why, the advice, the faults', async () => {
    const nocopy =
      'recorded: stale data when Metal read model weights through newBufferWithBytesNoCopy over a file-backed mmap (empty or garbage llama.cpp output; --no-mmap correct) (fault: stale) [source: unsloth-pr-37]';
    expect(formatDoctor(await doctor({ snapshot: 'github-macos-14-arm64-runner' }), plain)).toBe(
      [
        'metal-cap-shim doctor — snapshot github-macos-14-arm64-runner (recorded result, replayed: nothing ran)',
        'Host: VirtualMac2,1 · macOS 14.5 · arm64 · virtual machine · Apple M1',
        'Patched runs: none (a recorded result is replayed: nothing runs)',
        '',
        'Device 0 (default): Apple Paravirtual device [AppleParavirtDevice]',
        '  probe                result        stock  patched  ms  compile ms  detail',
        // One row per probe, in DOCTOR_PROBE_IDS order; the recording holds nocopy-mmap's result only.
        ...DOCTOR_PROBE_IDS.map((id) =>
          id === 'nocopy-mmap'
            ? `  nocopy-mmap          wrong-result  –      –        –   –           ${nocopy}`
            : `  ${id.padEnd(19)}  not-recorded  –      –        –   –           not recorded in this snapshot`,
        ),
        '  Verified profile: mode raise',
        '    · no Apple family raised: nothing an Apple family gates was proven (simdgroup-reduction not-recorded, simdgroup-matrix not-recorded, bfloat not-recorded)',
        '    · threadgroup memory left as reported: no size proven (threadgroup-memory not-recorded)',
        '    · Metal3 not advertised: no residency set was proven to work (residency-set not-recorded)',
        '    · name left as the device reports it: with the host chip\'s name MLX would create its buffer heap, which it skips on "Apple Paravirtual device", and no heap was proven here (heap not-recorded)',
        '  Recommendations:',
        `    ! llama.cpp: --no-mmap (llama-bench: -mmp 0) — nocopy-mmap wrong-result: ${nocopy}. ${MMAP_WHY}`,
        `    ! node-llama-cpp: llama.loadModel({ useMmap: false }) — nocopy-mmap wrong-result: ${nocopy}. ${MMAP_WHY}`,
        '  Faults: nocopy-mmap: wrong-result (recorded in snapshot github-macos-14-arm64-runner and replayed: not measured now)',
      ].join('\n'),
    );
  });

  it('a recording with nothing faulty, styled: no recommendations, no faults', async () => {
    const notRecorded = (id: string) =>
      `  ${id.padEnd(19)}  <dim>not-recorded</>  –      –        –   –           not recorded in this snapshot`;
    expect(readable(formatDoctor(await doctor({ snapshot: 'm1-ultra-bare-metal' }), tagged))).toBe(
      [
        '<b>metal-cap-shim doctor</> — snapshot m1-ultra-bare-metal (recorded result, replayed: nothing ran)',
        'Host: Mac13,2 · macOS 26.6.1 · arm64 · not a VM · Apple M1 Ultra',
        'Patched runs: none (a recorded result is replayed: nothing runs)',
        // The default bound to the M1 Ultra claims its own Apple7, which it already answers.
        '  <warn>!</> the profile changes no answer on this device <dim>[no-change]</>',
        '',
        '<b>Device 0 (default)</>: Apple M1 Ultra [AGXG13DDevice]',
        '  <dim>probe</>                <dim>result</>        <dim>stock</>  <dim>patched</>  <dim>ms</>  <dim>compile ms</>  <dim>detail</>',
        ...DOCTOR_PROBE_IDS.map(notRecorded),
        '  <b>Verified profile:</> mode raise',
        '    · no Apple family raised: nothing an Apple family gates was proven (simdgroup-reduction not-recorded, simdgroup-matrix not-recorded, bfloat not-recorded)',
        '    · threadgroup memory left as reported: no size proven (threadgroup-memory not-recorded)',
        '    · Metal3 left as the device answers it (YES)',
        '    · name left as the device reports it: it already is "Apple M1 Ultra"',
        '  <b>Recommendations:</> none',
        '  <b>Faults:</> none found',
      ].join('\n'),
    );
  });

  it('two devices measured stock and patched, styled: differences, a named verified profile, hooks left, a cache error', () => {
    expect(readable(formatDoctor(liveReport(), tagged))).toBe(
      [
        '<b>metal-cap-shim doctor</> — simulated Metal, snapshot vz-guest-m1-ultra-tahoe-stock',
        'Host: VirtualMac2,1 · macOS 26.5.2 · arm64 · virtual machine · Apple M1 Ultra',
        'Patched runs: under cua-release, then restored',
        '',
        '<b>Device 0 (default)</>: Apple Paravirtual device [AppleParavirtDevice]',
        '  <dim>probe</>                <dim>result</>        <dim>stock</>        <dim>patched</>       <dim>ms</>    <dim>compile ms</>  <dim>detail</>',
        '  simdgroup-reduction  <good>pass</>          <good>pass</>         <good>pass</>          3.3   1.1         pass here',
        '  simdgroup-matrix     <bad>wrong-result</>  <good>pass</>         <bad>wrong-result</>  9.0   –           stock: pass (pass here); under cua-release: wrong-result (wrong-result here)',
        '  bfloat               <good>pass</>          <good>pass</>         <good>pass</>          2.0   –           pass here',
        '  threadgroup-memory   <good>pass</>          <good>pass</>         <good>pass</>          20.0  –           pass here',
        '  nocopy-mmap          <dim>skipped</>       –            –             –     –           not asked',
        '  residency-set        <dim>unsupported</>   <dim>unsupported</>  <dim>unsupported</>   0.1   –           unsupported here',
        '  heap                 <good>pass</>          <good>pass</>         <good>pass</>          1.0   –           pass here',
        "  <warn>≠</> simdgroup-matrix: pass with stock answers, wrong-result under cua-release: Metal's behaviour depends on what the device answers",
        '  <b>Verified profile:</> mode raise, Apple families up to 1006 (Apple6), threadgroup memory 32768, name "Apple M1 Ultra"',
        '    · Apple6: bfloat computed right (llama.cpp’s bfloat rule); not Apple7, which would also claim SIMD-group reduction and matrix (simdgroup-reduction pass, simdgroup-matrix wrong-result)',
        '    · threadgroup memory raised to the proven 32768 bytes (the device reports 16384)',
        '    · Metal3 not advertised: no residency set was proven to work (residency-set unsupported)',
        '    · name "Apple M1 Ultra", the host\'s chip: a heap was created, a buffer placed in it and a compute pass wrote and read it back, so MLX\'s heap path (which the name turns on) was proven; engines that tune by chip tune for Apple M1 Ultra',
        '  <b>Recommendations:</> none',
        '  <b>Faults:</> <bad>simdgroup-matrix: wrong-result</>',
        '',
        '<b>Device 1</>: Second GPU [SecondDevice]',
        '  <dim>probe</>                <dim>result</>   <dim>stock</>  <dim>patched</>  <dim>ms</>      <dim>compile ms</>  <dim>detail</>',
        '  simdgroup-reduction  <good>pass</>     <good>pass</>   <good>pass</>     2.0     –           pass here',
        '  simdgroup-matrix     <good>pass</>     <good>pass</>   <good>pass</>     2.0     –           pass here',
        '  bfloat               <good>pass</>     <good>pass</>   <good>pass</>     2.0     –           pass here',
        '  threadgroup-memory   <good>pass</>     <good>pass</>   <good>pass</>     2.0     –           pass here',
        '  nocopy-mmap          <bad>timeout</>  –      –        5000.0  12.3        timeout here',
        '  residency-set        <bad>fail</>     <bad>fail</>   <bad>fail</>     2.0     –           fail here',
        '  heap                 <bad>fail</>     <bad>fail</>   <bad>fail</>     2.0     –           fail here',
        '  <b>Verified profile:</> apple7 — mode raise, Apple families up to 1007 (Apple7)',
        '    · Apple7: SIMD-group reduction and matrix computed right, llama.cpp’s gates for both; bfloat proven too (Apple7 includes Apple6, llama.cpp’s bfloat rule)',
        '    · threadgroup memory left at the reported 32768 bytes, which were proven',
        '    · Metal3 not advertised: no residency set was proven to work (residency-set fail)',
        '    · name left as the device reports it: with the host chip\'s name MLX would create its buffer heap, which it skips on "Apple Paravirtual device", and no heap was proven here (heap fail)',
        '  <b>Recommendations:</>',
        `    <warn>!</> llama.cpp: --no-mmap (llama-bench: -mmp 0) — nocopy-mmap timeout: timeout here. ${MMAP_WHY}`,
        `    <warn>!</> node-llama-cpp: llama.loadModel({ useMmap: false }) — nocopy-mmap timeout: timeout here. ${MMAP_WHY}`,
        `    <warn>!</> llama.cpp: GGML_METAL_NO_RESIDENCY=1 — ${RESIDENCY_WHY.llama}`,
        `    <warn>!</> mlx: never advertise Metal3 (profile {"families":{"metal3":false}}) — ${RESIDENCY_WHY.mlx}`,
        `    <warn>!</> mlx: leave the device name alone (no deviceName in the profile) — heap fail: fail here. MLX places small buffers in a 1 MiB heap, and skips it only when the device is named exactly "Apple Paravirtual device"; with that name left in place it allocates them one by one`,
        '  <b>Faults:</> <bad>nocopy-mmap: timeout, residency-set: fail, heap: fail</>',
        '',
        "<warn>Restore left 2 hooks under another library's: AppleParavirtDevice supportsFamily:, AppleParavirtDevice maxThreadgroupMemoryLength</>",
        '',
        '<warn>the doctor cache could not be written: EACCES</>',
      ].join('\n'),
    );
  });

  it('a custom candidate profile, a live source, no patched run, a clean restore, a written cache', () => {
    const base = liveReport();
    const custom = { ...resolveProfile({ appleFamilyMax: 1008 }), name: null };
    const r: DoctorReport = {
      ...base,
      source: 'live',
      snapshot: null,
      candidateProfile: custom,
      patchedRun: { ran: false, why: 'the candidate changes no answer on this machine' },
      devices: [base.devices[0]!],
      restore: { restoredHooks: [{ className: 'AppleParavirtDevice', selector: 'supportsFamily:' }], conflicts: [] },
      cache: { written: ['/tmp/doctor-0.json'], error: null },
    };
    const lines = formatDoctor(r, plain).split('\n');
    expect(lines.slice(0, 3)).toEqual([
      'metal-cap-shim doctor — live Metal',
      'Host: VirtualMac2,1 · macOS 26.5.2 · arm64 · virtual machine · Apple M1 Ultra',
      'Patched runs: none (the candidate changes no answer on this machine)',
    ]);
    expect(lines.filter((l) => l.startsWith('  ≠'))).toEqual([
      "  ≠ simdgroup-matrix: pass with stock answers, wrong-result under the candidate profile: Metal's behaviour depends on what the device answers",
    ]);
    expect(lines[lines.length - 1]).toBe('  Faults: simdgroup-matrix: wrong-result');
    expect(
      formatDoctor({ ...r, candidateProfile: custom, patchedRun: { ran: true, why: null } }, plain).split('\n')[2],
    ).toBe('Patched runs: under custom profile, then restored');
    expect(
      formatDoctor({ ...r, source: 'simulated', snapshot: null, restore: null, cache: null }, plain).split('\n')[0],
    ).toBe('metal-cap-shim doctor — simulated Metal, snapshot none');
  });

  it('a difference in a measured size: the sizes, with the statuses only when they differ too', () => {
    const base = liveReport();
    const tg = (status: RecordedStatus, proven: number | null, failed: number | null) =>
      run(status, 1, { provenThreadgroupMemory: proven, failedThreadgroupMemory: failed });
    const device = (stock: DoctorRun, patched: DoctorRun) =>
      assessDevice(guest, null, [judgeProbe('threadgroup-memory', stock, patched, 'cua-release')], vz.host);
    const diffLines = (d: ReturnType<typeof device>) =>
      formatDoctor({ ...base, devices: [d] }, plain)
        .split('\n')
        .filter((l) => l.startsWith('  ≠'));
    expect(diffLines(device(tg('pass', 32768, 40960), tg('pass', 65536, null)))).toEqual([
      "  ≠ threadgroup-memory: proven 32768 bytes, failed from 40960 bytes with stock answers, proven 65536 bytes, no size failed under cua-release: Metal's behaviour depends on what the device answers",
    ]);
    expect(diffLines(device(tg('pass', 65536, null), tg('fail', null, 16384)))).toEqual([
      "  ≠ threadgroup-memory: pass (proven 65536 bytes, no size failed) with stock answers, fail (no size proven, failed from 16384 bytes) under cua-release: Metal's behaviour depends on what the device answers",
    ]);
    expect(diffLines(device(tg('pass', 32768, 40960), tg('pass', 32768, 40960)))).toEqual([]);
  });

  it('hooks left by restore: one hook, two hooks', () => {
    const hook = { className: 'AppleParavirtDevice', selector: 'supportsFamily:' };
    const restoreLine = (conflicts: (typeof hook)[]) =>
      formatDoctor({ ...liveReport(), restore: { restoredHooks: [], conflicts } }, plain)
        .split('\n')
        .filter((l) => l.startsWith('Restore left'));
    expect(restoreLine([hook])).toEqual([
      "Restore left 1 hook under another library's: AppleParavirtDevice supportsFamily:",
    ]);
    expect(restoreLine([hook, { ...hook, selector: 'maxThreadgroupMemoryLength' }])).toEqual([
      "Restore left 2 hooks under another library's: AppleParavirtDevice supportsFamily:, AppleParavirtDevice maxThreadgroupMemoryLength",
    ]);
    expect(restoreLine([])).toEqual([]);
  });

  it('nothing could run: the reason, and the offline replay to try instead', () => {
    const r: DoctorReport = {
      ...liveReport(),
      supported: false,
      reason: 'unsupported-platform',
      detail: 'Metal exists only on macOS; this is linux',
      source: 'none',
      snapshot: null,
      host: null,
      patchedRun: { ran: false, why: 'Metal exists only on macOS; this is linux' },
      devices: [],
      restore: null,
      cache: null,
    };
    expect(readable(formatDoctor(r, tagged))).toBe(
      [
        '<b>metal-cap-shim doctor</> — no Metal',
        '<warn>not supported</>: unsupported-platform: Metal exists only on macOS; this is linux',
        'Offline: metal-cap-shim doctor --snapshot github-macos-14-arm64-runner',
      ].join('\n'),
    );
  });
});
