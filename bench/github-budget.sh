#!/usr/bin/env bash
# Benchmark: GitHub requests per command, counted as GitHub counts them (a
# 304 answer to a conditional request is free), against the test suite's
# fake GitHub with 10, 100 and 1,000 ready issues; and how many agents one
# token carries at 5,000 requests an hour with the default heartbeatInterval
# (a heartbeat writes the lease only when it is due: 10 of an hour's 30);
# then how many it carries under each of GitHub's secondary limits (points,
# content-generating requests under both readings) and which one binds;
# then a fleet of 32 agents dispatching at once with the secondary limits on
# and 2 s of list lag, under both readings: what it came to and how long it
# took on the test clock.
#
#   bench/github-budget.sh [SIZES]     (default 10,100,1000)
#
# The fake GitHub is test code, so the measurement is the suite's own budget
# test (tests/budget.rs), run with the sizes to measure and a file to print;
# the counts are deterministic, and the test fails if a budget breaks.
set -euo pipefail
sizes=${1:-10,100,1000}
root=$(cd "$(dirname "$0")/.." && pwd)
table=$(mktemp "${TMPDIR:-/tmp}/maverick-budget.XXXXXX")
fleet=$(mktemp "${TMPDIR:-/tmp}/maverick-fleet.XXXXXX")
trap 'rm -f "$table" "$fleet"' EXIT
status=0
MAVERICK_BUDGET_SIZES=$sizes MAVERICK_BUDGET_TABLE=$table \
  cargo test --quiet --locked --manifest-path "$root/Cargo.toml" --test runner \
  -- --exact budget::the_request_budget_does_not_grow_with_the_backlog >/dev/null 2>&1 || status=$?
cat "$table"
MAVERICK_FLEET_REPORT=$fleet \
  cargo test --quiet --locked --manifest-path "$root/Cargo.toml" --test runner \
  -- --exact budget::a_fleet_starting_together_stays_within_githubs_secondary_limits >/dev/null 2>&1 || status=$?
echo
cat "$fleet"
if [ "$status" -ne 0 ]; then
  echo "a budget is broken (or the test failed); see why with:" >&2
  echo "  MAVERICK_BUDGET_SIZES=$sizes MAVERICK_FLEET_REPORT=/dev/stderr cargo test --test runner budget::" >&2
  exit 1
fi
