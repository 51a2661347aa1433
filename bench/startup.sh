#!/usr/bin/env bash
# Benchmark: the binary's start-up, which every `git maverick` command and
# every completion pays: `git-maverick --version` (clap parses the command
# tree, colour and terminal width are looked up) and `git-maverick help`,
# against /bin/true for the cost of a process.
#
#   bench/startup.sh [RUNS] [BIN]   (default 300 runs; the release binary)
#
# Prints the mean wall time per run, less the cost of /bin/true, and fails
# above 3 ms; and the CPU time (user + system) per run, which a busy machine
# does not inflate as it does wall time.
# Not part of the test suite: speed is measured here, never timed in tests.
set -euo pipefail
runs=${1:-300}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${2:-}
if [ -z "$bin" ]; then
  cargo build --quiet --release --locked --manifest-path "$root/Cargo.toml"
  bin="${CARGO_TARGET_DIR:-$root/target}/release/git-maverick"
fi
budget_us=3000

# mean_us CMD...: the mean wall time of CMD over $runs runs, in microseconds.
mean_us() {
  local start end
  start=$(date +%s%N)
  for ((i = 0; i < runs; i++)); do "$@" >/dev/null 2>&1 || true; done
  end=$(date +%s%N)
  echo $(((end - start) / runs / 1000))
}

# cpu_us CMD...: the mean user + system CPU time of CMD, in microseconds
# (the children's line of `times`, in a fresh subshell).
cpu_us() {
  (
    for ((i = 0; i < runs; i++)); do "$@" >/dev/null 2>&1 || true; done
    times
  ) | awk -v runs="$runs" 'NR == 2 {
      split($1, u, /[ms]/); split($2, s, /[ms]/)
      printf "%d\n", ((u[1] + s[1]) * 60 + u[2] + s[2]) * 1000000 / runs
    }'
}

base=$(mean_us /bin/true)
base_cpu=$(cpu_us /bin/true)
status=0
for args in "--version" "help"; do
  # shellcheck disable=SC2086
  total=$(mean_us "$bin" $args)
  own=$((total - base))
  verdict=ok
  if [ "$own" -gt "$budget_us" ]; then verdict="OVER the ${budget_us} us budget"; status=1; fi
  # shellcheck disable=SC2086
  cpu=$(($(cpu_us "$bin" $args) - base_cpu))
  printf 'git-maverick %-10s %5d us a run (%5d us less a process start of %d us; CPU %d us): %s\n' \
    "$args" "$total" "$own" "$base" "$cpu" "$verdict"
done
exit $status
