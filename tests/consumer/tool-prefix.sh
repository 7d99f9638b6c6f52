#!/bin/bash
# The `rverbs` tool runs from any prefix install with no LD_LIBRARY_PATH:
# install into a DESTDIR, move the whole prefix somewhere else, and run
# `rverbs version` there. It must load the moved librverbs (RUNPATH $ORIGIN),
# not the build tree's and not a system one.
#
# Usage: tool-prefix.sh BUILD_DIR PREFIX BINDIR LIBDIR VERSION SOVERSION
# (meson passes these; BINDIR and LIBDIR may be relative to PREFIX.)
set -euo pipefail
build_dir=$1 prefix=$2 bindir=$3 libdir=$4 version=$5 soversion=$6
case $bindir in /*) ;; *) bindir=$prefix/$bindir ;; esac
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
fail() { echo "FAIL: $*" >&2; exit 1; }
case $bindir/ in "$prefix"/*) ;; *) echo "SKIP: bindir $bindir is outside the prefix"; exit 77 ;; esac
case $libdir/ in "$prefix"/*) ;; *) echo "SKIP: libdir $libdir is outside the prefix"; exit 77 ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rverbs-tool-prefix.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build_dir" --no-rebuild --destdir "$tmp/dest" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; fail "meson install --destdir failed"; }
# The prefix, moved: nothing of the configured path is left.
mv "$tmp/dest$prefix" "$tmp/moved"
tool=$tmp/moved${bindir#"$prefix"}/rverbs
lib=$tmp/moved${libdir#"$prefix"}/librverbs.so.$soversion
[ -x "$tool" ] || fail "no rverbs in the moved prefix ($tool)"
[ -e "$lib" ] || fail "no librverbs.so.$soversion in the moved prefix ($lib)"

readelf -d "$tool" | grep -E 'R(UN)?PATH' || fail "rverbs has no RUNPATH"
loaded=$(env -u LD_LIBRARY_PATH ldd "$tool" | sed -n 's/.*librverbs\.so\.[0-9]* => \([^ ]*\) .*/\1/p')
[ -n "$loaded" ] || fail "ldd: rverbs finds no librverbs"
[ "$(readlink -f "$loaded")" = "$(readlink -f "$lib")" ] ||
	fail "rverbs loads $loaded, not the moved prefix's $lib"
out=$(env -u LD_LIBRARY_PATH "$tool" version) || fail "rverbs version failed: $out"
echo "rverbs version: $out (librverbs: $loaded)"
grep -qF "$version" <<<"$out" || fail "rverbs version does not say $version"
echo "PASS"
