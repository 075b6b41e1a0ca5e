// Progress of a build whose steps are known before it starts, for a person watching it: on a terminal one status
// line rewritten in place (what is compiling now); elsewhere (CI, a pipe, a log file) one plain line per finished
// step. Every line says the step, the total and the time since the start: `[ 3/21]  12.4s  compiled src-native/…`.

/** Whether progress may rewrite a line in place: a terminal, and not CI (whose log viewers show every `\r` frame). */
export function inPlace(stream = process.stdout, env = process.env) {
  return stream.isTTY === true && !env.CI;
}

/**
 * A reporter for `total` steps. `write` takes text (a stream's write); `now` returns milliseconds; `tty` selects the
 * line rewritten in place, cut to `columns` so that it never wraps. start(name, doing) says a step began (`compiling`, `linking`); done(name, verb) that
 * it ended (`compiled`, `linked`); end() clears the status line, so what is written next starts on a line of its own.
 */
export function createProgress({ total, write, now = () => performance.now(), tty = false, columns = 80 }) {
  const began = now();
  const width = String(total).length;
  const running = [];
  let finished = 0;
  let shown = false;
  const head = () =>
    `[${String(finished).padStart(width)}/${total}] ${((now() - began) / 1000).toFixed(1).padStart(5)}s`;
  const status = () => {
    const names = running.slice(0, 2).map((r) => `${r.doing} ${r.name}`);
    if (running.length > 2) names.push(`${running.length - 2} more`);
    write(`\r\x1b[K${`${head()}  ${names.join(', ')}`.slice(0, Math.max(columns - 1, 20))}`);
    shown = true;
  };
  return {
    start(name, doing = 'compiling') {
      running.push({ name, doing });
      if (tty) status();
    },
    done(name, verb) {
      const at = running.findIndex((r) => r.name === name);
      if (at >= 0) running.splice(at, 1);
      finished++;
      if (tty) status();
      else write(`${head()}  ${verb} ${name}\n`);
    },
    end() {
      if (shown) write('\r\x1b[K');
      shown = false;
    },
  };
}

/** A duration for a person: `42s`, `3m07s`, `1h02m`. */
export function formatDuration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/**
 * The time left when `done` of `total` steps took `elapsedMs`, at the rate so far; null before the first step ends
 * (no rate yet) or when the counts make no sense.
 */
export function timeLeft(done, total, elapsedMs) {
  if (!(done > 0) || !(total >= done) || !(elapsedMs >= 0)) return null;
  return (elapsedMs / done) * (total - done);
}

/** One line of ninja's status (`[12/137] Building CXX object …`): the steps finished and the total, or null. */
export function ninjaStatus(line) {
  const m = /^\[(\d{1,9})\/(\d{1,9})\] /.exec(line);
  return m === null ? null : { done: Number(m[1]), total: Number(m[2]) };
}
