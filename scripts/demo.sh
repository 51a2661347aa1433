#!/usr/bin/env bash
# The whole git maverick workflow on a throwaway local origin: no token, no
# network. Two instances, alice and bob, each in its own clone, coordinate
# through refs/maverick/* on a bare repository.
#
#   scripts/demo.sh                      run every step and print what happens
#   MAVERICK_BIN=path scripts/demo.sh    with that binary
#
# The binary: MAVERICK_BIN, else the git-maverick you installed (on PATH),
# else this clone's release build, else its debug build (under
# CARGO_TARGET_DIR when set, else target/); only when there is none does the
# demo build one (`cargo build`). Its first line says which one it runs.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
if [ -n "${MAVERICK_BIN:-}" ]; then
  why="MAVERICK_BIN"
elif MAVERICK_BIN=$(command -v git-maverick); then
  why="the git-maverick on PATH"
elif [ -x "$target/release/git-maverick" ]; then
  MAVERICK_BIN="$target/release/git-maverick" why="this clone's release build"
elif [ -x "$target/debug/git-maverick" ]; then
  MAVERICK_BIN="$target/debug/git-maverick" why="this clone's debug build"
else
  echo "demo: no git-maverick on PATH or under $target; building one (cargo build)"
  # Cargo says where it put the binary (build.target-dir and build.target
  # move it too): the executable of its bin artifact.
  MAVERICK_BIN=$(cargo build --quiet --locked --manifest-path "$root/Cargo.toml" \
      --bin git-maverick --message-format=json-render-diagnostics \
    | sed -n 's/^{"reason":"compiler-artifact".*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
  why="the binary cargo just built"
  if [ ! -x "$MAVERICK_BIN" ]; then
    printf 'demo: cargo built no git-maverick executable (got "%s")\n' "$MAVERICK_BIN" >&2
    exit 1
  fi
fi
printf 'demo: running %s (%s, %s)\n' "$MAVERICK_BIN" "$why" "$("$MAVERICK_BIN" --version)"
work=$(mktemp -d "${TMPDIR:-/tmp}/maverick-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
ln -s "$MAVERICK_BIN" "$work/bin/git-maverick"
# The pre-push guard alone, where it was built or installed beside it: the
# hook runs it (else git-maverick itself).
if [ -x "$(dirname "$MAVERICK_BIN")/maverick-pre-push" ]; then
  ln -s "$(dirname "$MAVERICK_BIN")/maverick-pre-push" "$work/bin/maverick-pre-push"
fi
export PATH="$work/bin:$PATH"
# Hermetic git: the demo must not depend on (or change) your own config.
export GIT_CONFIG_GLOBAL="$work/gitconfig" GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.com
export GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.com
unset GH_TOKEN GITHUB_TOKEN GITHUB_API_URL MAVERICK_INSTANCE MAVERICK_INSTANCE_ID CLAUDE_CODE_SESSION_ID

step() { printf '\n== %s\n' "$*"; }
# expect CODE NAME CMD...: run CMD in $work/NAME as instance NAME (its first path
# part), show it and its exit code, and stop the demo if the exit code differs.
expect() {
  local want=$1 who=$2; shift 2
  printf '%s$ %s\n' "$who" "$*"
  local rc=0 out
  out=$(cd "$work/$who" && MAVERICK_INSTANCE=${who%%/*} "$@" 2>&1) || rc=$?
  [ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/    /'
  printf '    [exit %d]\n' "$rc"
  if [ "$rc" != "$want" ]; then
    printf 'demo: expected exit %s from: %s\n' "$want" "$*" >&2
    exit 1
  fi
}
# wait_exit CODE NAME CMD...: poll until CMD exits CODE (at most 30 s).
wait_exit() {
  local want=$1 who=$2; shift 2
  for _ in $(seq 300); do
    local rc=0
    (cd "$work/$who" && MAVERICK_INSTANCE=${who%%/*} "$@" >/dev/null 2>&1) || rc=$?
    [ "$rc" = "$want" ] && return 0
    sleep 0.1
  done
  printf 'demo: %s never exited %s\n' "$*" "$want" >&2
  exit 1
}

step "A bare origin and two clones"
git init --quiet --bare --initial-branch=main "$work/origin.git"
git clone --quiet "$work/origin.git" "$work/seed" 2>/dev/null
(cd "$work/seed" && git checkout --quiet -b main && echo "# demo" > README.md && git add README.md \
  && git commit --quiet -m "chore: initial commit" && git push --quiet origin main)
git clone --quiet "$work/origin.git" "$work/alice"
git clone --quiet "$work/origin.git" "$work/bob"
echo "origin: $work/origin.git   clones: alice, bob"

step "alice claims #142; bob sees it held (exit 4) and cannot claim it"
expect 0 alice git maverick coord claim 142 --branch maverick/142-parse-markers
expect 4 bob git maverick coord read 142
expect 4 bob git maverick coord claim 142
expect 0 alice git maverick coord heartbeat 142

step "alice crashes while holding #7 (2 s lease); bob waits for the lease to go stale"
expect 0 alice git maverick coord claim 7 --lease-ttl 2s
wait_exit 5 bob git maverick coord read 7
expect 5 bob git maverick coord read 7
expect 5 bob git maverick coord claim 7

step "bob takes #7 over (generation 2); alice's next heartbeat finds out (exit 7)"
expect 0 bob git maverick coord takeover 7
expect 7 alice git maverick coord heartbeat 7
expect 7 alice git maverick coord release 7

step "blocks: #150 waits for #142"
expect 0 bob git maverick coord block 150 --by 142
expect 3 bob git maverick coord claim 150

step "release: alice finishes #142, bob finishes #7"
expect 0 alice git maverick coord release 142 --reason merged
expect 0 bob git maverick coord release 7 --reason merged
expect 0 bob git maverick coord read 142 --json

step "run: the claim lives exactly as long as the command"
expect 0 alice git maverick run 160 --branch maverick/160-run-demo -- sh -c 'echo "working on #$MAVERICK_ISSUE as $MAVERICK_INSTANCE, generation $MAVERICK_GENERATION"; git maverick coord read 160'
expect 0 bob git maverick coord read 160
expect 3 alice git maverick run 161 -- sh -c 'exit 3'
expect 2 alice git maverick run 162 --lease-ttl 3s --heartbeat-interval 1s --grace 1s -- true

step "a lost claim stops the command: bob drops the label while alice's command runs (exit 7)"
(cd "$work/alice" && MAVERICK_INSTANCE=alice git maverick run 163 --lease-ttl 6s --heartbeat-interval 1s --grace 1s -- sleep 60 \
  || echo $? > "$work/run-163.exit") >/dev/null 2>&1 &
wait_exit 4 bob git maverick coord read 163
expect 0 bob git maverick coord label remove 163 claude-in-progress
wait
echo "alice's run exited $(cat "$work/run-163.exit")"
[ "$(cat "$work/run-163.exit")" = 7 ]

step "session end: release everything this instance still holds"
expect 0 alice git maverick coord claim 164
expect 0 alice git maverick coord claim 165
expect 0 alice git maverick coord release-all
expect 0 bob git maverick coord read 164

step "dispatch: at most 2 agent cycles in flight, each claimed at dispatch time"
expect 0 alice git maverick coord label add 201 agent-ready
expect 0 alice git maverick coord label add 202 agent-ready
expect 0 alice git maverick coord label add 203 agent-ready
expect 0 alice git maverick dispatch --slots 2 --dry-run
expect 0 alice git maverick dispatch --slots 2
expect 0 bob git maverick dispatch --slots 2
expect 9 bob git maverick dispatch --slots 2
expect 0 bob git maverick dispatch status --slots 2

step "#201's cycle opens draft PR #301 (the PR takes its slot); #202's gives up"
expect 0 alice git maverick dispatch release 201 --pr 301
expect 0 bob git maverick dispatch release 202 --give-up needs-human
expect 0 bob git maverick dispatch --slots 2
expect 9 alice git maverick dispatch --slots 2

step "a dispatcher dies between its claim comment and its label: busy while fresh, cleared once stale"
expect 0 bob git maverick dispatch release 203
expect 0 alice git maverick coord label add 204 agent-ready
expect 0 alice git maverick dispatch --slots 3
expect 0 alice git maverick coord label remove 204 agent-wip
expect 9 bob git maverick dispatch --slots 2
wait_exit 0 bob git maverick dispatch --slots 2 --dispatch-stale 2s --dry-run
expect 0 bob git maverick dispatch --slots 2 --dispatch-stale 2s

step "push per task: alice works #143 as a list of tasks, one pushed commit each"
expect 0 alice git maverick hook install
expect 0 alice git maverick coord claim 143 --branch maverick/143-parser
expect 0 alice git switch --quiet -c maverick/143-parser
printf 'Parse marker blocks — fenced JSON\nUpsert markers in place\nVerify after writing\n' > "$work/tasks.md"
expect 0 alice git maverick task init 143 "$work/tasks.md"
echo 'pub fn parse() {}' > "$work/alice/parse.rs"
expect 0 alice git add parse.rs
expect 0 alice git maverick task done -m "feat(markers): parse blocks"

step "alice's laptop dies right after pushing task 2, before checking it off"
echo 'pub fn upsert() {}' > "$work/alice/upsert.rs"
expect 0 alice git add upsert.rs
expect 0 alice git commit --quiet -m "feat(markers): upsert in place" --trailer "Maverick-Issue: 143" --trailer "Maverick-Task: 2"
expect 0 alice git push --quiet origin maverick/143-parser
expect 0 alice git maverick coord heartbeat 143 --lease-ttl 1s --renew
rm -rf "$work/alice"

step "carol, on a fresh clone, resumes the branch from origin: task 2 is checked off, task 3 is next"
git clone --quiet "$work/origin.git" "$work/carol"
wait_exit 5 carol git maverick coord read 143
expect 5 carol git maverick resume maverick/143-parser
expect 0 carol git maverick resume maverick/143-parser --takeover
expect 0 carol git maverick resume maverick/143-parser
expect 0 carol git maverick hook install
tree=carol/.maverick/worktrees/maverick-143-parser
echo 'pub fn verify() {}' > "$work/$tree/verify.rs"
expect 0 "$tree" git add verify.rs
expect 0 "$tree" git maverick task done -m "test(markers): verify after writing"

step "one writer per branch: bob, who holds no claim, pushes to carol's branch; carol's next push is refused by the hook (git push exits 1)"
expect 0 bob git fetch --quiet origin
expect 0 bob git switch --quiet maverick/143-parser
expect 0 bob git commit --quiet --allow-empty -m "feat: bob was here"
expect 0 bob git push --quiet origin maverick/143-parser
expect 0 "$tree" git commit --quiet --allow-empty -m "docs: notes"
expect 0 "$tree" git pull --quiet --rebase origin maverick/143-parser
expect 1 "$tree" git push --quiet origin maverick/143-parser
expect 0 carol git -C .maverick/worktrees/maverick-143-parser log --oneline -5

step "everything above lives on the remote"
git -C "$work/origin.git" for-each-ref --format='%(refname)' refs/maverick/
git -C "$work/origin.git" log --oneline -5 refs/maverick/issue/143
printf '\ndemo finished: every step exited as expected\n'
