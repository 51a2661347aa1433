#!/usr/bin/env bash
# What the pre-push hook costs a push (issues 4 and 11: at most 2 ms at the
# median on a managed branch, in this one run). Any hook at all costs git a
# shell start (the `empty-hook` case, about 2 to 3 ms here), so maverick's
# budget is read against it: the "over empty ms" column. On a managed branch
# the hook runs one `git config` (the instance id) and, for the common
# fast-forward (the pushed commits are loose and reach the remote head), no
# merge-base walk.
#
#   bench/prepush.sh            # builds the release binary, then measures
#   RUNS=100 bench/prepush.sh   # more runs
#   MAVERICK_BIN=/path/to/git-maverick bench/prepush.sh
#
# One bare origin on local disk, and one clone per case, each pushing one new
# commit per run to its own branch:
#   none        no pre-push hook
#   ls-remote   a hook that only runs `git ls-remote` (the cost of asking the
#               remote, which maverick's hook never does)
#   unmanaged   maverick's hook, a branch it does not manage (the hot path)
#   managed     maverick's hook, the claimed branch: every check runs
# Uses hyperfine when installed (apt-get install hyperfine), else a loop
# timed with `date +%s%N`. Prints the medians and the ratios to `none`.
set -euo pipefail

RUNS=${RUNS:-60}
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

setup() { # case branch
	git clone --quiet "$work/origin.git" "$work/$1"
	git -C "$work/$1" switch --quiet -c "$2"
	git -C "$work/$1" commit --quiet --allow-empty -m "feat: first"
}
setup none bench/none
setup empty-hook bench/empty-hook
printf '#!/bin/sh\ncat >/dev/null\n' >"$work/empty-hook/.git/hooks/pre-push"
chmod +x "$work/empty-hook/.git/hooks/pre-push"
setup ls-remote bench/ls-remote
printf '#!/bin/sh\ngit ls-remote "$1" >/dev/null\n' >"$work/ls-remote/.git/hooks/pre-push"
chmod +x "$work/ls-remote/.git/hooks/pre-push"
setup unmanaged bench/unmanaged
setup managed maverick/1-bench
# Each clone is its own instance and claims its own issue: `unmanaged`
# pushes a branch it holds no claim on, `managed` the one it claimed.
(cd "$work/unmanaged" && git maverick hook install >/dev/null)
(cd "$work/unmanaged" && git maverick --lease-ttl 4h coord claim 2 --branch maverick/2-bench >/dev/null)
(cd "$work/managed" && git maverick hook install >/dev/null)
(cd "$work/managed" && git maverick --lease-ttl 4h coord claim 1 --branch maverick/1-bench >/dev/null)
for case in none empty-hook ls-remote unmanaged managed; do
	git -C "$work/$case" push --quiet -u origin HEAD
done

# Mean CPU time (user + system, the process and its children) of a run, in ms.
cpu_ms() {
	local user sys
	user=$(sed -n 's/.*"user": *\([0-9.e-]*\).*/\1/p' "$1" | head -1)
	sys=$(sed -n 's/.*"system": *\([0-9.e-]*\).*/\1/p' "$1" | head -1)
	awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", (u + s) * 1000 }'
}
declare -A cpu push_cpu push_min hook_min
# Fastest run, in ms: the least disturbed by other load on the machine.
min_ms() { sed -n 's/.*"min": *\([0-9.e-]*\).*/\1/p' "$1" | head -1 | awk '{ printf "%.3f", $1 * 1000 }'; }

commit() { git -C "$work/$1" commit --quiet --allow-empty -m "feat: next"; }
push() { git -C "$work/$1" push --quiet; }

cases=(none empty-hook ls-remote unmanaged managed)
declare -A median_ms
if command -v hyperfine >/dev/null; then
	for case in "${cases[@]}"; do
		hyperfine --style none --warmup 3 --runs "$RUNS" -N 2>/dev/null \
			--prepare "git -C $work/$case commit --quiet --allow-empty -m next" \
			--export-json "$work/$case.json" \
			"git -C $work/$case push --quiet" >/dev/null
		median_ms[$case]=$(sed -n 's/.*"median": *\([0-9.e-]*\).*/\1/p' "$work/$case.json" | head -1 |
			awk '{ printf "%.3f", $1 * 1000 }')
		push_cpu[$case]=$(cpu_ms "$work/$case.json")
		push_min[$case]=$(min_ms "$work/$case.json")
	done
	tool="hyperfine $(hyperfine --version | awk '{print $2}'), $RUNS runs"
else
	for case in "${cases[@]}"; do
		: >"$work/$case.times"
		for ((i = 0; i < RUNS + 3; i++)); do
			commit "$case"
			start=$(date +%s%N)
			push "$case"
			end=$(date +%s%N)
			((i >= 3)) && echo $(((end - start) / 1000)) >>"$work/$case.times"
		done
		median_ms[$case]=$(sort -n "$work/$case.times" | awk '{ a[NR] = $1 } END {
			m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.3f", m / 1000 }')
	done
	tool="date +%s%N loop, $RUNS runs"
fi

# The hook alone, fed the line git feeds it: what it adds without the noise
# of the push around it (an empty shell script is the floor).
printf '#!/bin/sh\ncat >/dev/null\n' >"$work/empty-hook.sh"
chmod +x "$work/empty-hook.sh"
hook_line() { # case branch
	local sha
	sha=$(git -C "$work/$1" rev-parse HEAD)
	echo "refs/heads/$2 $sha refs/heads/$2 $(git -C "$work/origin.git" rev-parse "$2")" >"$work/$1.line"
}
hook_line unmanaged bench/unmanaged
hook_line managed maverick/1-bench
hook_line ls-remote bench/ls-remote
hook_cases=("empty:$work/empty-hook.sh:unmanaged" "ls-remote:$work/ls-remote/.git/hooks/pre-push:ls-remote"
	"unmanaged:$work/unmanaged/.git/hooks/pre-push:unmanaged" "managed:$work/managed/.git/hooks/pre-push:managed")
declare -A hook_ms
for entry in "${hook_cases[@]}"; do
	IFS=: read -r name hook dir <<<"$entry"
	cmd="cd $work/$dir && $hook origin $work/origin.git <$work/$dir.line"
	if command -v hyperfine >/dev/null; then
		# -N and an explicit sh: every case pays the same wrapper, no correction.
		hyperfine --style none -N --warmup 5 --runs "$((RUNS * 2))" --export-json "$work/hook-$name.json" \
			"sh -c '$cmd'" >/dev/null 2>&1
		hook_ms[$name]=$(sed -n 's/.*"median": *\([0-9.e-]*\).*/\1/p' "$work/hook-$name.json" | head -1 |
			awk '{ printf "%.3f", $1 * 1000 }')
		cpu[$name]=$(cpu_ms "$work/hook-$name.json")
		hook_min[$name]=$(min_ms "$work/hook-$name.json")
	else
		: >"$work/hook-$name.times"
		for ((i = 0; i < RUNS * 2; i++)); do
			start=$(date +%s%N)
			sh -c "$cmd"
			end=$(date +%s%N)
			echo $(((end - start) / 1000)) >>"$work/hook-$name.times"
		done
		hook_ms[$name]=$(sort -n "$work/hook-$name.times" | awk '{ a[NR] = $1 } END {
			m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.3f", m / 1000 }')
	fi
done

# Every managed push went through the hook's checks and was allowed.
[[ "$(git -C "$work/origin.git" rev-parse maverick/1-bench)" == "$(git -C "$work/managed" rev-parse HEAD)" ]]

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
echo "(cpu: mean user+system time of the process tree; on a busy machine it moves far less than wall time)"
