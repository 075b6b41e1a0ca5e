import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveCommand } from '../../lib/exec/command.js';
import { tempFolders } from '../support/temp-folders.js';

const { folder, file, root: suiteFolder } = tempFolders('mcs-exec-plan-');

describe('resolveCommand (as execvp finds a program)', () => {
  let a: string;
  let b: string;
  beforeAll(() => {
    a = folder();
    b = folder();
    file(a, 'tool', 0o644);
    file(b, 'tool', 0o755);
    file(a, 'both', 0o755);
    file(b, 'both', 0o755);
  });

  it('takes the first executable match on PATH, skipping files that are not executable', () => {
    expect(resolveCommand('tool', { PATH: `${a}${path.delimiter}${b}` })).toBe(path.join(b, 'tool'));
    expect(resolveCommand('both', { PATH: `${a}${path.delimiter}${b}` })).toBe(path.join(a, 'both'));
    expect(resolveCommand('both', { PATH: `${b}${path.delimiter}${a}` })).toBe(path.join(b, 'both'));
  });

  it('finds nothing when no folder has it, or there is no PATH', () => {
    expect(resolveCommand('tool', { PATH: a })).toBeNull();
    expect(resolveCommand('no-such-tool', { PATH: `${a}${path.delimiter}${b}` })).toBeNull();
    expect(resolveCommand('tool', {})).toBeNull();
  });

  it('an empty PATH entry is skipped: exec never runs a program from the current folder by accident', () => {
    const cwd = process.cwd();
    process.chdir(b);
    try {
      expect(resolveCommand('tool', { PATH: `${path.delimiter}${a}` })).toBeNull();
      expect(resolveCommand('tool', { PATH: `${a}${path.delimiter}${path.delimiter}${b}` })).toBe(path.join(b, 'tool'));
    } finally {
      process.chdir(cwd);
    }
  });

  it('a command with a slash is taken as a path (made absolute), not looked up, and must be executable', () => {
    const cwd = process.cwd();
    process.chdir(suiteFolder());
    try {
      expect(resolveCommand(`./${path.basename(b)}/tool`, { PATH: a })).toBe(path.join(b, 'tool'));
      expect(resolveCommand(`${path.basename(a)}/tool`, { PATH: b })).toBeNull();
      expect(resolveCommand(path.join(a, 'missing'), { PATH: b })).toBeNull();
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('resolveCommand on Windows (its rules, applied to files in a temporary folder here)', () => {
  let a: string;
  let b: string;
  beforeAll(() => {
    a = folder();
    b = folder();
    // No execute bit anywhere: Windows has none, a file is enough.
    file(a, 'tool.CMD', 0o644);
    file(b, 'tool.EXE', 0o644);
    file(b, 'tool', 0o755);
    file(a, 'plain', 0o755);
    file(b, 'both.COM', 0o644);
    file(b, 'both.EXE', 0o644);
  });
  const win = (command: string, env: NodeJS.ProcessEnv) => resolveCommand(command, env, 'win32');

  it('a name without an extension is tried with each PATHEXT extension, in PATHEXT’s order, folder by folder', () => {
    expect(win('tool', { PATH: `${a};${b}`, PATHEXT: '.COM;.EXE;.BAT;.CMD' })).toBe(path.join(a, 'tool.CMD'));
    expect(win('tool', { PATH: `${b};${a}`, PATHEXT: '.COM;.EXE;.BAT;.CMD' })).toBe(path.join(b, 'tool.EXE'));
    expect(win('both', { PATH: b, PATHEXT: '.COM;.EXE' })).toBe(path.join(b, 'both.COM'));
    expect(win('both', { PATH: b, PATHEXT: '.EXE;.COM' })).toBe(path.join(b, 'both.EXE'));
    // The same folders under POSIX rules: no extension is added, ';' is no delimiter, and Path is not PATH.
    expect(resolveCommand('tool', { PATH: `${a}:${b}` }, 'linux')).toBe(path.join(b, 'tool'));
    expect(resolveCommand('tool', { PATH: `${a};${b}` }, 'linux')).toBeNull();
    expect(resolveCommand('tool', { Path: b }, 'linux')).toBeNull();
  });

  it('a name that has one of PATHEXT’s extensions (in any case) is taken as it is; a file without one is no program', () => {
    expect(win('tool.EXE', { PATH: `${a};${b}`, PATHEXT: '.EXE;.CMD' })).toBe(path.join(b, 'tool.EXE'));
    expect(win('tool.CMD', { PATH: `${b};${a}`, PATHEXT: '.exe;.cmd' })).toBe(path.join(a, 'tool.CMD'));
    expect(win('plain', { PATH: `${a};${b}`, PATHEXT: '.EXE;.CMD' })).toBeNull();
  });

  it('PATH and PATHEXT are found whatever their case (Windows spells it Path); without PATHEXT, .COM;.EXE;.BAT;.CMD', () => {
    expect(win('tool', { Path: b, PathExt: '.EXE' })).toBe(path.join(b, 'tool.EXE'));
    expect(win('tool', { Path: a })).toBe(path.join(a, 'tool.CMD'));
    expect(win('tool', { PATHEXT: '.EXE' })).toBeNull();
  });

  it('empty entries of PATH and PATHEXT are skipped: the current folder is never searched', () => {
    const cwd = process.cwd();
    process.chdir(b);
    try {
      expect(win('tool', { PATH: `;${a}`, PATHEXT: '.EXE;;' })).toBeNull();
      expect(win('tool', { PATH: `${a};;${b}`, PATHEXT: ';.EXE' })).toBe(path.join(b, 'tool.EXE'));
    } finally {
      process.chdir(cwd);
    }
  });

  it('a backslash or a slash makes a path (made absolute, PATHEXT tried), not a name to look up', () => {
    const cwd = process.cwd();
    process.chdir(suiteFolder());
    try {
      expect(win(`${path.basename(b)}/tool`, { PATH: a, PATHEXT: '.EXE' })).toBe(path.join(b, 'tool.EXE'));
      expect(win(`./${path.basename(a)}/tool`, { PATH: b, PATHEXT: '.EXE' })).toBeNull();
      // On this file system a backslash is part of a name: a file called `sub\tool.EXE` stands for that path.
      file(suiteFolder(), 'sub\\tool.EXE', 0o644);
      expect(win('sub\\tool', { PATH: b, PATHEXT: '.EXE' })).toBe(path.join(suiteFolder(), 'sub\\tool.EXE'));
      expect(resolveCommand('sub\\tool.EXE', { PATH: b }, 'linux')).toBeNull();
    } finally {
      process.chdir(cwd);
    }
  });
});
