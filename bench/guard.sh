#!/usr/bin/env bash
# What the agents' Bash guard costs one tool call (issue 38, item 2):
# `git-maverick hook pre-tool-use` with Claude Code's hook JSON on stdin, for
# every one-line entry of tests/guard_corpus.txt, in a clone where maverick
# manages a claimed branch (the case where the guard does the most), against
# a process that does nothing (`/bin/true`) and `git --version`.
# The target: a median of at most 5 ms a call.
#
#   bench/guard.sh                   # builds the release binary, then measures
#   RUNS=10 bench/guard.sh           # each line judged RUNS times (default 5)
#   MAVERICK_BIN=/path/to/git-maverick bench/guard.sh
#
# Lines and runs take turns with the baselines (a VM's speed drifts), each
# call timed with bash's own clock. Prints the median, min and max of the
# guard's calls, the baselines' medians, and the ratios.
set -euo pipefail
[[ -n "${EPOCHREALTIME:-}" ]] || { echo "bench/guard.sh needs bash 5 (EPOCHREALTIME)" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "bench/guard.sh needs python3 (to write the hook JSON)" >&2; exit 1; }

RUNS=${RUNS:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${MAVERICK_BIN:-}" ]]; then
	(cd "$here" && cargo build --release --quiet --locked)
	MAVERICK_BIN="${CARGO_TARGET_DIR:-$here/target}/release/git-maverick"
fi
[[ -x "$MAVERICK_BIN" ]] || { echo "no binary at $MAVERICK_BIN" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/maverick-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin" "$work/home" "$work/inputs"
ln -s "$MAVERICK_BIN" "$work/bin/git-maverick"
export PATH="$work/bin:$PATH" HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 \
	GIT_CONFIG_GLOBAL="$work/home/.gitconfig" LC_ALL=C
unset MAVERICK_INSTANCE MAVERICK_INSTANCE_ID CLAUDE_CODE_SESSION_ID CLAUDE_SESSION_ID
git config --global user.name bench
git config --global user.email bench@example.com

# The session of the plugin's hook fixtures, and its instance.
session=5f0c2a9e-81d4-4b7e-9a61-0c3d2b1e7f44
instance=1d77aaf625
git init --quiet --bare --initial-branch=main "$work/origin.git"
git clone --quiet -c maverick.surface=git "$work/origin.git" "$work/agent" 2>/dev/null
cd "$work/agent"
git commit --quiet --allow-empty -m "chore: initial commit"
git push --quiet origin main
git maverick hook install >/dev/null
MAVERICK_INSTANCE=$instance git maverick coord claim 7 --branch maverick/7-x >/dev/null
MAVERICK_INSTANCE=laptop-0a1b2c3d git maverick coord claim 8 --branch maverick/8-y >/dev/null
git switch --quiet -c maverick/7-x
git commit --quiet --allow-empty -m "feat: base"
MAVERICK_INSTANCE=$instance git push --quiet -u origin maverick/7-x
git commit --quiet --allow-empty -m "feat: ahead"
printf 'git push --no-verify origin maverick/7-x\n' >push.sh
printf 'git push origin maverick/7-x\n' >ok.sh

# One hook input a one-line corpus entry.
python3 - "$here/tests/guard_corpus.txt" "$work/inputs" "$session" "$work/agent" <<'PY'
import json, sys
corpus, out, session, cwd = sys.argv[1:]
n = 0
block = False
for line in open(corpus):
    line = line.rstrip("\n")
    if block:
        block = line != ">>"
        continue
    if not line or line.startswith("#"):
        continue
    verdict, _, command = line.partition(" ")
    block = command == "<<"
    if block or command.startswith("@"):
        continue
    hook = {"session_id": session, "cwd": cwd, "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": command}}
    n += 1
    with open(f"{out}/{n:04d}.json", "w") as f:
        json.dump(hook, f)
PY
inputs=("$work"/inputs/*.json)

# us CMD…: the wall time of one run of CMD (stdin from $input), in microseconds.
us() {
	local start=$EPOCHREALTIME
	"$@" <"$input" >/dev/null 2>&1 || true
	local end=$EPOCHREALTIME
	echo $((10#${end/./} - 10#${start/./}))
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

: >"$work/guard" ; : >"$work/true" ; : >"$work/git"
for ((run = 0; run < RUNS; run++)); do
	for input in "${inputs[@]}"; do
		us git-maverick hook pre-tool-use >>"$work/guard"
		us /bin/true >>"$work/true"
		us git --version >>"$work/git"
	done
done

guard=$(median <"$work/guard")
low=$(sort -n "$work/guard" | head -1)
high=$(sort -n "$work/guard" | tail -1)
true_us=$(median <"$work/true")
git_us=$(median <"$work/git")
calls=$(wc -l <"$work/guard")
printf 'pre-tool-use over %d corpus lines x %d runs (%d calls): median %d us, min %d us, max %d us\n' \
	"${#inputs[@]}" "$RUNS" "$calls" "$guard" "$low" "$high"
printf 'baselines: true %d us, git --version %d us\n' "$true_us" "$git_us"
awk -v g="$guard" -v t="$true_us" -v v="$git_us" 'BEGIN {
	printf "ratios: %.2fx true, %.2fx git --version\n", g / t, g / v }'
verdict=ok
if ((guard > 5000)); then verdict="OVER the 5000 us budget"; fi
echo "median against the 5 ms budget: $verdict"
[[ $verdict == ok ]]
