#!/usr/bin/env bash
# What the pre-push hook costs a push (issues 4 and 11: at most 2 ms at the
# median on a managed branch over the same push without a hook, in this one
# run: the "added ms" column of `managed`). The hook `install` writes into
# .git/hooks is a copy of git-maverick: git starts that one process, no
# shell and no env. An empty shell hook (`empty-hook`) shows what a shell
# start alone costs, `/bin/true` what any process git starts costs. On a managed branch
# the hook reads local records, runs no git process when no config file can
# name a maverick key, needs no merge-base walk for the common fast-forward
# (the pushed commits are loose and their parent is the remote head), and
# appends its record to a log instead of replacing a file.
#
#   bench/prepush.sh            # builds the release binary, then measures
#   RUNS=100 bench/prepush.sh   # more runs
#   MAVERICK_BIN=/path/to/git-maverick bench/prepush.sh
#
# One bare origin on local disk per case, and one clone per case, each
# pushing one new commit per run to its own branch:
#   none        no pre-push hook
#   true-hook   /bin/true as the hook: what git's starting any hook costs
#   empty-hook  a shell script that reads its stdin: a shell's start on top
#   ls-remote   a hook that only runs `git ls-remote` (the cost of asking the
#               remote, which maverick's hook never does)
#   unmanaged   maverick's hook, a branch it does not manage (the hot path)
#   managed     maverick's hook, the claimed branch: every check runs
#   managed-env the same with the hook file earlier versions wrote
#               (`#!/usr/bin/env git-maverick`: env, then maverick)
# The cases take turns run by run (a VM's speed drifts between minutes), each
# run timed with bash's own clock. Prints the medians and the ratios to `none`.
set -euo pipefail
[[ -n "${EPOCHREALTIME:-}" ]] || { echo "bench/prepush.sh needs bash 5 (EPOCHREALTIME)" >&2; exit 1; }

RUNS=${RUNS:-100}
here=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${MAVERICK_BIN:-}" ]]; then
	(cd "$here" && cargo build --release --quiet)
	MAVERICK_BIN="${CARGO_TARGET_DIR:-$here/target}/release/git-maverick"
fi
[[ -x "$MAVERICK_BIN" ]] || { echo "no binary at $MAVERICK_BIN" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/maverick-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin" "$work/home"
ln -s "$MAVERICK_BIN" "$work/bin/git-maverick"
export PATH="$work/bin:$PATH" HOME="$work/home" GIT_CONFIG_NOSYSTEM=1
# No MAVERICK_INSTANCE: the hook finds the instance as a person's clone does
# (maverick.instance, then the id kept in the clone), which costs one
# `git config` process.
export GIT_CONFIG_GLOBAL="$work/home/.gitconfig"
unset MAVERICK_INSTANCE MAVERICK_INSTANCE_ID CLAUDE_CODE_SESSION_ID CLAUDE_SESSION_ID
# As git gives its hooks (the "hook alone" cases run without git around them).
GIT_EXEC_PATH=$(git --exec-path)
export GIT_EXEC_PATH
git config --global user.name bench
git config --global user.email bench@example.com
git config --global init.defaultBranch main

git init --quiet --bare "$work/origin.git"
git clone --quiet "$work/origin.git" "$work/seed" 2>/dev/null
git -C "$work/seed" commit --quiet --allow-empty -m "chore: seed"
git -C "$work/seed" push --quiet origin main

# Each case pushes to an origin of its own, a copy of the seeded one, so
# that no case pays for objects another case's pushes left behind.
setup() { # case branch
	cp -R "$work/origin.git" "$work/origin-$1.git"
	git clone --quiet "$work/origin-$1.git" "$work/$1"
	git -C "$work/$1" switch --quiet -c "$2"
	git -C "$work/$1" commit --quiet --allow-empty -m "feat: first"
}
setup none bench/none
setup true-hook bench/true-hook
cp "$(type -P true)" "$work/true-hook/.git/hooks/pre-push"
setup empty-hook bench/empty-hook
printf '#!/bin/sh\ncat >/dev/null\n' >"$work/empty-hook/.git/hooks/pre-push"
chmod +x "$work/empty-hook/.git/hooks/pre-push"
setup ls-remote bench/ls-remote
printf '#!/bin/sh\ngit ls-remote "$1" >/dev/null\n' >"$work/ls-remote/.git/hooks/pre-push"
chmod +x "$work/ls-remote/.git/hooks/pre-push"
setup unmanaged bench/unmanaged
setup managed maverick/1-bench
setup managed-env maverick/3-bench
# Each clone is its own instance and claims its own issue: `unmanaged`
# pushes a branch it holds no claim on, `managed` the one it claimed.
(cd "$work/unmanaged" && git maverick hook install >/dev/null)
(cd "$work/unmanaged" && git maverick --lease-ttl 4h coord claim 2 --branch maverick/2-bench >/dev/null)
(cd "$work/managed" && git maverick hook install >/dev/null)
(cd "$work/managed" && git maverick --lease-ttl 4h coord claim 1 --branch maverick/1-bench >/dev/null)
(cd "$work/managed-env" && git maverick --lease-ttl 4h coord claim 3 --branch maverick/3-bench >/dev/null 2>&1)
printf '#!/usr/bin/env git-maverick\n# >>> git-maverick pre-push >>>\n# <<< git-maverick pre-push <<<\n' \
	>"$work/managed-env/.git/hooks/pre-push"
chmod +x "$work/managed-env/.git/hooks/pre-push"
for case in none true-hook empty-hook ls-remote unmanaged managed managed-env; do
	git -C "$work/$case" push --quiet -u origin HEAD
done

commit() { git -C "$work/$1" commit --quiet --allow-empty -m "feat: next"; }

# One measured run of "$@", appended to $out: wall microseconds (bash's
# clock, no extra process) and the CPU seconds of the run's processes
# (bash's `time`: user, system).
TIMEFORMAT='%3U %3S'
measure() {
	local t0 t1 cpu
	t0=$EPOCHREALTIME
	cpu=$({ time "$@" >/dev/null 2>&1; } 2>&1)
	t1=$EPOCHREALTIME
	echo "$t0 $t1 $cpu" >>"$out"
}
# median, min (ms) and mean CPU (ms) of a file of measure lines.
summary() {
	awk '{ printf "%.3f %.3f\n", ($2 - $1) * 1000, ($3 + $4) * 1000 }' "$1" | sort -n | awk '
		{ w[NR] = $1; c += $2 }
		END { m = (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2
			printf "%.3f %.3f %.3f\n", m, w[1], c / NR }'
}

# The machine's speed drifts over a run (a VM's neighbours, caches), so the
# cases take turns: run i of every case, then run i + 1. Three warm-up rounds.
cases=(none true-hook empty-hook ls-remote unmanaged managed managed-env)
for ((i = 0; i < RUNS + 3; i++)); do
	for case in "${cases[@]}"; do
		commit "$case"
		out=$work/$case.times
		((i < 3)) && out=/dev/null
		measure git -C "$work/$case" push --quiet
	done
done
declare -A median_ms push_min push_cpu
for case in "${cases[@]}"; do
	read -r median min mean_cpu < <(summary "$work/$case.times")
	median_ms[$case]=$median push_min[$case]=$min push_cpu[$case]=$mean_cpu
done
tool="bash's clock, $RUNS runs a case, taking turns"

# The hook alone, fed the line git feeds it: what it adds without the noise
# of the push around it (an empty shell script is the floor).
printf '#!/bin/sh\ncat >/dev/null\n' >"$work/empty-hook.sh"
chmod +x "$work/empty-hook.sh"
hook_line() { # case branch
	local sha
	sha=$(git -C "$work/$1" rev-parse HEAD)
	echo "refs/heads/$2 $sha refs/heads/$2 $(git -C "$work/origin-$1.git" rev-parse "$2")" >"$work/$1.line"
}
hook_line unmanaged bench/unmanaged
hook_line managed maverick/1-bench
hook_line ls-remote bench/ls-remote
hook_cases=("empty:$work/empty-hook.sh:unmanaged" "ls-remote:$work/ls-remote/.git/hooks/pre-push:ls-remote"
	"unmanaged:$work/unmanaged/.git/hooks/pre-push:unmanaged" "managed:$work/managed/.git/hooks/pre-push:managed")
# As git runs it: in the clone, with the remote's name and URL (every case
# pays the same subshell).
run_hook() { (cd "$work/$3" && exec "$2" origin "$work/origin-$3.git" <"$work/$3.line"); }
for ((i = 0; i < RUNS * 2 + 5; i++)); do
	for entry in "${hook_cases[@]}"; do
		IFS=: read -r name hook dir <<<"$entry"
		out=$work/hook-$name.times
		((i < 5)) && out=/dev/null
		measure run_hook "$name" "$hook" "$dir"
	done
done
declare -A hook_ms hook_min cpu
for entry in "${hook_cases[@]}"; do
	name=${entry%%:*}
	read -r median min mean_cpu < <(summary "$work/hook-$name.times")
	hook_ms[$name]=$median hook_min[$name]=$min cpu[$name]=$mean_cpu
done

# Every managed push went through the hook's checks and was allowed.
[[ "$(git -C "$work/origin-managed.git" rev-parse maverick/1-bench)" == "$(git -C "$work/managed" rev-parse HEAD)" ]]
[[ "$(git -C "$work/origin-managed-env.git" rev-parse maverick/3-bench)" == "$(git -C "$work/managed-env" rev-parse HEAD)" ]]

echo "median time of one \`git push\` to a local bare origin ($tool)"
# "over empty hook": what maverick adds beyond the shell hook every hook
# manager and hand-written hook costs (sh's start and git's hook spawn).
printf '%-12s %10s %10s %12s %14s %10s %12s %14s\n' case "median ms" "vs none" "added ms" "over empty ms" "min ms" "added min" "added cpu ms"
base=${median_ms[none]}
for case in "${cases[@]}"; do
	awk -v c="$case" -v m="${median_ms[$case]}" -v b="$base" -v e="${median_ms[empty-hook]}" \
		-v cp="${push_cpu[$case]:-0}" -v cb="${push_cpu[none]:-0}" \
		-v mn="${push_min[$case]:-0}" -v mb="${push_min[none]:-0}" \
		'BEGIN { printf "%-12s %10.2f %9.2fx %+12.2f %+14.2f %10.2f %+12.2f %+14.2f\n", c, m, m / b, m - b, m - e, mn, mn - mb, cp - cb }'
done
echo
echo "median time of the pre-push hook alone, on the line git gives it"
printf '%-12s %10s %12s %10s %12s %10s %14s\n' hook "median ms" "vs empty ms" "min ms" "vs empty min" "cpu ms" "vs empty cpu"
for entry in "${hook_cases[@]}"; do
	name=${entry%%:*}
	awk -v c="$name" -v m="${hook_ms[$name]}" -v b="${hook_ms[empty]}" -v cp="${cpu[$name]:-0}" -v cb="${cpu[empty]:-0}" \
		-v mn="${hook_min[$name]:-0}" -v mb="${hook_min[empty]:-0}" \
		'BEGIN { printf "%-12s %10.2f %+12.2f %10.2f %+12.2f %10.2f %+14.2f\n", c, m, m - b, mn, mn - mb, cp, cp - cb }'
done
echo "(cpu: mean user+system time of the run's processes; on a busy machine it moves far less than wall time)"
