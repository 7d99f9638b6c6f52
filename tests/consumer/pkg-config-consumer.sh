#!/bin/bash
# Install the build into a DESTDIR and build a consumer program against it
# with nothing but `pkg-config --cflags --libs rverbs`, then run it.
#
# Usage: CC=compiler pkg-config-consumer.sh BUILD_DIR SOURCE_DIR PREFIX LIBDIR
#        VERSION SOVERSION [CFLAGS...]
# (meson passes these; LIBDIR may be relative to PREFIX.)
set -euo pipefail

build_dir=$1 src_dir=$2 prefix=$3 libdir=$4 version=$5 soversion=$6
shift 6
read -r -a cc <<<"${CC:-cc}"
extra_cflags=("$@")
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rverbs-pc-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/root

fail() { echo "FAIL: $*" >&2; exit 1; }

meson install -C "$build_dir" --no-rebuild --destdir "$dest" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; fail "meson install --destdir failed"; }

# The layout the issue promises.
for f in "$prefix/include/rverbs/rverbs.h" "$prefix/include/rverbs/version.h" \
	 "$prefix/include/rverbs/ibv.h" "$libdir/pkgconfig/rverbs.pc" \
	 "$libdir/librverbs.so" "$libdir/librverbs.so.$soversion"; do
	[ -e "$dest$f" ] || fail "not installed: $f"
done
soname=$(readelf -d "$dest$libdir/librverbs.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "librverbs.so.$soversion" ] || fail "soname is '$soname', want librverbs.so.$soversion"

export PKG_CONFIG_PATH=$dest$libdir/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$dest
pkg-config --validate rverbs || fail "pkg-config --validate rverbs"
got=$(pkg-config --modversion rverbs)
[ "$got" = "$version" ] || fail "pkg-config --modversion says $got, want $version"
read -r -a flags <<<"$(pkg-config --cflags --libs rverbs)"
echo "pkg-config --cflags --libs rverbs: ${flags[*]}"

"${cc[@]}" -std=c99 -pedantic -Wall -Wextra -Werror "${extra_cflags[@]}" \
	-o "$tmp/consumer" "$src_dir/consumer.c" "$src_dir/consumer-ibv.c" "${flags[@]}" ||
	fail "the consumer does not build with pkg-config's flags"

# The consumer must load the installed library, not the one in the build tree.
out=$(LD_LIBRARY_PATH=$dest$libdir "$tmp/consumer") || fail "the consumer failed: $out"
echo "$out"
[ "$out" = "rverbs $version" ] || fail "unexpected output: $out"
loaded=$(LD_LIBRARY_PATH=$dest$libdir ldd "$tmp/consumer")
grep -q "$dest$libdir/librverbs.so.$soversion" <<<"$loaded" ||
	fail "the consumer did not load the DESTDIR library: $loaded"
echo "PASS"
