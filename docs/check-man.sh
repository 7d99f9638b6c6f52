#!/bin/sh
# After `meson install --destdir`, `man -M DESTDIR/.../share/man NAME` finds
# a page for public functions (install-man.sh: a page of the function's own
# for a function, a link to the header's page for the rest). With
# NAME:HEADER, the page must also show that function's synopsis with
# `#include <rverbs/HEADER>` (not the headers HEADER itself includes).
# Skipped (77) where `man` is missing.
# usage: check-man.sh BUILD_DIR MESON [NAME[:HEADER]...]
set -eu
build=$1 meson=$2
shift 2
command -v man >/dev/null 2>&1 || { echo "man is not installed: skipped"; exit 77; }
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
"$meson" install -C "$build" --no-rebuild --destdir "$dest" >"$dest.log" 2>&1 ||
	{ cat "$dest.log"; rm -f "$dest.log"; echo "meson install failed"; exit 1; }
rm -f "$dest.log"
man3=$(find "$dest" -type d -path '*/share/man/man3' | head -n 1)
[ -n "$man3" ] || { echo "no share/man/man3 under the DESTDIR install"; exit 1; }
root=${man3%/man3}
status=0
[ $# -gt 0 ] || set -- rv_qp_connect
for arg in "$@"; do
	name=${arg%%:*} hdr=
	[ "$name" = "$arg" ] || hdr=${arg#*:}
	if page=$(man -M "$root" -w 3 "$name" 2>/dev/null) &&
	   text=$(MANWIDTH=200 man -M "$root" -P cat 3 "$name" 2>/dev/null) &&
	   printf '%s\n' "$text" | grep -q "$name"; then
		if [ -n "$hdr" ] && ! { printf '%s\n' "$text" | grep -qF "#include <rverbs/$hdr>" &&
			printf '%s\n' "$text" | grep -q "^SYNOPSIS" &&
			printf '%s\n' "$text" | grep -q "^ *[a-z].*[ *]$name ("; }; then
			echo "FAIL man $name: no synopsis of $name with #include <rverbs/$hdr>"
			printf '%s\n' "$text" | sed -n '1,15p'
			status=1
		else
			echo "ok   man $name -> ${page#"$dest"}${hdr:+ (#include <rverbs/$hdr>)}"
		fi
	else
		echo "FAIL man -M $root 3 $name"
		status=1
	fi
done
echo "$(ls "$man3" | wc -l) pages in ${man3#"$dest"}"
exit $status
