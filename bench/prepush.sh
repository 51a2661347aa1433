#!/usr/bin/env bash
# What the pre-push guard costs a push (issue 26, item 5), in one run with
# the cases taking turns, against git-lfs's pre-push hook on the same push:
#   none        no pre-push hook
#   empty-hook  an empty `#!/bin/sh` hook: what any hook costs
#   git-lfs     git-lfs's hook (`git lfs install --local`), no LFS files
#   unmanaged   maverick's hook (`git maverick hook install`), a branch it
#               does not manage: a shell, then the guard (maverick-pre-push,
#               built beside git-maverick), a few stats
#   managed     maverick's hook, the claimed branch, pushed by a person (no
#               MAVERICK_INSTANCE): every check runs; the instance is the
#               one the claim stamped (issue 42: no `git config` while the
#               files it came from are unchanged), git answers the rest (the
#               remote-tracking reflog, whether the push is a fast-forward)
#   agent       the same, pushed with MAVERICK_INSTANCE set (an agent)
# The targets: on a managed branch the guard adds at most 0.15x what git-lfs
# adds, for a person as for an agent; on an unmanaged one at most 1.5 ms
# more than the empty hook. Measure on a quiet machine: the script prints
# the load average it ran under (/proc/loadavg) before and after.
#
#   bench/prepush.sh            # builds the release binary, then measures
#   RUNS=200 bench/prepush.sh   # more runs
#   MAVERICK_BIN=/path/to/git-maverick bench/prepush.sh
#
# One bare origin on local disk per case, and one clone per case, each
# pushing one new commit per run to its own branch. The cases take turns run
# by run (a VM's speed drifts between minutes), each run timed with bash's
# own clock. Prints the medians, what each case adds to `none`, and the ratios.
set -euo pipefail
[[ -n "${EPOCHREALTIME:-}" ]] || { echo "bench/prepush.sh needs bash 5 (EPOCHREALTIME)" >&2; exit 1; }
command -v git-lfs >/dev/null 2>&1 || { echo "bench/prepush.sh needs git-lfs (apt-get install git-lfs)" >&2; exit 1; }

RUNS=${RUNS:-100}
load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown; }
load_before=$(load)
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
# The hook runs the guard alone (maverick-pre-push) when it is beside
# git-maverick, as `cargo install` and the release archive put it.
guard_program=$(dirname "$MAVERICK_BIN")/maverick-pre-push
if [[ -x "$guard_program" ]]; then
	ln -s "$guard_program" "$work/bin/maverick-pre-push"
	echo "the hook runs $guard_program"
else
	echo "the hook runs git-maverick hook pre-push (no maverick-pre-push beside $MAVERICK_BIN)"
fi
export PATH="$work/bin:$PATH" HOME="$work/home" GIT_CONFIG_NOSYSTEM=1
export GIT_CONFIG_GLOBAL="$work/home/.gitconfig"
# No MAVERICK_INSTANCE: the guard finds the instance as a person's clone
# does (`git config`, then the id kept in the clone).
unset MAVERICK_INSTANCE MAVERICK_INSTANCE_ID CLAUDE_CODE_SESSION_ID CLAUDE_SESSION_ID
git config --global user.name bench
git config --global user.email bench@example.com
git config --global init.defaultBranch main
git config --global maintenance.auto false
git config --global gc.auto 0

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
setup empty-hook bench/empty-hook
printf '#!/bin/sh\n' >"$work/empty-hook/.git/hooks/pre-push"
chmod +x "$work/empty-hook/.git/hooks/pre-push"
setup git-lfs bench/git-lfs
(cd "$work/git-lfs" && git lfs install --local >/dev/null)
setup unmanaged bench/unmanaged
setup managed maverick/1-bench
setup agent maverick/3-bench
# Each clone is its own instance: `unmanaged` pushes a branch it holds no
# claim on (it claims another), `managed` the one it claimed.
(cd "$work/unmanaged" && git maverick hook install >/dev/null)
(cd "$work/unmanaged" && git maverick --lease-ttl 4h coord claim 2 --branch maverick/2-bench >/dev/null)
(cd "$work/managed" && git maverick hook install >/dev/null)
(cd "$work/managed" && git maverick --lease-ttl 4h coord claim 1 --branch maverick/1-bench >/dev/null)
(cd "$work/agent" && git maverick hook install >/dev/null)
(cd "$work/agent" && MAVERICK_INSTANCE=bench-agent git maverick --lease-ttl 4h coord claim 3 --branch maverick/3-bench >/dev/null)
cases=(none empty-hook git-lfs unmanaged managed agent)
for case in "${cases[@]}"; do
	MAVERICK_INSTANCE=$([[ $case == agent ]] && echo bench-agent) git -C "$work/$case" push --quiet -u origin HEAD
done
# A person's configuration was written a while before the push: the stamp
# of the instance vouches only for files left alone for a second (as git's
# index does not trust a file modified in the same tick as itself).
sleep 1.1

commit() { git -C "$work/$1" commit --quiet --allow-empty -m "feat: next"; }

# One measured run of "$@", appended to $out: wall microseconds (bash's
# clock, no extra process).
measure() {
	local t0 t1
	t0=$EPOCHREALTIME
	"$@" >/dev/null 2>&1
	t1=$EPOCHREALTIME
	echo "$t0 $t1" >>"$out"
}
# median and min (ms) of a file of measure lines.
summary() {
	awk '{ printf "%.3f\n", ($2 - $1) * 1000 }' "$1" | sort -n | awk '
		{ w[NR] = $1 }
		END { m = (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2
			printf "%.3f %.3f\n", m, w[1] }'
}

# The cases take turns: run i of every case, then run i + 1. Three warm-up rounds.
for ((i = 0; i < RUNS + 3; i++)); do
	for case in "${cases[@]}"; do
		commit "$case"
		out=$work/$case.times
		((i < 3)) && out=/dev/null
		if [[ $case == agent ]]; then
			MAVERICK_INSTANCE=bench-agent measure git -C "$work/$case" push --quiet
		else
			measure git -C "$work/$case" push --quiet
		fi
	done
done
[[ -f "$work/managed/.git/maverick/instance-stamp.json" ]] \
	|| { echo "the person's clone has no stamp of its instance" >&2; exit 1; }

# Every push went through: the managed one through every check, allowed.
for case in "${cases[@]}"; do
	branch=$(git -C "$work/$case" branch --show-current)
	[[ "$(git -C "$work/origin-$case.git" rev-parse "$branch")" == "$(git -C "$work/$case" rev-parse HEAD)" ]] \
		|| { echo "the pushes of $case did not all land" >&2; exit 1; }
done

declare -A median_ms min_ms
for case in "${cases[@]}"; do
	read -r median min < <(summary "$work/$case.times")
	median_ms[$case]=$median min_ms[$case]=$min
done

echo "median time of one \`git push\` to a local bare origin (bash's clock, $RUNS runs a case, taking turns)"
echo "load average (1, 5, 15 min) before: $load_before; after: $(load); $(nproc 2>/dev/null || echo '?') cores"
# The managed check reads the branch's and its remote-tracking ref's reflogs
# (one git process), which grow by an entry a push: say how long they ended.
reflog_len() { git -C "$work/managed" log -g --format=%gd "$1" -- | wc -l; }
echo "managed: the reflogs the check reads ended with $(reflog_len maverick/1-bench) (the branch) and $(reflog_len origin/maverick/1-bench) (its remote-tracking ref) entries"
printf '%-12s %10s %10s %10s\n' case "median ms" "added ms" "min ms"
base=${median_ms[none]}
for case in "${cases[@]}"; do
	awk -v c="$case" -v m="${median_ms[$case]}" -v b="$base" -v mn="${min_ms[$case]}" \
		'BEGIN { printf "%-12s %10.2f %+10.2f %10.2f\n", c, m, m - b, mn }'
done
echo
# The ratios, by the medians and by the fastest runs (on a busy machine
# the medians carry its queueing; the fastest runs are the cost itself).
ratios() { # label none empty-hook git-lfs unmanaged managed agent
	awk -v l="$1" -v b="$2" -v e="$3" -v lfs="$4" -v u="$5" -v m="$6" -v a="$7" 'BEGIN {
		added_lfs = lfs - b; added_m = m - b; added_a = a - b
		printf "%s: managed (a person) adds %.2f ms, git-lfs %.2f ms: %.3fx what git-lfs adds (target: at most 0.15x)\n", l, added_m, added_lfs, (added_lfs > 0 ? added_m / added_lfs : 0)
		printf "%s: managed (an agent) adds %.2f ms: %.3fx what git-lfs adds\n", l, added_a, (added_lfs > 0 ? added_a / added_lfs : 0)
		printf "%s: unmanaged adds %+.2f ms over the empty hook (which adds %.2f ms; target: at most +1.5 ms)\n", l, u - e, e - b
	}'
}
# CPU time of each hook alone (perf's task-clock, the hook and its children),
# run with one pushed ref on stdin as git hands it: a figure a busy machine
# disturbs much less than wall time, which waits for a core. A shell runs
# each (the same for every case, `none` included).
cpu_ms() { # dir hook
	local branch head url=$work/origin-$1.git
	branch=$(git -C "$work/$1" branch --show-current)
	head=$(git -C "$work/$1" rev-parse HEAD)
	printf 'refs/heads/%s %s refs/heads/%s %s\n' "$branch" "$head" "$branch" "$head" >"$work/$1.stdin"
	(cd "$work/$1" && perf stat -x, -e task-clock -r "$RUNS" -- sh -c '"$0" origin "$1" <"$2"' "$2" "$url" "$work/$1.stdin" 2>&1 >/dev/null) |
		awk -F, '/task-clock/ { printf "%.2f", $1 }'
}
if command -v perf >/dev/null 2>&1 && perf stat -e task-clock true >/dev/null 2>&1; then
	declare -A cpu
	cpu[none]=$(cpu_ms none :)
	for case in empty-hook git-lfs unmanaged managed agent; do
		if [[ $case == agent ]]; then
			cpu[$case]=$(MAVERICK_INSTANCE=bench-agent cpu_ms "$case" .git/hooks/pre-push)
		else
			cpu[$case]=$(cpu_ms "$case" .git/hooks/pre-push)
		fi
	done
	echo "CPU time of the hook alone (perf task-clock, mean of $RUNS, ms; none: the shell that runs it)"
	for case in none empty-hook git-lfs unmanaged managed agent; do
		awk -v c="$case" -v t="${cpu[$case]}" -v b="${cpu[none]}" 'BEGIN { printf "%-12s %10.2f %+10.2f\n", c, t, t - b }'
	done
	awk -v b="${cpu[none]}" -v e="${cpu[empty-hook]}" -v l="${cpu[git-lfs]}" -v u="${cpu[unmanaged]}" -v m="${cpu[managed]}" -v a="${cpu[agent]}" 'BEGIN {
		printf "cpu: managed (a person) %.3fx, (an agent) %.3fx what git-lfs adds; unmanaged %+.2f ms over the empty hook\n", (m - b) / (l - b), (a - b) / (l - b), u - e
	}'
	echo
fi
ratios medians "${median_ms[none]}" "${median_ms[empty-hook]}" "${median_ms[git-lfs]}" "${median_ms[unmanaged]}" "${median_ms[managed]}" "${median_ms[agent]}"
ratios fastest "${min_ms[none]}" "${min_ms[empty-hook]}" "${min_ms[git-lfs]}" "${min_ms[unmanaged]}" "${min_ms[managed]}" "${min_ms[agent]}"
