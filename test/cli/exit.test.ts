// lib/cli/exit.ts: one exit-code table for every command, and exec's own codes, which a program's cannot be taken for.
import { describe, expect, it } from 'vitest';
import { EXEC_EXIT, EXIT, EXIT_TABLE, NO_METAL_CODES } from '../../lib/cli/exit.js';

describe('the exit codes', () => {
  it('the table gives each code of EXIT once, in order, with its name', () => {
    expect(EXIT_TABLE.map((r) => [r.code, r.name])).toEqual(Object.entries(EXIT).map(([name, code]) => [code, name]));
    expect(EXIT_TABLE.map((r) => r.code)).toEqual([0, 1, 2, 3, 4]);
  });

  it("exec's own failures are env's 125, 126 and 127, apart from every command's codes", () => {
    expect(EXEC_EXIT).toEqual({ failed: 125, notRunnable: 126, notFound: 127 });
    expect(Object.values(EXEC_EXIT).filter((c) => (Object.values(EXIT) as number[]).includes(c))).toEqual([]);
  });

  it('no Metal here is the three codes that say so', () => {
    expect([...NO_METAL_CODES].sort()).toEqual(['ERR_NATIVE_UNAVAILABLE', 'ERR_NO_DEVICE', 'ERR_UNSUPPORTED_PLATFORM']);
  });

  it('the tables cannot be changed at run time', () => {
    expect([Object.isFrozen(EXIT), Object.isFrozen(EXIT_TABLE), Object.isFrozen(EXEC_EXIT)]).toEqual([
      true,
      true,
      true,
    ]);
  });
});
