#!/usr/bin/env bash
# Builds the release archive of one target, as .github/workflows/release.yml
# publishes it and `cargo binstall git-maverick` fetches it:
#
#   scripts/package.sh TARGET [OUT_DIR]     (OUT_DIR defaults to dist/)
#
# dist/git-maverick-VERSION-TARGET.tar.gz holds one directory of that name:
#   git-maverick                    the binary
#   maverick-pre-push               the pre-push guard alone, which the hook
#                                   runs when it is beside git-maverick
#   man/man1/*.1                    the man pages (git-maverick install-man-pages)
#   completions/git-maverick.bash   bash, with _git_maverick for git's completion
#   completions/_git-maverick       zsh
#   completions/git-maverick.fish   fish
#   README.md LICENSE-MIT LICENSE-APACHE
# and dist/git-maverick-VERSION-TARGET.tar.gz.sha256 its checksum.
#
# CARGO=cross builds a target this machine cannot (aarch64 musl on x86_64).
# The pages and scripts come from a binary that runs here: the target's own
# when it is this machine's, else one built for this machine.
#
# MAVERICK_PACKAGE_PROFILE picks cargo's profile: `release` (the default,
# what a release publishes) or `dev`, with which .ci/run checks the archive
# from the binary its tests already built instead of a second, from-scratch
# release build. This machine's target builds without `--target`, into the
# same directories as `cargo build` and `cargo test`.
set -euo pipefail
target=${1:?usage: scripts/package.sh TARGET [OUT_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$root/dist}
cargo=${CARGO:-cargo}
profile=${MAVERICK_PACKAGE_PROFILE:-release}
cd "$root"
# cargo's target directory: CARGO_TARGET_DIR when set (.ci/run keeps one
# across clones), else the clone's own.
target_dir=${CARGO_TARGET_DIR:-target}

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
name="git-maverick-$version-$target"
host=$(rustc -vV | sed -n 's/^host: //p')
# cargo's output directory of a profile: dev builds into debug/.
case $profile in
  dev) profile_dir=debug ;;
  *) profile_dir=$profile ;;
esac

if [ "$target" = "$host" ] && [ "$(basename "$cargo")" = cargo ]; then
  cargo build --profile "$profile" --locked
  bin="$target_dir/$profile_dir/git-maverick"
  docs_bin=$bin
else
  "$cargo" build --profile "$profile" --locked --target "$target"
  bin="$target_dir/$target/$profile_dir/git-maverick"
  cargo build --profile "$profile" --locked
  docs_bin="$target_dir/$profile_dir/git-maverick"
fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/maverick-package.XXXXXX")
trap 'rm -rf "$stage"' EXIT
dir="$stage/$name"
mkdir -p "$dir/completions"
cp "$bin" "$dir/git-maverick"
cp "$(dirname "$bin")/maverick-pre-push" "$dir/maverick-pre-push"
"$docs_bin" install-man-pages "$dir/man/man1" >/dev/null 2>&1
"$docs_bin" completions bash >"$dir/completions/git-maverick.bash"
"$docs_bin" completions zsh >"$dir/completions/_git-maverick"
"$docs_bin" completions fish >"$dir/completions/git-maverick.fish"
cp README.md LICENSE-MIT LICENSE-APACHE "$dir/"

mkdir -p "$out"
archive="$out/$name.tar.gz"
# Reproducible: sorted names, no owner, the commit's time on every file.
mtime=$(git log -1 --format=%ct 2>/dev/null || echo 0)
# GNU tar (TAR=gtar on macOS).
"${TAR:-tar}" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" \
  -C "$stage" -czf "$archive" "$name"
if command -v sha256sum >/dev/null 2>&1; then
  (cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
else
  (cd "$out" && shasum -a 256 "$name.tar.gz" >"$name.tar.gz.sha256")
fi
echo "$archive"
