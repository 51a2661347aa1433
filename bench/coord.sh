#!/usr/bin/env bash
# Benchmark: what the claim protocol costs on the git surface, against the
# plain git operations it is made of, on a local bare origin; then how it
# scales with a fleet: N clones claiming N different issues at once.
#
#   bench/coord.sh [RUNS] [ROUNDS]
#
# RUNS (default 30): runs of each single operation (medians and ratios).
# ROUNDS (default 5): rounds of each fleet size N = 1, 4, 16, 32 (medians):
#   at once       N clones claim N different new issues at the same moment
#   in turn       the same N claims, one after another
#   pushes        N clones push a new branch each at the same moment
#   dispatch      N agents run `dispatch` at once with N free slots
# then, once each: 16 racers claiming one issue at once (how many hold it),
# and 12 agents dispatching at once with 12 free slots (distinct issues,
# exits 6).
#
# Not part of the test suite: speed is measured here, never timed in tests.
set -euo pipefail
runs=${1:-30}
rounds=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --quiet --release --locked --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release/git-maverick"
work=$(mktemp -d "${TMPDIR:-/tmp}/maverick-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export GIT_CONFIG_GLOBAL="$work/gitconfig" GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
export MAVERICK_INSTANCE=bench
unset GH_TOKEN GITHUB_TOKEN GITHUB_API_URL

git init --quiet --bare --initial-branch=main "$work/origin.git"
git clone --quiet "$work/origin.git" "$work/clone" 2>/dev/null
cd "$work/clone"
git commit --quiet --allow-empty -m "chore: initial commit"
git push --quiet origin HEAD:main
"$bin" coord claim 1 >/dev/null

# median_ms CMD...: run CMD $runs times, print the median wall time in ms.
median_ms() {
  local samples=()
  for _ in $(seq "$runs"); do
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s%N)
    samples+=($(( (end - start) / 1000 )))
  done
  printf '%s\n' "${samples[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}

n=100
claim_release() {
  n=$((n + 1))
  "$bin" coord claim "$n" && "$bin" coord release "$n"
}
push_twice() {
  n=$((n + 1))
  git push --quiet origin "HEAD:refs/heads/bench-$n" && git push --quiet origin ":refs/heads/bench-$n"
}

ls_remote=$(median_ms git ls-remote origin)
fetch=$(median_ms git fetch --quiet origin '+refs/maverick/issue/1:refs/bench/1')
read=$(median_ms "$bin" coord read 1)
heartbeat=$(median_ms "$bin" coord heartbeat 1)
push=$(median_ms git push --quiet origin "HEAD:refs/heads/bench-fixed")
claim=$(median_ms claim_release)
pushes=$(median_ms push_twice)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
printf 'median of %s runs, local bare origin, release build\n\n' "$runs"
printf '%-40s %8s ms\n' "git ls-remote origin" "$ls_remote"
printf '%-40s %8s ms\n' "git fetch refs/maverick/issue/1" "$fetch"
printf '%-40s %8s ms   %sx fetch\n' "git maverick coord read" "$read" "$(ratio "$read" "$fetch")"
printf '%-40s %8s ms\n' "git push (no-op update)" "$push"
printf '%-40s %8s ms   %sx (fetch + push)\n' "git maverick coord heartbeat" "$heartbeat" "$(ratio "$heartbeat" "$(awk -v a="$fetch" -v b="$push" 'BEGIN{print a+b}')")"
printf '%-40s %8s ms\n' "2 x git push (create, delete branch)" "$pushes"
printf '%-40s %8s ms   %sx (2 pushes)\n' "git maverick coord claim + release" "$claim" "$(ratio "$claim" "$pushes")"

# The fleet: 32 clones of the same origin, instances agent-1 … agent-32.
fleet=32
for i in $(seq "$fleet"); do
  git clone --quiet "$work/origin.git" "$work/agent-$i" 2>/dev/null
done
failures="$work/failures"
: >"$failures"

# ms_of CMD...: the wall time of one run of CMD in ms.
ms_of() {
  local start end
  start=$(date +%s%N)
  "$@"
  end=$(date +%s%N)
  echo $(( (end - start) / 1000000 ))
}

# claim_in I ISSUE: agent I claims ISSUE; a failure is noted.
claim_in() {
  (cd "$work/agent-$1" && MAVERICK_INSTANCE="agent-$1" "$bin" coord claim "$2" >/dev/null 2>&1) \
    || echo "claim $2 by agent-$1 exited $?" >>"$failures"
}
next=1000
claims_at_once() {
  local i
  for i in $(seq "$1"); do claim_in "$i" $((next + i)) & done
  wait
}
claims_in_turn() {
  local i
  for i in $(seq "$1"); do claim_in "$i" $((next + i)); done
}
pushes_at_once() {
  local i
  for i in $(seq "$1"); do
    git -C "$work/agent-$i" push --quiet origin "HEAD:refs/heads/bench-$next-$i" &
  done
  wait
}
# dispatch_at_once N: N agents dispatch at once with N slots, each over
# its own fresh frontier of N issues (labelled beforehand).
dispatch_at_once() {
  local i
  for i in $(seq "$1"); do
    (cd "$work/agent-$i" && MAVERICK_INSTANCE="agent-$i" "$bin" dispatch --slots "$1" \
      --frontier-label "ready-$next" >/dev/null 2>&1) \
      || echo "dispatch by agent-$i exited $?" >>"$failures" &
  done
  wait
}
label_frontier() {
  local i
  for i in $(seq "$1"); do
    "$bin" coord label add $((next + i)) "ready-$next" >/dev/null
  done
}
# Frees the slots of the last dispatch round, so that every round starts
# with N free slots and a ledger of its own N issues.
release_frontier() {
  local i
  for i in $(seq "$1"); do
    "$bin" dispatch release $((next + i)) --frontier-label "ready-$next" >/dev/null
  done
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '\nfleet on one origin, median of %s rounds (ms)\n\n' "$rounds"
printf '%4s %10s %10s %8s %10s %10s %10s\n' \
  N "at once" "in turn" "ratio" "pushes" "vs pushes" "dispatch"
for size in 1 4 16 32; do
  burst=() turn=() plain=() dispatch=()
  for _ in $(seq "$rounds"); do
    next=$((next + 100)); burst+=("$(ms_of claims_at_once "$size")")
    next=$((next + 100)); turn+=("$(ms_of claims_in_turn "$size")")
    next=$((next + 100)); plain+=("$(ms_of pushes_at_once "$size")")
    next=$((next + 100)); label_frontier "$size"
    dispatch+=("$(ms_of dispatch_at_once "$size")")
    release_frontier "$size"
  done
  b=$(printf '%s\n' "${burst[@]}" | median)
  t=$(printf '%s\n' "${turn[@]}" | median)
  p=$(printf '%s\n' "${plain[@]}" | median)
  d=$(printf '%s\n' "${dispatch[@]}" | median)
  printf '%4s %10s %10s %7sx %10s %9sx %10s\n' \
    "$size" "$b" "$t" "$(ratio "$b" "$t")" "$p" "$(ratio "$b" "$p")" "$d"
done
printf '\nat once: N clones claim N different issues at the same moment;\n'
printf 'in turn: the same N claims one after another; pushes: N clones push a\n'
printf 'new branch each at the same moment; dispatch: N agents dispatch at once\n'
printf 'with N free slots. ratio = at once / in turn; vs pushes = at once / pushes.\n'

# race_one N: N agents claim one new issue at once; prints how many
# claims exited 0 and who holds the issue afterwards.
race_one() {
  local i issue=$((next + 1))
  for i in $(seq "$1"); do
    (cd "$work/agent-$i"; rc=0
     MAVERICK_INSTANCE="agent-$i" "$bin" coord claim "$issue" >/dev/null 2>&1 || rc=$?
     echo "$rc" >"$work/race-$i") &
  done
  wait
  local won
  won=$(cat "$work"/race-* | grep -cx 0 || true)
  rm -f "$work"/race-*
  # coord read exits 4 when another instance holds the issue: that is the answer.
  printf '%s %s' "$won" "$({ "$bin" coord read "$issue" --json 2>/dev/null || true; } |
    jq -r '.holder.instance_id // "nobody"')"
}
# dispatch_distinct N: N agents dispatch at once with N free slots over a
# fresh frontier of N issues; prints how many got an issue, how many
# distinct issues that is, and how many exited 6 (lost).
dispatch_distinct() {
  local i
  label_frontier "$1"
  for i in $(seq "$1"); do
    (cd "$work/agent-$i"; rc=0
     MAVERICK_INSTANCE="agent-$i" "$bin" dispatch --slots "$1" \
       --frontier-label "ready-$next" --json >"$work/dispatch-$i" 2>/dev/null || rc=$?
     echo "$rc" >"$work/dispatch-exit-$i") &
  done
  wait
  local got distinct lost
  got=$(cat "$work"/dispatch-[0-9]* | jq -r '.issue // empty' | wc -l)
  distinct=$(cat "$work"/dispatch-[0-9]* | jq -r '.issue // empty' | sort -u | wc -l)
  lost=$(cat "$work"/dispatch-exit-* | grep -cx 6 || true)
  rm -f "$work"/dispatch-*
  release_frontier "$1"
  printf '%s %s %s' "$got" "$distinct" "$lost"
}

next=$((next + 100))
read -r won held_by < <(race_one 16)
printf '\n16 racers claim one issue at once: %s claims succeeded, held by %s\n' "$won" "$held_by"
next=$((next + 100))
read -r got distinct lost < <(dispatch_distinct 12)
printf '12 agents dispatch at once with 12 free slots: %s dispatched, %s distinct issues, %s exited 6\n' \
  "$got" "$distinct" "$lost"

if [ -s "$failures" ]; then
  printf '\n%s commands failed:\n' "$(wc -l <"$failures")"
  sort "$failures" | uniq -c | head -20
fi
