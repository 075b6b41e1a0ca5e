import { DEFAULT_PROFILE } from '../profiles.js';

/** The help lines for --profile, shared by every command that takes one; `width` is the option column's width. */
export function profileHelp(width: number): string {
  return `${'--profile P'.padEnd(width)}built-in name (default ${DEFAULT_PROFILE}) or JSON; a profile object printed by
  ${' '.repeat(width)}\`profiles --json\` or \`audit --json\` is accepted back as it is`;
}
