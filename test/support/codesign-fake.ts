// A stand-in for macOS codesign(1), for the exec suites that judge signatures on Linux.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * codesign's output rules as lib/exec/codesign.ts reads them. Without an operation (`-d`) it prints its usage and fails. `-d`
 * prints `Executable=` on stderr; the CodeDirectory line with `flags=` only with -v/--verbose; the entitlements on
 * stdout only with `--entitlements -`. The current codesign (macOS 12+) prints them as a plist with --xml, else as its
 * `[Dict]` text; an older one rejects --xml as an unknown option and prints the raw blob (magic 0xfade7171, a length,
 * then the plist). A path that does not exist: "PATH: No such file or directory", exit 1. An unsigned file: "code object is not signed at all", exit 1. FILE.flags and FILE.entitlements (one
 * key per line) next to a file describe its signature.
 */
function script(kind: 'current' | 'old'): string {
  return `#!/bin/sh
old=${kind === 'old' ? 1 : 0}
usage() { echo "Usage: codesign -s identity [-fv*] [-o flags] [-r reqs] [-i ident] path ... # sign" >&2; echo "       codesign -d [options] path ... # display contents" >&2; exit 2; }
op=0; verbose=0; ents=0; xml=0; file=
while [ $# -gt 0 ]; do
  case "$1" in
    --verbose|--verbose=*) verbose=1 ;;
    --display) op=1 ;;
    --entitlements) shift; if [ "$1" = "-" ] || [ "$1" = ":-" ]; then ents=1; fi ;;
    --xml) if [ $old = 1 ]; then echo "codesign: unrecognized option \\\`--xml'" >&2; usage; fi; xml=1 ;;
    --*) ;;
    -*) case "$1" in *d*) op=1 ;; esac; case "$1" in *v*) verbose=1 ;; esac ;;
    *) if [ ! -e "$1" ]; then echo "$1: No such file or directory" >&2; exit 1; fi; file="$1" ;;
  esac
  shift
done
[ $op = 1 ] || usage
if [ ! -f "$file.flags" ]; then echo "$file: code object is not signed at all" >&2; exit 1; fi
echo "Executable=$file" >&2
if [ $verbose = 1 ]; then
  echo "Identifier=fixture" >&2
  echo "Format=Mach-O thin (arm64)" >&2
  echo "CodeDirectory v=20500 size=512 flags=$(cat "$file.flags") hashes=10+7 location=embedded" >&2
fi
plist() {
  printf '<?xml version="1.0" encoding="UTF-8"?>\\n<plist version="1.0"><dict>'
  while read -r key; do [ -n "$key" ] && printf '<key>%s</key><true/>' "$key"; done < "$file.entitlements"
  printf '</dict></plist>\\n'
}
if [ $ents = 1 ]; then
  if [ $xml = 1 ]; then
    plist
  elif [ $old = 1 ]; then
    printf '\\372\\336\\161\\161\\000\\000\\001\\000'
    plist
  else
    printf '[Dict]\\n'
    while read -r key; do [ -n "$key" ] && printf '\\t[Key] %s\\n\\t[Value]\\n\\t\\t[Bool] true\\n' "$key"; done < "$file.entitlements"
  fi
fi
exit 0
`;
}

/** Writes a fake `codesign` into `dir`/bin (created) and returns that folder, for the front of PATH. */
export function installFakeCodesign(dir: string, kind: 'current' | 'old' = 'current'): string {
  const bin = path.join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(path.join(bin, 'codesign'), script(kind));
  chmodSync(path.join(bin, 'codesign'), 0o755);
  return bin;
}

/**
 * A program in `dir` signed as given for the fake codesign (flags null: unsigned); `shebang` makes it a script run by
 * that interpreter.
 */
export function signedProgram(
  dir: string,
  name: string,
  flags: string | null,
  entitlements: string[],
  shebang?: string,
): string {
  const file = path.join(dir, name);
  writeFileSync(file, shebang === undefined ? 'binary\n' : `#!${shebang}\nexit 0\n`);
  chmodSync(file, 0o755);
  if (flags !== null) {
    writeFileSync(`${file}.flags`, flags);
    writeFileSync(`${file}.entitlements`, entitlements.map((e) => `${e}\n`).join(''));
  }
  return file;
}
