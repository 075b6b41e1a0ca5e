// lib/cli/exit.ts: one exit-code table for every command, and exec's own codes, which a program's cannot be taken for.
import { describe, expect, it } from 'vitest';
import { EXEC_EXIT, EXIT, EXIT_TABLE, NO_METAL_CODES, SIGNAL_EXIT } from '../../lib/cli/exit.js';

describe('the exit codes', () => {
  it('the table gives each code of EXIT once, in order, with its name', () => {
    expect(EXIT_TABLE.map((r) => [r.code, r.name])).toEqual(Object.entries(EXIT).map(([name, code]) => [code, name]));
    // Every command's 0–4; a program not runnable or not found, as a shell says (126, 127); bench stopped by SIGHUP,
    // SIGINT or SIGTERM (128 + the signal's number, as a shell reports it).
    expect(EXIT_TABLE.map((r) => r.code)).toEqual([0, 1, 2, 3, 4, 126, 127, 129, 130, 143]);
  });

  it('a clean stop by a signal exits 128 + its number, with the table’s name for it', () => {
    expect(SIGNAL_EXIT).toEqual({ SIGHUP: 129, SIGINT: 130, SIGTERM: 143 });
    expect(Object.values(SIGNAL_EXIT).map((c) => EXIT_TABLE.find((r) => r.code === c)!.name)).toEqual([
      'hangUp',
      'interrupted',
      'terminated',
    ]);
  });

  it("exec's own failures are env's 125, 126 and 127; 126 and 127 are the table's, which bench's tool shares", () => {
    expect(EXEC_EXIT).toEqual({ failed: 125, notRunnable: 126, notFound: 127 });
    expect(Object.values(EXEC_EXIT).filter((c) => (Object.values(EXIT) as number[]).includes(c))).toEqual([126, 127]);
    expect([EXEC_EXIT.notRunnable, EXEC_EXIT.notFound]).toEqual([EXIT.notRunnable, EXIT.notFound]);
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
