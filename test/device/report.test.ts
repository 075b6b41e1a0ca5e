// lib/device/report.ts: a report's host.
import { describe, expect, it } from 'vitest';
import { hostOf } from '../../lib/device/report.js';
import { probeSnapshot } from '../../lib/device/probe.js';

describe('hostOf', () => {
  it("a report's own host, or one whose every field is null", () => {
    const report = probeSnapshot('m1-ultra-bare-metal');
    expect(hostOf(report)).toBe(report.host);
    const none = hostOf({ host: null });
    expect(Object.keys(none)).toEqual(Object.keys(report.host!));
    expect(Object.values(none).every((v) => v === null)).toBe(true);
  });
});
