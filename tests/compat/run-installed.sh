#!/bin/bash
# `rverbs run` from an installed prefix, moved elsewhere, with no
# LD_LIBRARY_PATH: it must find the installed compatibility layer
# (LIBDIR/rverbs/compat), which must find the moved librverbs through its
# RUNPATH ($ORIGIN/../..), and an unmodified program must then list soft0.
#
# Usage: run-installed.sh BUILD_DIR PREFIX BINDIR LIBDIR
set -euo pipefail
build_dir=$1 prefix=$2 bindir=$3 libdir=$4
case $bindir in /*) ;; *) bindir=$prefix/$bindir ;; esac
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
fail() { echo "FAIL: $*" >&2; exit 1; }
case $bindir/ in "$prefix"/*) ;; *) echo "SKIP: bindir $bindir is outside the prefix"; exit 77 ;; esac
case $libdir/ in "$prefix"/*) ;; *) echo "SKIP: libdir $libdir is outside the prefix"; exit 77 ;; esac
case ${RVERBS_COMPAT_SANITIZE:-none} in none | "") ;; *)
	echo "SKIP: the layer is built with -Db_sanitize=$RVERBS_COMPAT_SANITIZE; uninstrumented programs cannot load it"
	exit 77 ;;
esac
command -v ibv_devices >/dev/null || { echo "SKIP: ibv_devices is not installed (ibverbs-utils)"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rverbs-compat-installed.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build_dir" --no-rebuild --destdir "$tmp/dest" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; fail "meson install --destdir failed"; }
mv "$tmp/dest$prefix" "$tmp/moved"
tool=$tmp/moved${bindir#"$prefix"}/rverbs
layer=$tmp/moved${libdir#"$prefix"}/rverbs/compat
[ -e "$layer/libibverbs.so.1" ] || fail "no libibverbs.so.1 in $layer"
[ -e "$layer/librdmacm.so.1" ] || fail "no librdmacm.so.1 in $layer"

# The layer's own librverbs is the moved prefix's, through its RUNPATH.
loaded=$(env -u LD_LIBRARY_PATH ldd "$layer/libibverbs.so.1" | sed -n 's/.*librverbs\.so\.[0-9]* => \([^ ]*\) .*/\1/p')
[ -n "$loaded" ] || fail "ldd: the layer finds no librverbs"
case $(readlink -f "$loaded") in "$(readlink -f "$tmp/moved")"/*) ;; *) fail "the layer loads $loaded, not the moved prefix's" ;; esac

path=$(env -u LD_LIBRARY_PATH "$tool" run sh -c 'echo "$LD_LIBRARY_PATH"') || fail "rverbs run sh failed"
[ "$(readlink -f "${path%%:*}")" = "$(readlink -f "$layer")" ] ||
	fail "rverbs run put $path first on LD_LIBRARY_PATH, not $layer"
out=$(env -u LD_LIBRARY_PATH "$tool" run ibv_devices) || fail "rverbs run ibv_devices failed: $out"
echo "$out"
grep -qE '^\s+soft0\s+[0-9a-f]{16}$' <<<"$out" || fail "ibv_devices does not list soft0"
echo "PASS"
