import path from 'node:path';
import { Ajv } from 'ajv';
import { createGenerator } from 'ts-json-schema-generator';
import { beforeAll, describe, expect, it } from 'vitest';
import { listSnapshots } from '../../lib/device/snapshots.js';
import { describeSim, requireSimBuild, root, runCli } from '../support/helpers.js';
import { EXIT } from '../../lib/cli/exit.js';

/** JSON Schema generated from the exported TypeScript type, so the check follows the types, not a second copy. */
function schemaFor(type: string) {
  return createGenerator({
    path: path.join(root, 'lib', 'device', 'types.ts'),
    tsconfig: path.join(root, 'tsconfig.json'),
    type,
    skipTypeCheck: true,
    additionalProperties: false,
  }).createSchema(type);
}

describe('metal-cap-shim probe', () => {
  const validate = new Ajv({ allErrors: true, strict: false }).compile(schemaFor('CapabilityReport'));

  it.each(listSnapshots())('--json --snapshot %s matches the exported CapabilityReport type', (name) => {
    for (const extra of [[], ['--all-devices']]) {
      const r = runCli(['probe', '--json', '--snapshot', name, ...extra]);
      expect(r.status, r.stderr).toBe(0);
      const report = JSON.parse(r.stdout);
      const ok = validate(report);
      expect(validate.errors ?? [], JSON.stringify(validate.errors)).toEqual([]);
      expect(ok).toBe(true);
    }
  });

  it('the schema check can fail: a report with a wrong field type is rejected', () => {
    const r = runCli(['probe', '--json', '--snapshot', 'vz-guest-m1-ultra-tahoe-stock']);
    const report = JSON.parse(r.stdout);
    report.devices[0].maxThreadgroupMemoryLength = '32768';
    expect(validate(report)).toBe(false);
  });

  it('human output for the stock guest names the device and shows Apple5 and 32768', () => {
    const r = runCli(['probe', '--snapshot', 'vz-guest-m1-ultra-tahoe-stock']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Apple Paravirtual device');
    expect(r.stdout).toMatch(/Highest Apple family\s+Apple5/);
    expect(r.stdout).toMatch(/Threadgroup memory\s+32768/);
    expect(r.stdout).toContain('VirtualMac2,1');
  });

  it('is plain text when not a TTY or with NO_COLOR, and colours when forced (FORCE_COLOR wins over NO_COLOR)', () => {
    const plain = runCli(['probe', '--snapshot', 'm1-ultra-bare-metal']);
    expect(plain.stdout).not.toMatch(/\x1b\[/);
    const forced = runCli(['probe', '--snapshot', 'm1-ultra-bare-metal'], { NO_COLOR: '', FORCE_COLOR: '1' });
    expect(forced.stdout).toMatch(/\x1b\[/);
    const noColor = runCli(['probe', '--snapshot', 'm1-ultra-bare-metal'], { NO_COLOR: '1', FORCE_COLOR: undefined });
    expect(noColor.stdout).not.toMatch(/\x1b\[/);
    const both = runCli(['probe', '--snapshot', 'm1-ultra-bare-metal'], { NO_COLOR: '1', FORCE_COLOR: '1' });
    expect(both.stdout).toMatch(/\x1b\[/);
  });

  it('--help prints usage and exits 0', () => {
    const r = runCli(['probe', '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Usage: metal-cap-shim probe');
  });

  it.each([
    [['probe', '--bogus'], 2, 'ERR_USAGE'],
    [['probe', '--snapshot'], 2, 'ERR_USAGE'],
    [['probe', 'extra'], 2, 'ERR_USAGE'],
    [['probe', '--allow-above-hardware', '--snapshot', 'm1-ultra-bare-metal'], 2, 'ERR_USAGE'],
    [['probe', '--snapshot', 'no-such'], 2, 'ERR_SNAPSHOT_NOT_FOUND'],
    [['probe', '--snapshot', path.join(root, 'package.json')], 2, 'ERR_INVALID_SNAPSHOT'],
  ])('%j exits %i with %s on stderr', (args, code, errorCode) => {
    const r = runCli(args as string[]);
    expect(r.status).toBe(code);
    expect(r.stderr).toContain(errorCode as string);
    expect(r.stdout).toBe('');
  });
});

describeSim('metal-cap-shim probe on the simulated build', () => {
  beforeAll(requireSimBuild);

  it('reports the simulated device from METAL_CAP_SHIM_SIM_SNAPSHOT', () => {
    const r = runCli(['probe', '--json', '--all-devices'], {
      METAL_CAP_SHIM_SIM_SNAPSHOT: 'macbookpro16-intel-amd-two-gpus',
    });
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.source).toBe('simulated');
    expect(report.devices.map((d: { className: string }) => d.className)).toEqual([
      'MTLIGAccelDevice',
      'AMDRadeonX6000_AMDNavi14GraphicsDevice',
    ]);
  });

  it('exits 4 (no Metal) with the reason when there is no device', () => {
    const r = runCli(['probe'], { METAL_CAP_SHIM_SIM_SNAPSHOT: '' });
    expect(r.status).toBe(EXIT.noMetal);
    expect([r.stdout, r.stderr.split(': ').slice(0, 2)]).toEqual(['', ['metal-cap-shim', 'ERR_NO_DEVICE']]);
  });
});
