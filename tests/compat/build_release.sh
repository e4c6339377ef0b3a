#!/usr/bin/env bash
# The previous release's dedupd and dedupctl, for the compat tests (issue 61:
# a rolling upgrade runs both releases on one fleet and one index).
#
#   tests/compat/build_release.sh OUT_DIR [--deb]
#
# puts OUT_DIR/dedupd, OUT_DIR/dedupctl and OUT_DIR/release ("<tag> <commit>");
# with --deb also OUT_DIR/dedupd_<version>_<arch>.deb, the release's package
# made by its own packaging (CPack) from the same build, for the package
# upgrade of tests/systemd.
# The release's commit is the tag's (v0.1.0); a clone without the tag takes
# the commit that packaging/changelog.in names in the release's entry
# ("(release commit <hash>)"), and only when neither is there the hash kept
# below (said on stderr). The binaries are built once per commit, in a
# detached git worktree removed afterwards: Release at -O1 (the tests ask
# what it does, not how fast: -O1 compiles in about half the time of the
# release's -O3, and this build is most of a cold CI run's wait), no tests, no
# benchmarks, no sanitizers, whatever build runs this (the old tree's own
# options, `git show v0.1.0:CMakeLists.txt`), ccache when installed. They are
# kept in
#   ${DEDUPD_RELEASE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dedupd/releases}/<commit>/
# so another build directory or clone on the machine gets them at no cost.
# Any failure is an error with its reason: the tests that need the old
# release must not pass without it.
set -euo pipefail

tag=v0.1.0
version=0.1.0
known_commit=0ff16f54d1eb1164898770aa4b772b70f7b7d43b  # v0.1.0, when nothing else says

fail() {
  echo "build_release.sh: $*" >&2
  exit 1
}

[ $# = 1 ] || { [ $# = 2 ] && [ "$2" = --deb ]; } || { echo "usage: $0 OUT_DIR [--deb]" >&2; exit 64; }
out=$1
want_deb=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
start=$SECONDS

repo=$(git -C "$here" rev-parse --show-toplevel 2>/dev/null) || repo=""

# The commit of the release: the tag, the changelog's line, the constant.
commit=""
if [ -n "$repo" ]; then
  commit=$(git -C "$repo" rev-parse -q --verify "$tag^{commit}" 2>/dev/null) || commit=""
  [ -z "$commit" ] || echo "build_release.sh: $tag is $commit (the tag)" >&2
fi
if [ -z "$commit" ]; then
  changelog=$here/../../packaging/changelog.in
  # The hash named in the entry whose heading is "dedupd (0.1.0)"; failing
  # that (the heading may still be @PROJECT_VERSION@) the only one named.
  if [ -f "$changelog" ]; then
    # (No interval expressions: Debian's awk is mawk.)
    commit=$(awk -v v="$version" '
      /^[^ \t]/ { entry = $2 }
      /\(release commit [0-9a-f]+\)/ {
        h = $0
        sub(/.*\(release commit /, "", h)
        sub(/\).*/, "", h)
        if (length(h) != 40) next
        if (entry == "(" v ")") { print h; found = 1; exit }
        all[++n] = h
      }
      END { if (!found && n == 1) print all[1] }' "$changelog")
  fi
  [ -z "$commit" ] || echo "build_release.sh: $tag is $commit (packaging/changelog.in; the clone has no tag $tag)" >&2
fi
if [ -z "$commit" ]; then
  commit=$known_commit
  echo "build_release.sh: neither the tag $tag nor a '(release commit ...)' line in packaging/changelog.in;" \
    "using the hash kept in this script, $commit" >&2
fi

cache_root=${DEDUPD_RELEASE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dedupd/releases}
cache=$cache_root/$commit
mkdir -p "$cache_root" || fail "cannot create the release cache $cache_root"

deliver() {
  mkdir -p "$out"
  # Copies, not links: the tests must not depend on the cache staying.
  install -m 0755 "$cache/dedupd" "$out/dedupd.tmp" && mv -f "$out/dedupd.tmp" "$out/dedupd"
  install -m 0755 "$cache/dedupctl" "$out/dedupctl.tmp" && mv -f "$out/dedupctl.tmp" "$out/dedupctl"
  echo "$tag $commit" >"$out/release"
  if [ -n "$want_deb" ]; then
    rm -f "$out"/dedupd_*.deb
    cp "$cache"/dedupd_*.deb "$out/"
  fi
  echo "build_release.sh: $("$out/dedupd" --version) ($tag, $commit) in $out, $1 in $((SECONDS - start)) s" >&2
}

# A cached pair that still runs (a library it links may have changed), and
# the package when asked for.
usable() {
  [ -x "$cache/dedupd" ] && [ -x "$cache/dedupctl" ] && [ -f "$cache/complete" ] &&
    "$cache/dedupd" --version >/dev/null 2>&1 && "$cache/dedupctl" --version >/dev/null 2>&1 &&
    { [ -z "$want_deb" ] || compgen -G "$cache/dedupd_*.deb" >/dev/null; }
}

# One build per commit at a time: ctest in two build directories, or two
# clones, may ask at once.
exec 9>"$cache_root/$commit.lock"
flock 9
if usable; then
  deliver "cached in $cache"
  exit 0
fi

[ -n "$repo" ] || fail "no cached build in $cache and $here is not in a git checkout: cannot build $tag"
if ! git -C "$repo" cat-file -e "$commit^{commit}" 2>/dev/null; then
  # A shallow or partial clone: ask its origin for the one commit.
  echo "build_release.sh: $commit is not in this clone; fetching it from origin" >&2
  git -C "$repo" fetch -q --depth=1 origin "$commit" ||
    fail "$commit ($tag) is not in this clone and origin does not give it (git fetch origin $commit)"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/dedupd-release-XXXXXX")
cleanup() {
  git -C "$repo" worktree remove --force "$work/src" >/dev/null 2>&1 || true
  rm -rf "$work"
  git -C "$repo" worktree prune >/dev/null 2>&1 || true
}
trap cleanup EXIT
# Stopped (Ctrl-C, ctest ending a run): EXIT still removes the worktree.
trap 'exit 1' INT TERM HUP
git -C "$repo" worktree add -q --detach "$work/src" "$commit" || fail "git worktree add $commit failed"

# Nothing of the calling build's environment: a sanitizer or coverage flag
# there must not reach the old release.
unset CFLAGS CXXFLAGS LDFLAGS CPPFLAGS
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the worktree in ccache's hashes: the next build (in
  # another temporary directory) hits the cache.
  export CCACHE_BASEDIR=$work
fi
jobs=${DEDUPD_RELEASE_JOBS:-$(nproc)}
echo "build_release.sh: building $tag ($commit) in $work, -j$jobs" >&2
cmake -S "$work/src" -B "$work/build" -G Ninja "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_C_FLAGS_RELEASE=-O1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" \
  -DDEDUPD_TESTS=OFF -DDEDUPD_BENCH=OFF -DDEDUPD_FUZZ=OFF -DDEDUPD_SANITIZE= -DDEDUPD_WERROR=OFF \
  >"$work/configure.log" 2>&1 || { tail -n 40 "$work/configure.log" >&2; fail "configuring $tag failed"; }
# The package needs what its install rules name (man pages, the changelog):
# the whole default build.
targets=(dedupd dedupctl)
[ -z "$want_deb" ] || targets=(all)
nice -n 10 cmake --build "$work/build" -j "$jobs" --target "${targets[@]}" >"$work/build.log" 2>&1 ||
  { tail -n 60 "$work/build.log" >&2; fail "building $tag failed"; }

rm -rf "$cache.tmp"
mkdir -p "$cache.tmp"
cp "$work/build/daemon/dedupd" "$work/build/cli/dedupctl" "$cache.tmp/" || fail "cannot fill the cache $cache"
if [ -n "$want_deb" ]; then
  (cd "$work/build" && cpack -G DEB --config CPackConfig.cmake -B "$work/deb") >"$work/cpack.log" 2>&1 ||
    { tail -n 40 "$work/cpack.log" >&2; fail "packaging $tag failed (cpack)"; }
  cp "$work"/deb/dedupd_*.deb "$cache.tmp/" || fail "cpack made no dedupd_*.deb for $tag"
fi
touch "$cache.tmp/complete"
rm -rf "$cache"
mv "$cache.tmp" "$cache"
usable || fail "the $tag binaries just built do not run ($cache)"
deliver "built"
