// The CLI's words for what the library says in the API's: an error names the option the user typed, never the
// function option behind it, offers only options the command that ran has, and names that command. One place, so
// that every command speaks alike (lib/cli/main.ts passes every error's message through it).

/** The recorded snapshot a command without Metal can be tried on instead: doctor's has a fault to show. */
const OFFLINE_SNAPSHOT: Readonly<Record<string, string>> = {
  doctor: 'github-macos-14-arm64-runner',
  report: 'vz-guest-m1-ultra-tahoe-stock --no-doctor',
};
const DEFAULT_OFFLINE_SNAPSHOT = 'vz-guest-m1-ultra-tahoe-stock';

/** `audit() option 'release' (--rules)` and the like: an API option named with the CLI flag it came from. */
const API_OPTION_WITH_FLAG = /\b[A-Za-z]+\(\) option '[^']*' \((--[\w-]+)\)/g;
/** exec's own offer, which only exec can take up. */
const ALLOW_UNPATCHED = / \(--allow-unpatched runs the program unpatched\)/g;
/** The library's suggestion, made for `audit`, of a recorded snapshot to audit instead. */
const AUDIT_OFFLINE = /\. Audit a recorded snapshot instead: metal-cap-shim audit --snapshot \S+/g;

/**
 * `message` in the words of command `name`, whose options are `options`: `doctor() option 'device' (--device): …`
 * becomes `--device: …`, exec's `--allow-unpatched` is offered only where the command has it, and exec's name in a
 * message another command ran into (bench injects as exec does) is that command's.
 */
export function cliWords(message: string, name: string, options: readonly string[]): string {
  let words = message.replace(API_OPTION_WITH_FLAG, '$1').replace(AUDIT_OFFLINE, '');
  if (!options.includes('allow-unpatched')) words = words.replace(ALLOW_UNPATCHED, '');
  if (name !== 'exec') words = words.replace(/\bexec injects\b/g, `${name} injects`);
  return words;
}

/**
 * For an error that says there is no Metal here: `. Offline, on any OS: metal-cap-shim probe --snapshot …`, the same
 * command on a recorded snapshot, where the command takes one; '' where it does not.
 */
export function offlineHint(name: string, options: readonly string[]): string {
  if (!options.includes('snapshot')) return '';
  return `. Offline, on any OS: metal-cap-shim ${name} --snapshot ${OFFLINE_SNAPSHOT[name] ?? DEFAULT_OFFLINE_SNAPSHOT}`;
}
