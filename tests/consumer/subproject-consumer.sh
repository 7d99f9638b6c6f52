#!/bin/bash
# Build tests/consumer/subproject/ with rverbs as its subproject (a copy of
# this source tree in subprojects/rverbs), then run the consumer program.
#
# Usage: subproject-consumer.sh SOURCE_ROOT VERSION
set -euo pipefail

src=$1 version=$2
here=$src/tests/consumer
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rverbs-subproject.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
proj=$tmp/consumer

fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$proj/subprojects/rverbs"
cp "$here/subproject/meson.build" "$here/consumer.c" "$here/consumer-ibv.c" "$proj/"
# Copy the source tree as git sees it (tracked and new files, not build
# directories); outside a git checkout, everything but build*/ and .git.
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	(cd "$src" && git ls-files -z --cached --others --exclude-standard |
		tar --null -T - --ignore-failed-read -cf - 2>/dev/null) |
		tar -C "$proj/subprojects/rverbs" -xf - || fail "copying the source tree"
else
	tar -C "$src" --exclude='./build*' --exclude=./.git -cf - . |
		tar -C "$proj/subprojects/rverbs" -xf -
fi

run() {
	"$@" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; fail "$*"; }
}
run meson setup "$tmp/build" "$proj" --force-fallback-for=rverbs --wrap-mode=nodownload
run meson compile -C "$tmp/build" consumer
out=$("$tmp/build/consumer") || fail "the consumer failed: $out"
echo "$out"
[ "$out" = "rverbs $version" ] || fail "unexpected output: $out"
echo "PASS"
