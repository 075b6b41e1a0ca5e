// lib/exec/trace.ts: where --trace may write, and how a trace reaches it.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, realpathSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TraceFileError } from '../../lib/core/errors.js';
import { sharedFolderProblem } from '../../lib/core/safefs.js';
import { checkTraceFile, writeTrace } from '../../lib/exec/trace.js';
import { thrown } from '../support/helpers.js';
import { tempFolders } from '../support/temp-folders.js';

const { folder, file } = tempFolders('mcs-exec-plan-');

describe('checkTraceFile (--trace)', () => {
  it('a new file, or an existing regular file, in a folder that exists: the absolute path, its folder resolved', () => {
    const dir = realpathSync(folder());
    const { dev, ino } = statSync(dir);
    expect(checkTraceFile(path.join(dir, 'new.json'))).toEqual({
      file: path.join(dir, 'new.json'),
      folder: dir,
      dev,
      ino,
    });
    const old = file(dir, 'old.json', 0o644, 'stale');
    expect(checkTraceFile(old).file).toBe(old);
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      expect(checkTraceFile('rel.json').file).toBe(path.join(dir, 'rel.json'));
    } finally {
      process.chdir(cwd);
    }
    // A link in the path is followed once, here: the target names the real folder.
    const link = path.join(folder(), 'link');
    symlinkSync(dir, link);
    expect(checkTraceFile(path.join(link, 'via.json'))).toEqual({
      file: path.join(dir, 'via.json'),
      folder: dir,
      dev,
      ino,
    });
  });

  it('a folder other users may write is refused, unless it is sticky and ours or root’s (as /tmp is)', () => {
    const open = realpathSync(folder());
    chmodSync(open, 0o777);
    expect(thrown(() => checkTraceFile(path.join(open, 'trace.json')))).toEqual(
      new TraceFileError(
        `--trace ${path.join(open, 'trace.json')}: the folder ${open} can be written by other users (mode 0777) and is not a sticky folder of yours or root's, so another user could swap its entries for links`,
      ),
    );
    chmodSync(open, 0o1777);
    expect(checkTraceFile(path.join(open, 'trace.json')).folder).toBe(open);
    expect(sharedFolderProblem({ mode: 0o41777, uid: 12345 } as never, 0)).toMatch(/^can be written by other users/);
    expect(sharedFolderProblem({ mode: 0o41777, uid: 0 } as never, 12345)).toBe(null);
    expect(sharedFolderProblem({ mode: 0o40775, uid: 12345 } as never, 12345)).toMatch(/mode 0775/);
    expect(sharedFolderProblem({ mode: 0o40755, uid: 0 } as never, 12345)).toBe(null);
  });

  it('a folder swapped for a link, or for another folder, after the check: nothing is written there', () => {
    const base = realpathSync(folder());
    const shared = path.join(base, 'shared');
    const elsewhere = path.join(base, 'elsewhere');
    mkdirSync(shared);
    mkdirSync(elsewhere);
    const target = checkTraceFile(path.join(shared, 'trace.json'));
    renameSync(shared, path.join(base, 'old'));
    symlinkSync(elsewhere, shared);
    expect(writeTrace(target, '{}\n')).toEqual([
      `ERR_TRACE_FILE cannot write ${target.file}: its folder ${shared} now resolves elsewhere (a link was swapped in), so nothing is written there`,
    ]);
    rmSync(shared);
    mkdirSync(shared);
    expect(writeTrace(target, '{}\n')).toEqual([
      `ERR_TRACE_FILE cannot write ${target.file}: its folder ${shared} is not the folder checked before, so nothing is written there`,
    ]);
    expect([readdirSync(elsewhere), readdirSync(shared)]).toEqual([[], []]);
    // The folder it was: written.
    rmSync(shared, { recursive: true });
    renameSync(path.join(base, 'old'), shared);
    expect(writeTrace(target, '{}\n')).toEqual([]);
    expect(readdirSync(shared)).toEqual(['trace.json']);
  });

  it('a folder that does not exist, or a parent that is a file: ERR_TRACE_FILE naming the folder', () => {
    const dir = folder();
    const missing = path.join(dir, 'nope', 'trace.json');
    expect(thrown(() => checkTraceFile(missing))).toEqual(
      new TraceFileError(`--trace ${missing}: the folder ${path.join(dir, 'nope')} does not exist`),
    );
    const parentFile = file(dir, 'plain', 0o644, 'x');
    expect(thrown(() => checkTraceFile(path.join(parentFile, 'trace.json')))).toEqual(
      new TraceFileError(`--trace ${path.join(parentFile, 'trace.json')}: the folder ${parentFile} does not exist`),
    );
  });

  it('something that exists and is not a regular file: ERR_TRACE_FILE', () => {
    const dir = folder();
    expect(thrown(() => checkTraceFile(dir))).toEqual(new TraceFileError(`--trace ${dir}: ${dir} is a folder`));
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(thrown(() => checkTraceFile(fifo))).toEqual(
      new TraceFileError(`--trace ${fifo}: ${fifo} exists and is not a regular file`),
    );
  });
});
