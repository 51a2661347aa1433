#!/usr/bin/env bash
# Every test of git maverick, on a fresh machine as on yours: installs what
# the tests drive and is missing (once, into a cache outside the clone), then
# runs `cargo test --locked` with those tools on PATH. `.ci/run` calls it.
#
#   scripts/test.sh                  install what is missing, run every test
#   scripts/test.sh -- coord::       arguments after the script go to cargo test
#   scripts/test.sh --install-only   install what is missing, print the PATH to use
#
# The tests drive real programs, never stand-ins: git (and its bash
# completion), man, script(1), faketime, Graphviz's dot, git-lfs, zsh, fish,
# gh, strace (Debian packages, through apt-get: as root, or with sudo), the
# hook managers lefthook and husky (npm) and pre-commit (PyPI), the real
# Maverick (PyPI's maverick-harness) and Claude Code (npm), pinned. When all
# of them are present this prints nothing of its own.
# The cache: $MAVERICK_CI_TOOLS, else ${XDG_CACHE_HOME:-~/.cache}/git-maverick-ci.
set -euo pipefail
cd "$(dirname "$0")/.."

# The versions the tests are written against.
maverick_harness=5.1.1
claude_code=2.1.332

tools="${MAVERICK_CI_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/git-maverick-ci}"
say() { printf 'test.sh: %s\n' "$*" >&2; }

apt_install() {
  local sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  command -v apt-get >/dev/null 2>&1 || {
    say "install $* with your package manager (no apt-get here), then run this again"
    exit 1
  }
  say "installing $* (apt-get)"
  if [ -z "${apt_updated:-}" ]; then
    "${sudo[@]}" apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@" >/dev/null
}
need() { command -v "$1" >/dev/null 2>&1; }

install_tools() {
  # git, and git's own bash completion (the completion tests source it).
  need git || apt_install git
  [ -f /usr/share/bash-completion/completions/git ] \
    || [ -f /usr/share/git-core/contrib/completion/git-completion.bash ] \
    || apt_install git
  # man and mandb (`git help maverick`), script(1) (a terminal for the colour
  # tests), faketime (the clock tests), dot (`status --format svg`), git-lfs
  # (its pre-push hook shares a file with the guard), zsh and fish (the
  # completion tests), gh (the real Maverick shells out to it), strace (the
  # Claude Code test checks that the client connects nowhere else).
  need man && need mandb || apt_install man-db
  need script || apt_install bsdutils
  need faketime || apt_install faketime
  need dot || apt_install graphviz
  need git-lfs || apt_install git-lfs
  need zsh || apt_install zsh
  need fish || apt_install fish
  need gh || apt_install gh
  need strace || apt_install strace

  for dir in "$tools/npm/node_modules/.bin" "$tools/venv/bin"; do
    [ -d "$dir" ] && PATH="$dir:$PATH"
  done
  # The hook managers the pre-push guard is tested with (tests/hook_managers.rs
  # runs each one's own install and real pushes).
  if ! need lefthook || ! need husky; then
    need npm || apt_install nodejs npm
    say "installing lefthook and husky (npm) into $tools/npm"
    npm install --silent --no-save --no-audit --no-fund --prefix "$tools/npm" lefthook husky >/dev/null
    PATH="$tools/npm/node_modules/.bin:$PATH"
  fi
  venv_pip() {
    if [ ! -x "$tools/venv/bin/pip" ]; then
      python3 -m venv "$tools/venv" >/dev/null 2>&1 || {
        apt_install python3-venv
        python3 -m venv "$tools/venv"
      }
    fi
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check "$@"
  }
  if ! need pre-commit; then
    say "installing pre-commit (pip) into $tools/venv"
    venv_pip pre-commit
    PATH="$tools/venv/bin:$PATH"
  fi
  # The real Maverick, the version the interop tests and fixtures/maverick
  # are written against, in the same venv.
  if [ "$(maverick --version 2>/dev/null)" != "maverick $maverick_harness" ]; then
    say "installing maverick-harness $maverick_harness (pip) into $tools/venv"
    venv_pip "maverick-harness==$maverick_harness"
    PATH="$tools/venv/bin:$PATH"
  fi

  # The real Claude Code client, pinned, for tests/claude_code.rs (the plugin
  # driven end to end against a scripted model server on 127.0.0.1). The npm
  # package's postinstall links the platform's native binary over its stub;
  # where npm did not run it, the platform package's binary (an optional
  # dependency) is used directly.
  local claude_dir="$tools/claude-code-$claude_code"
  if ! "$claude_dir/bin/claude" --version >/dev/null 2>&1; then
    need npm || apt_install nodejs npm
    say "installing @anthropic-ai/claude-code@$claude_code (npm) into $claude_dir"
    npm install --silent --no-save --no-audit --no-fund --prefix "$claude_dir" \
      "@anthropic-ai/claude-code@$claude_code" >/dev/null
    mkdir -p "$claude_dir/bin"
    local candidate
    for candidate in "$claude_dir"/node_modules/.bin/claude "$claude_dir"/node_modules/@anthropic-ai/claude-code-*/claude; do
      if [ -x "$candidate" ] && "$candidate" --version >/dev/null 2>&1; then
        ln -sf "$(realpath "$candidate")" "$claude_dir/bin/claude"
        break
      fi
    done
  fi
  PATH="$claude_dir/bin:$PATH"

  # What the tests will find, checked once: a failed install stops here with
  # its name, not as a test failure later.
  local missing=()
  for tool in lefthook husky pre-commit maverick gh claude; do
    need "$tool" || missing+=("$tool")
  done
  "$claude_dir/bin/claude" --version 2>/dev/null | grep -q "^$claude_code " || missing+=("claude $claude_code")
  if [ ${#missing[@]} -gt 0 ]; then
    say "these did not install: ${missing[*]}"
    exit 1
  fi
  export PATH
}

install_tools
if [ "${1:-}" = "--install-only" ]; then
  printf 'export PATH=%q\n' "$PATH"
  exit 0
fi
[ "${1:-}" = "--" ] && shift
exec cargo test --locked "$@"
