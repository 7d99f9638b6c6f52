#!/bin/sh
# meson install script: install Doxygen's man pages of the public API
# (headers, functions, types; MAN_LINKS `.so` pages) into MANDIR/man3. The
# guides' pages are HTML only: their names (concepts, tuning ...) are too
# generic for man3, as are the headers' (`qp.h`): those are installed as
# rverbs_qp.h.3 and the `.so` links rewritten to match.
# usage: install-man.sh BUILD_MAN3_DIR MANDIR_MAN3
set -eu
src=$1
dst=${DESTDIR:-}$MESON_INSTALL_PREFIX/$2
case $2 in /*) dst=${DESTDIR:-}$2 ;; esac
mkdir -p "$dst"
n=0
for f in "$src"/*.3; do
	name=$(basename "$f")
	case $name in
	*.h.3) sed 's,^\.so man3/\(.*\.h\.3\)$,.so man3/rverbs_\1,' "$f" >"$dst/rverbs_$name" ;;
	rv_* | RV_* | RVERBS_*)
		# Doxygen's struct pages have a bare NAME line (`rv_wc`), which
		# whatis/apropos cannot use: add `\- struct rv_wc of <rverbs/cq.h>`.
		hdr=$(sed -n 's,^\\fC#include <\(rverbs/[^>]*\)>\\fP$,\1,p' "$f" | head -n 1 | sed 's,\\&,,g')
		sed -e 's,^\.so man3/\(.*\.h\.3\)$,.so man3/rverbs_\1,' \
		    -e "/^\.SH NAME\$/{n;/\\\\-/!s,^\([A-Za-z_][A-Za-z0-9_]*\)\$,\1 \\\\- struct \1${hdr:+ of <$hdr>},;}" \
		    "$f" >"$dst/$name" ;;
	*) continue ;;
	esac
	chmod 644 "$dst/rverbs_$name" "$dst/$name" 2>/dev/null || true
	n=$((n + 1))
done
[ -n "${MESON_INSTALL_QUIET:-}" ] || echo "Installing $n man pages to $dst"
