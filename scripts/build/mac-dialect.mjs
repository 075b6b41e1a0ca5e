// The C++ dialect node-gyp compiles an addon with on a Mac, derived from the two real files that decide it: Node's
// own common.gypi (its OS=="mac" xcode_settings: GCC_ENABLE_CPP_EXCEPTIONS / GCC_ENABLE_CPP_RTTI NO, -fno-strict-
// aliasing, gnu++17, the warning flags) and binding.gyp (each target's xcode_settings, which win where they set the
// same key, as gyp merges target_defaults into a target). gyp's xcode_emulation turns those settings into compiler
// flags; the subset below is the part that applies to C++ and Objective-C++. The Linux test build (build-sim.mjs)
// compiles src-native/ with these flags, so a construct that cannot build on a Mac (a C++ `try` under
// -fno-exceptions, a dynamic_cast under -fno-rtti) fails here too.
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Parses a .gyp/.gypi file: a Python literal (dicts, lists, strings, numbers) with `#` comments and trailing commas.
 * One pass over the text, so linear in its length.
 */
export function parseGyp(text) {
  let i = 0;
  const fail = (what) => {
    throw new Error(`gyp: ${what} at offset ${i}`);
  };
  const skip = () => {
    for (;;) {
      while (i < text.length && /\s/.test(text[i])) i++;
      if (text[i] !== '#') return;
      while (i < text.length && text[i] !== '\n') i++;
    }
  };
  const value = () => {
    skip();
    const c = text[i];
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      const out = c === '{' ? {} : [];
      i++;
      for (;;) {
        skip();
        if (text[i] === close) {
          i++;
          return out;
        }
        const item = value();
        if (c === '{') {
          skip();
          if (text[i++] !== ':') fail("expected ':'");
          out[item] = value();
        } else {
          out.push(item);
        }
        skip();
        if (text[i] === ',') i++;
        else if (text[i] !== close) fail(`expected ',' or '${close}'`);
      }
    }
    if (c === "'" || c === '"') {
      // Adjacent literals are one string, as in Python.
      let s = '';
      while (text[i] === "'" || text[i] === '"') {
        const q = text[i];
        for (i++; i < text.length && text[i] !== q; i++) s += text[i] === '\\' ? text[++i] : text[i];
        if (text[i++] !== q) fail('unterminated string');
        skip();
      }
      return s;
    }
    const m = /^-?\d+/.exec(text.slice(i, i + 32));
    if (m) {
      i += m[0].length;
      return Number(m[0]);
    }
    if (text.startsWith('True', i) || text.startsWith('False', i)) {
      const t = text.startsWith('True', i);
      i += t ? 4 : 5;
      return t;
    }
    return fail('unexpected character');
  };
  const out = value();
  skip();
  if (i < text.length) fail('trailing text');
  return out;
}

/**
 * Evaluates a gyp condition (a Python expression over gyp variables: ==, !=, in, not in, and, or, not, parentheses,
 * strings, numbers) against `vars`. A variable not in `vars` makes its comparison false, so an unknown condition
 * never selects a block.
 */
export function evalCondition(expression, vars) {
  const tokens = expression.match(/"[^"]*"|'[^']*'|==|!=|<=|>=|[()<>]|\w+/g) ?? [];
  let t = 0;
  const peek = () => tokens[t];
  const atom = () => {
    const tok = tokens[t++];
    if (tok === undefined) throw new Error(`gyp condition: unexpected end of '${expression}'`);
    if (tok === '(') {
      const v = or();
      t++;
      return v;
    }
    if (tok === 'not') return !comparison();
    if (/^["']/.test(tok)) return tok.slice(1, -1);
    if (/^\d+$/.test(tok)) return Number(tok);
    return Object.hasOwn(vars, tok) ? vars[tok] : undefined;
  };
  const comparison = () => {
    const left = atom();
    const op = peek();
    if (op === '==' || op === '!=') {
      t++;
      const right = atom();
      if (left === undefined || right === undefined) return false;
      return op === '==' ? String(left) === String(right) : String(left) !== String(right);
    }
    if (op === 'in' || (op === 'not' && tokens[t + 1] === 'in')) {
      t += op === 'in' ? 1 : 2;
      const right = atom();
      if (left === undefined || right === undefined) return false;
      const found = String(right).split(/\s+/).includes(String(left));
      return op === 'in' ? found : !found;
    }
    return left;
  };
  const and = () => {
    let v = comparison();
    while (peek() === 'and') {
      t++;
      const r = comparison();
      v = Boolean(v) && Boolean(r);
    }
    return v;
  };
  const or = () => {
    let v = and();
    while (peek() === 'or') {
      t++;
      const r = and();
      v = Boolean(v) || Boolean(r);
    }
    return v;
  };
  return Boolean(or());
}

/** Merges gyp dict `from` into `into` as gyp does: lists append, dicts merge, `key!` removes items, scalars replace. */
function merge(into, from) {
  for (const [key, v] of Object.entries(from)) {
    if (key.endsWith('!') && Array.isArray(v) && Array.isArray(into[key.slice(0, -1)])) {
      into[key.slice(0, -1)] = into[key.slice(0, -1)].filter((x) => !v.includes(x));
    } else if (Array.isArray(v)) {
      into[key] = [...(Array.isArray(into[key]) ? into[key] : []), ...v];
    } else if (v !== null && typeof v === 'object') {
      into[key] = merge(into[key] !== null && typeof into[key] === 'object' ? into[key] : {}, v);
    } else {
      into[key] = v;
    }
  }
  return into;
}

/** `block` with every `conditions` entry that holds under `vars` merged in (recursively), and none left. */
export function resolveConditions(block, vars) {
  const out = {};
  for (const [key, v] of Object.entries(block)) {
    if (key !== 'conditions' && key !== 'target_conditions') merge(out, { [key]: v });
  }
  // [cond, then, cond2, then2, …, else]: the first condition that holds picks its block.
  for (const entry of block.conditions ?? []) {
    let chosen = entry.length % 2 === 1 ? entry[entry.length - 1] : null;
    for (let k = 0; k + 1 < entry.length; k += 2) {
      if (evalCondition(entry[k], vars)) {
        chosen = entry[k + 1];
        break;
      }
    }
    if (chosen) merge(out, resolveConditions(chosen, vars));
  }
  return out;
}

/** The variables a Mac build of an addon sees: Node's release builds for macOS are made with clang. */
export const MAC_VARIABLES = Object.freeze({ OS: 'mac', clang: 1, target_arch: 'arm64', host_arch: 'arm64' });

function nodeGypCacheDir() {
  if (process.env.npm_config_devdir) return process.env.npm_config_devdir;
  if (process.platform === 'darwin') return path.join(os.homedir(), 'Library', 'Caches', 'node-gyp');
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'node-gyp');
}

/**
 * Where Node's common.gypi is looked for, in order: a --nodedir given to npm, node-gyp's header cache for this Node
 * (what node-gyp itself uses after `node-gyp install`), then the running Node's own install prefix
 * (<prefix>/include/node, which Node's release tarballs and nodesource's packages ship).
 */
export function commonGypiCandidates() {
  const version = process.version.replace(/^v/, '');
  return [
    ...(process.env.npm_config_nodedir
      ? [path.join(process.env.npm_config_nodedir, 'include', 'node', 'common.gypi')]
      : []),
    path.join(nodeGypCacheDir(), version, 'include', 'node', 'common.gypi'),
    path.resolve(path.dirname(process.execPath), '..', 'include', 'node', 'common.gypi'),
  ];
}

export function findCommonGypi() {
  const candidates = commonGypiCandidates();
  const found = candidates.find((c) => existsSync(c));
  if (found === undefined) {
    throw new Error(
      `Node's common.gypi was not found (looked in ${candidates.join(', ')}); the Linux build takes the Mac dialect ` +
        'from it. Install Node from a release tarball or a package that ships include/node, or run `npx node-gyp install`.',
    );
  }
  return found;
}

/**
 * The compiler flags gyp's xcode_emulation (GetCflags, GetCflagsCC, GetCflagsObjCC) gives an Objective-C++ file for
 * `settings` (merged xcode_settings), in its order, and the ones left out because they mean something only on a Mac
 * (architectures, Apple's libc++, the deployment target, Apple-only code-generation switches). Optimisation and
 * debug information are each build's own choice, not part of the dialect.
 */
export function xcodeFlags(settings) {
  const flags = [];
  const skipped = [];
  const is = (key, value, fallback) => (settings[key] ?? fallback) === value;
  if (is('CLANG_WARN_CONSTANT_CONVERSION', 'YES', 'NO')) flags.push('-Wconstant-conversion');
  if (is('GCC_CHAR_IS_UNSIGNED_CHAR', 'YES', 'NO')) flags.push('-funsigned-char');
  if (is('GCC_CW_ASM_SYNTAX', 'YES', 'YES')) skipped.push('-fasm-blocks');
  if (is('GCC_DYNAMIC_NO_PIC', 'YES', 'NO')) skipped.push('-mdynamic-no-pic');
  if (is('GCC_ENABLE_PASCAL_STRINGS', 'YES', 'YES')) skipped.push('-mpascal-strings');
  if (settings.GCC_STRICT_ALIASING === 'YES') flags.push('-fstrict-aliasing');
  if (settings.GCC_STRICT_ALIASING === 'NO') flags.push('-fno-strict-aliasing');
  if (is('GCC_SYMBOLS_PRIVATE_EXTERN', 'YES', 'NO')) flags.push('-fvisibility=hidden');
  if (is('GCC_TREAT_WARNINGS_AS_ERRORS', 'YES', 'NO')) flags.push('-Werror');
  if (is('GCC_WARN_ABOUT_MISSING_NEWLINE', 'YES', 'NO')) flags.push('-Wnewline-eof');
  if (settings.MACOSX_DEPLOYMENT_TARGET !== undefined)
    skipped.push(`-mmacosx-version-min=${settings.MACOSX_DEPLOYMENT_TARGET}`);
  flags.push(...(settings.WARNING_CFLAGS ?? []));
  // GetCflagsCC, which gyp's make generator also applies to .mm files.
  if (settings.CLANG_CXX_LANGUAGE_STANDARD) flags.push(`-std=${settings.CLANG_CXX_LANGUAGE_STANDARD}`);
  if (settings.CLANG_CXX_LIBRARY !== undefined) skipped.push(`-stdlib=${settings.CLANG_CXX_LIBRARY}`);
  if (is('GCC_ENABLE_CPP_RTTI', 'NO', 'YES')) flags.push('-fno-rtti');
  if (is('GCC_ENABLE_CPP_EXCEPTIONS', 'NO', 'YES')) flags.push('-fno-exceptions');
  if (is('GCC_INLINES_ARE_PRIVATE_EXTERN', 'YES', 'NO')) flags.push('-fvisibility-inlines-hidden');
  if (is('GCC_THREADSAFE_STATICS', 'NO', 'YES')) flags.push('-fno-threadsafe-statics');
  if (is('GCC_WARN_ABOUT_INVALID_OFFSETOF_MACRO', 'NO', 'YES')) flags.push('-Wno-invalid-offsetof');
  const other = [];
  for (const flag of settings.OTHER_CPLUSPLUSFLAGS ?? ['$(inherited)']) {
    if (
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Xcode's own ${inherited} variable syntax, not a template
      ['$inherited', '$(inherited)', '${inherited}', '$OTHER_CFLAGS', '$(OTHER_CFLAGS)', '${OTHER_CFLAGS}'].includes(
        flag,
      )
    ) {
      other.push(...(settings.OTHER_CFLAGS ?? []));
    } else {
      other.push(flag);
    }
  }
  for (let i = 0; i < other.length; i++) {
    if (other[i] === '-arch') {
      skipped.push(`-arch ${other[++i]}`);
    } else {
      flags.push(other[i]);
    }
  }
  // GetCflagsObjCC.
  if (is('CLANG_ENABLE_OBJC_ARC', 'YES', 'NO')) flags.push('-fobjc-arc');
  if (is('GCC_OBJC_CALL_CXX_CDTORS', 'YES', 'NO')) flags.push('-fobjc-call-cxx-cdtors');
  return { flags, skipped };
}

/**
 * The Mac dialect of one binding.gyp target: the flags, where they came from, and what was left out. `-W` (gyp's
 * spelling of -Wextra) stays as it is: clang takes it.
 *
 * One addition is not a Mac flag but keeps the Mac's meaning on GCC's runtime: with -fno-exceptions -fobjc-exceptions
 * Apple's clang driver still passes -fexceptions to the compiler proper (unwind tables and cleanups, no C++ `try`),
 * because Apple's runtime is "non-fragile"; for GCC's runtime the driver does not, and an @catch would then never
 * catch. `-Xclang -fexceptions` gives the compiler proper the same switch Apple's driver gives it.
 */
export function macDialect(
  targetName,
  { commonGypi = findCommonGypi(), bindingGyp = path.join(repoRoot, 'binding.gyp') } = {},
) {
  const common = parseGyp(readFileSync(commonGypi, 'utf8'));
  const defaults = resolveConditions(common.target_defaults ?? {}, MAC_VARIABLES);
  if (defaults.xcode_settings?.GCC_ENABLE_CPP_EXCEPTIONS === undefined) {
    throw new Error(
      `${commonGypi} has no OS=="mac" xcode_settings with GCC_ENABLE_CPP_EXCEPTIONS: not Node's common.gypi?`,
    );
  }
  const binding = parseGyp(readFileSync(bindingGyp, 'utf8'));
  const target = (binding.targets ?? []).find((t) => t.target_name === targetName);
  if (target === undefined) throw new Error(`binding.gyp has no target ${targetName}`);
  const own = resolveConditions(target, MAC_VARIABLES);
  const settings = merge(merge({}, defaults.xcode_settings), own.xcode_settings ?? {});
  const { flags, skipped } = xcodeFlags(settings);
  const gnuRuntime =
    flags.includes('-fno-exceptions') && flags.includes('-fobjc-exceptions') ? ['-Xclang', '-fexceptions'] : [];
  return { target: targetName, flags: [...flags, ...gnuRuntime], gnuRuntime, skipped, commonGypi, bindingGyp };
}
