#!/usr/bin/env bash
# Benchmark: what the claim protocol costs on the git surface, against the
# plain git operations it is made of, on a local bare origin.
#
#   bench/coord.sh [RUNS]      (default 30 runs each; prints medians and ratios)
#
# Not part of the test suite: speed is measured here, never timed in tests.
set -euo pipefail
runs=${1:-30}
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
fetch=$(median_ms git fetch --quiet origin '+refs/maverick/*:refs/bench/*')
read=$(median_ms "$bin" coord read 1)
heartbeat=$(median_ms "$bin" coord heartbeat 1)
push=$(median_ms git push --quiet origin "HEAD:refs/heads/bench-fixed")
claim=$(median_ms claim_release)
pushes=$(median_ms push_twice)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
printf 'median of %s runs, local bare origin, release build\n\n' "$runs"
printf '%-40s %8s ms\n' "git ls-remote origin" "$ls_remote"
printf '%-40s %8s ms\n' "git fetch refs/maverick/*" "$fetch"
printf '%-40s %8s ms   %sx fetch\n' "git maverick coord read" "$read" "$(ratio "$read" "$fetch")"
printf '%-40s %8s ms\n' "git push (no-op update)" "$push"
printf '%-40s %8s ms   %sx (fetch + push)\n' "git maverick coord heartbeat" "$heartbeat" "$(ratio "$heartbeat" "$(awk -v a="$fetch" -v b="$push" 'BEGIN{print a+b}')")"
printf '%-40s %8s ms\n' "2 x git push (create, delete branch)" "$pushes"
printf '%-40s %8s ms   %sx (2 pushes)\n' "git maverick coord claim + release" "$claim" "$(ratio "$claim" "$pushes")"
