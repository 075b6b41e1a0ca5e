#!/usr/bin/env bash
# Collects a metal-cap-shim field report from every Mac (or macOS guest) in a hosts file, over ssh.
#
# Usage: collect.sh [HOSTS_FILE] [REPORTS_DIR]        (defaults: hosts.txt, reports)
#
# HOSTS_FILE format, one machine per line:
#
#   SSH_DESTINATION  LABEL OF THE PHYSICAL HOST
#
#   - SSH_DESTINATION is anything `ssh` accepts: a Host alias from ~/.ssh/config, host, user@host.
#   - LABEL is the rest of the line (spaces allowed), passed as --host-label. It describes the PHYSICAL machine, e.g.
#     "M1 Ultra 48-core, macOS 26.6.1". A macOS guest cannot see its host's chip or OS, so only you can say it; without a
#     label the matrix groups all guests under "unlabelled host". Bare-metal Macs may leave it empty.
#   - Blank lines and lines starting with # are ignored.
#
#   Example:
#     # guests on the M1 Ultra
#     tahoe-vm-1        M1 Ultra 48-core, macOS 26.6.1
#     admin@10.0.0.12   M1 Ultra 48-core, macOS 26.6.1
#     mini-m4           M4 mini, macOS 26.5
#
# Writes REPORTS_DIR/SSH_DESTINATION.json for each host (SSH_DESTINATION.PROFILE.json when PROFILE is set), then:
#   node build-matrix.js REPORTS_DIR
#
# Environment:
#   PROFILE  profile to report on, a built-in name (default: the CLI's default, host-family)
#   NPX      npx on the remote machines (default npx). Non-interactive ssh sessions often lack the login PATH, e.g.
#            NPX=/opt/homebrew/bin/npx for Homebrew's Node.
#
# `report` exits 0 when it collected a report: a verdict that is not ok, or a refusal (a raising profile on bare
# metal), is recorded in the report as data, and the matrix shows it as ✗ or "refused". Any other outcome (ssh, npx,
# no JSON, no Metal: exit 4) is reported and the host skipped; the script exits 1 at the end if any host failed.
set -euo pipefail

hosts_file=${1:-hosts.txt}
reports_dir=${2:-reports}
npx_cmd=${NPX:-npx}
profile=${PROFILE:-}

if [[ ! -r $hosts_file ]]; then
  echo "collect.sh: cannot read hosts file '$hosts_file' (format: see the top of this script)" >&2
  exit 2
fi
mkdir -p "$reports_dir"

# Quotes a word for the remote POSIX shell (ssh runs its command through the remote login shell): 'it'\''s'.
quote() {
  local s=${1//\'/\'\\\'\'}
  printf "'%s'" "$s"
}

failed=0
collected=0
line_no=0
# Read from fd 3 so nothing inside the loop can swallow the hosts file; ssh -n also keeps ssh off stdin.
while IFS= read -r line <&3 || [[ -n $line ]]; do
  line_no=$((line_no + 1))
  line=${line#"${line%%[![:space:]]*}"} # trim leading whitespace
  [[ -z $line || $line == \#* ]] && continue
  host=${line%%[[:space:]]*}
  label=${line#"$host"}
  label=${label#"${label%%[![:space:]]*}"}
  label=${label%"${label##*[![:space:]]}"} # trim trailing whitespace (and a CR from Windows line ends)

  remote="$npx_cmd --yes metal-cap-shim report --json"
  [[ -n $profile ]] && remote+=" --profile $(quote "$profile")"
  [[ -n $label ]] && remote+=" --host-label $(quote "$label")"

  # One file per host (and per profile, when PROFILE is set, so several profiles can share one folder). Characters
  # outside [A-Za-z0-9._@-] become _, so a name cannot escape the reports folder.
  name=$host${profile:+.$profile}
  out="$reports_dir/${name//[^A-Za-z0-9._@-]/_}.json"
  tmp="$out.tmp"
  echo "collect.sh: $host${label:+ ($label)}" >&2
  status=0
  ssh -n -o BatchMode=yes -o ConnectTimeout=15 "$host" "$remote" >"$tmp" || status=$?
  if [[ $status -eq 0 ]] && grep -q '"metal-cap-shim/field-report@1"' "$tmp"; then
    mv "$tmp" "$out"
    collected=$((collected + 1))
  else
    rm -f "$tmp"
    echo "collect.sh:   FAILED (line $line_no, exit $status); no report written" >&2
    failed=$((failed + 1))
  fi
done 3<"$hosts_file"

echo "collect.sh: $collected report(s) in $reports_dir, $failed host(s) failed" >&2
[[ $failed -eq 0 ]]
