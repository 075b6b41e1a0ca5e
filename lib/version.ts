import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from './native.js';

let cached: string | undefined;

/** This package's version, from its package.json (read once per process). */
export function packageVersion(): string {
  if (cached === undefined) {
    const pkg = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
    cached = pkg.version;
  }
  return cached;
}
