/**
 * The descriptors the program gets: stdin, stdout and stderr, those this process was given when it started (as `env`
 * hands them on), and the status pipe; nothing else of this process reaches it.
 */
import { fstatSync, readdirSync, statSync, type Stats } from 'node:fs';

/**
 * The child's descriptors: stdin, stdout and stderr are ours; each descriptor in `passFds` is handed on under its own
 * number; with `statusPipe`, the status pipe takes the lowest number ≥ 3 that none of them uses. Every other
 * descriptor of this process is close-on-exec (Node opens all of its own so) and does not reach the program.
 */
export function childDescriptors(
  passFds: readonly number[],
  statusPipe: boolean,
  output: { stdout?: number | 'pipe' | undefined; stderr?: number | 'pipe' | undefined } = {},
): { stdio: ('inherit' | 'ignore' | 'pipe' | number)[]; statusFd: number | null } {
  const passed = new Set(passFds.filter((fd) => Number.isSafeInteger(fd) && fd >= 3));
  let statusFd: number | null = null;
  if (statusPipe) for (statusFd = 3; passed.has(statusFd); statusFd++);
  const top = Math.max(2, statusFd ?? 2, ...passed);
  const stdio: ('inherit' | 'ignore' | 'pipe' | number)[] = [
    'inherit',
    output.stdout ?? 'inherit',
    output.stderr ?? 'inherit',
  ];
  for (let fd = 3; fd <= top; fd++) stdio.push(fd === statusFd ? 'pipe' : passed.has(fd) ? fd : 'ignore');
  return { stdio, statusFd };
}

/** Descriptors of GNU make's jobserver (`--jobserver-auth=R,W`, older `--jobserver-fds=R,W`) or BSD make's (`-J R,W`). */
function jobserverDescriptors(makeflags: string | undefined): Set<number> {
  const found = new Set<number>();
  for (const m of (makeflags ?? '').matchAll(/(?:--jobserver-(?:auth|fds)=|(?:^|\s)-J\s*)(\d+),(\d+)/g)) {
    found.add(Number(m[1]));
    found.add(Number(m[2]));
  }
  return found;
}

/**
 * The descriptors ≥ 3 this process was given when it started, to hand on to the program as `env` would (a file, a
 * socket of socket activation, make's jobserver). Node marks every descriptor close-on-exec at start-up (libuv's
 * uv_disable_stdio_inheritance), so what was inherited cannot be told by its flags; it is told by its kind. Node's own
 * descriptors are anonymous kernel objects (epoll, eventfd, kqueue: no file type), pipes whose two ends it holds both,
 * and /dev/null. Everything else open is taken as given by the caller: files, folders, sockets, devices, and single
 * pipe ends. A pipe pair is passed only when MAKEFLAGS names it as make's jobserver; /dev/null is never passed (the
 * program sees a closed descriptor instead). Call it first thing, before this process opens descriptors of its own.
 */
export function inheritedDescriptors(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): number[] {
  if (platform === 'win32') return [];
  let names: string[];
  try {
    names = readdirSync(platform === 'linux' ? '/proc/self/fd' : '/dev/fd');
  } catch {
    return [];
  }
  const open = new Map<number, Stats>();
  for (const name of names) {
    const fd = Number(name);
    if (!Number.isSafeInteger(fd) || fd < 3) continue;
    try {
      // The listing's own descriptor is closed by now: fstat fails, and it is left out.
      open.set(fd, fstatSync(fd));
    } catch {}
  }
  let devNull = -1;
  try {
    devNull = statSync('/dev/null').rdev;
  } catch {
    devNull = -1;
  }
  const pipeKey = (s: Stats) => `${s.dev}:${s.ino}`;
  const ends = new Map<string, number>();
  for (const s of open.values()) if (s.isFIFO()) ends.set(pipeKey(s), (ends.get(pipeKey(s)) ?? 0) + 1);
  const jobserver = jobserverDescriptors(env.MAKEFLAGS);
  const given = (fd: number, s: Stats) => {
    if (s.isFile() || s.isDirectory() || s.isSocket() || s.isBlockDevice()) return true;
    if (s.isCharacterDevice()) return s.rdev !== devNull;
    if (s.isFIFO()) return jobserver.has(fd) || ends.get(pipeKey(s)) === 1;
    return false;
  };
  return [...open]
    .filter(([fd, s]) => given(fd, s))
    .map(([fd]) => fd)
    .sort((a, b) => a - b);
}
