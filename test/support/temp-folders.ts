// A suite's own temporary folder, made before its tests and removed after them, with fresh folders and files in it:
// what the exec tests lay out programs and trace files in.
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';

/** Registers the suite's folder (beforeAll/afterAll) and returns how to make folders and files in it. */
export function tempFolders(prefix: string): {
  /** The suite's folder itself (known once beforeAll has run). */
  root(): string;
  folder(): string;
  file(dir: string, name: string, mode: number, content?: string): string;
} {
  let tmp = '';
  let folders = 0;
  beforeAll(() => {
    tmp = realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  return {
    root: () => tmp,
    /** A fresh folder under the suite's temporary one. */
    folder() {
      const dir = path.join(tmp, `f${folders++}`);
      mkdirSync(dir);
      return dir;
    },
    /** A file with that mode (a shell script that exits 0 unless told otherwise). */
    file(dir, name, mode, content = '#!/bin/sh\nexit 0\n') {
      const f = path.join(dir, name);
      writeFileSync(f, content);
      chmodSync(f, mode);
      return f;
    },
  };
}
