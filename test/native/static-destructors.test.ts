// Globals the hooks touch must never be destroyed: exit() runs static destructors while other threads may still
// query a hooked device, install or restore. On macOS, libc++'s std::mutex has a real destructor (a destroyed one
// makes a later lock throw, and the process aborts), so such globals are [[clang::no_destroy]], and binding.gyp
// compiles with -Werror=exit-time-destructors to keep them so.
//
// With glibc a mutex is trivially destructible, under libstdc++ and (by libc++'s own choice for glibc) under libc++,
// so the Linux build's -Werror=exit-time-destructors catches a vector or a string but never a mutex. The second test
// below therefore compiles every shipped source against libc++ with that one glibc choice undone, which is how libc++
// is configured on Apple platforms; the third shows, for each attribute, that removing it is an error there.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { describeSim, requireSimBuild, root, simFlags } from '../support/helpers.js';

const nativeDir = path.join(root, 'src-native');
// host_darwin.mm needs macOS headers: the macOS cross build compiles it with the same flag.
const shipped = readdirSync(nativeDir, { recursive: true, encoding: 'utf8' })
  .map((f) => f.split(path.sep).join('/'))
  .filter((f) => f.endsWith('.mm') && f !== 'platform/host_darwin.mm')
  .sort();

// The shipped native sources as the Linux test build compiles them (build-sim.mjs: one folder per target).
const objects = ['addon', 'inject'].flatMap((target) => {
  const dir = path.join(root, 'build', 'obj', target);
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.o'))
        .map((f) => path.join(target, f))
    : [];
});

// libc++-14-dev (Debian; CI installs it). Only its headers are used: nothing is linked.
const libcxxConfig = '/usr/lib/llvm-14/include/c++/v1/__config';
let appleMutexHeader: string;
let libcxxFlags: string[];

/** Compiles `file` (syntax only) against libc++ as Apple configures it; the errors it reports, or [] when it compiles. */
function compileAsApple(file: string, folder: string): string[] {
  const r = spawnSync(
    'clang++-14',
    [...libcxxFlags, '-include', appleMutexHeader, `-I${folder}`, '-fsyntax-only', file],
    { encoding: 'utf8', cwd: root },
  );
  const errors = r.stderr.split('\n').filter((line) => line.includes('error:'));
  if (r.status !== 0 && errors.length === 0) throw new Error(`clang++-14 failed on ${file}: ${r.stderr}`);
  return errors;
}

describeSim('static destructors in the native engine', () => {
  beforeAll(() => {
    requireSimBuild();
    if (!existsSync(libcxxConfig)) {
      throw new Error(`${libcxxConfig} is missing: apt-get install --no-install-recommends libc++-14-dev`);
    }
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-destructors-'));
    // libc++ declares ~mutex() and ~condition_variable() = default only where pthread's destroy is a no-op (glibc);
    // on Apple platforms both are real. __config is include-guarded, so undoing its choice here holds for the file.
    appleMutexHeader = path.join(dir, 'apple-libcxx.h');
    writeFileSync(
      appleMutexHeader,
      '#include <__config>\n#undef _LIBCPP_HAS_TRIVIAL_MUTEX_DESTRUCTION\n#undef _LIBCPP_HAS_TRIVIAL_CONDVAR_DESTRUCTION\n',
    );
    // GCC's include folder (for its objc/runtime.h) also holds GCC's stddef.h, which clashes with libc++'s use of
    // clang's own: search it last.
    const gccInclude = execFileSync('gcc', ['-print-file-name=include'], { encoding: 'utf8' }).trim();
    const napiInclude = path.join(root, 'node_modules', 'node-api-headers', 'include');
    libcxxFlags = [
      '-ObjC++',
      '-std=c++17',
      '-stdlib=libc++',
      '-Werror=exit-time-destructors',
      '-DNAPI_VERSION=8',
      `-I${path.join(root, 'node_modules', 'node-addon-api')}`,
      `-I${napiInclude}`,
      ...simFlags('--cflags').flatMap((f) => (f === `-I${gccInclude}` ? ['-idirafter', gccInclude] : [f])),
    ];
  });

  it('covers every shipped source file', () => {
    const compiled = new Set(objects.map((o) => `${path.basename(o, '.o')}.mm`));
    expect(shipped.filter((s) => !compiled.has(path.basename(s)))).toEqual([]);
  });

  it('no object file registers a destructor for a global (__cxa_atexit)', () => {
    const registering = objects.filter((o) =>
      execFileSync('nm', ['-u', path.join(root, 'build', 'obj', o)], { encoding: 'utf8' })
        .split('\n')
        .some((line) => /\b__cxa_atexit\b/.test(line)),
    );
    expect(registering).toEqual([]);
  });

  it('every shipped source compiles with -Werror=exit-time-destructors against libc++ as Apple configures it', () => {
    const failing = shipped.map((s) => ({
      source: s,
      errors: compileAsApple(path.join(nativeDir, s), path.join(nativeDir, path.dirname(s))),
    }));
    expect(failing.filter((f) => f.errors.length > 0)).toEqual([]);
  }, 120_000);

  it('there, each [[clang::no_destroy]] is needed: without it its global is an error (mutexes included)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcs-no-destroy-'));
    const sites = shipped.flatMap((source) =>
      readFileSync(path.join(nativeDir, source), 'utf8')
        .split('\n')
        .flatMap((text, i) => (text.startsWith('[[clang::no_destroy]] ') ? [{ source, line: i + 1, text }] : [])),
    );
    // Every global that must outlive static destruction, by name: a new attribute is checked too, and none can quietly
    // disappear.
    expect(sites.map((s) => `${s.source}: ${s.text.replace(/[;(].*$/, '')}`)).toEqual([
      'addon/addon.mm: [[clang::no_destroy]] std::mutex gBaselineMutex',
      'addon/addon.mm: [[clang::no_destroy]] std::string gBaseline',
      'addon/consumers.mm: [[clang::no_destroy]] std::mutex gScanMutex',
      'addon/consumers.mm: [[clang::no_destroy]] ConsumerScan gConsumerScan',
      'addon/consumers.mm: [[clang::no_destroy]] GgmlMetalScan gGgmlMetalScan',
      'engine/profile.mm: [[clang::no_destroy]] std::mutex gRetiredMutex',
      'engine/profile.mm: [[clang::no_destroy]] std::vector<std::unique_ptr<Profile>> gRetired',
      'engine/profile.mm: [[clang::no_destroy]] std::mutex gNameTraceMutex',
      'engine/profile.mm: [[clang::no_destroy]] std::string gNameStock',
      'engine/profile.mm: [[clang::no_destroy]] std::string gNameGiven',
      'engine/profile.mm: [[clang::no_destroy]] std::mutex gCountsMutex',
      'engine/swizzle.mm: [[clang::no_destroy]] std::mutex gInstallMutex',
      'inject/inject.mm: [[clang::no_destroy]] std::mutex gPatchMutex',
    ]);
    for (const site of sites) {
      const lines = readFileSync(path.join(nativeDir, site.source), 'utf8').split('\n');
      lines[site.line - 1] = site.text.slice('[[clang::no_destroy]] '.length);
      const copy = path.join(dir, `${site.line}-${path.basename(site.source)}`);
      writeFileSync(copy, lines.join('\n'));
      const column = site.text.replace(/[;(].*$/, '').lastIndexOf(' ') + 1 - '[[clang::no_destroy]] '.length + 1;
      expect(compileAsApple(copy, path.join(nativeDir, path.dirname(site.source)))).toEqual([
        `${copy}:${site.line}:${column}: error: declaration requires an exit-time destructor [-Werror,-Wexit-time-destructors]`,
      ]);
    }
  }, 120_000);
});
