#!/bin/sh
# meson install script: install Doxygen's man pages of the public API
# (headers, functions, types; MAN_LINKS `.so` pages) into MANDIR/man3. The
# guides' pages are HTML only: their names (concepts, tuning ...) are too
# generic for man3, as are the headers' (`qp.h`): those are installed as
# rverbs_qp.h.3 and the `.so` links rewritten to match.
#
# A function gets a page of its own instead of a link (issue 17: `man
# rv_qp_connect` opened the whole qp.h page, whose synopsis names the headers
# qp.h includes): NAME, a SYNOPSIS with the header that declares it and its
# prototype, its documentation from the header's page, SEE ALSO the header's
# page. Types, enumerators and macros stay links to their header's page.
# usage: install-man.sh BUILD_MAN3_DIR MANDIR_MAN3
set -eu
src=$1
dst=${DESTDIR:-}$MESON_INSTALL_PREFIX/$2
case $2 in /*) dst=${DESTDIR:-}$2 ;; esac
mkdir -p "$dst"

# function_page NAME HEADER (qp.h): the page of function NAME from
# $src/HEADER.3 on stdout; nothing when NAME is not a function there.
function_page() {
	awk -v name="$1" -v hdr="$2" '
	NR == 1 && /^\.TH / { th_date = $0; sub(/^\.TH "[^"]*" 3 /, "", th_date) }
	/^\.SH / && in_fn { exit }
	/^\.SS / {
		if (in_fn) exit
		line = $0
		sub(/^\.SS "/, "", line); sub(/"$/, "", line)
		if (index(line, " " name " (") || index(line, "*" name " (")) {
			in_fn = 1; proto = line; next
		}
	}
	in_fn { body[++n] = $0 }
	END {
		if (!in_fn) exit 1
		brief = ""
		for (i = 1; i <= n && brief == ""; i++)
			if (body[i] != "" && body[i] !~ /^\./) brief = body[i]
		sub(/\\&\. .*/, "", brief); sub(/\\&\.[ ]*$/, "", brief)
		printf ".TH \"%s\" 3 %s\n.ad l\n.nh\n.SH NAME\n%s \\- %s\n", name, th_date, name, brief
		printf ".SH SYNOPSIS\n.nf\n\\fC#include <rverbs/%s>\\fP\n.sp\n%s;\n.fi\n.SH DESCRIPTION\n", hdr, proto
		for (i = 1; i <= n; i++) print body[i]
		printf ".SH \"SEE ALSO\"\n\\fBrverbs_%s\\fP(3)\n", hdr
	}' "$src/$2.3"
}

n=0
for f in "$src"/*.3; do
	name=$(basename "$f")
	case $name in
	*.h.3) sed 's,^\.so man3/\(.*\.h\.3\)$,.so man3/rverbs_\1,' "$f" >"$dst/rverbs_$name" ;;
	rv_* | RV_* | RVERBS_*)
		hdr=$(sed -n 's,^\.so man3/\(.*\.h\)\.3$,\1,p' "$f")
		if [ -n "$hdr" ] && [ -f "$src/$hdr.3" ] &&
		   function_page "${name%.3}" "$hdr" >"$dst/$name.tmp" 2>/dev/null; then
			mv "$dst/$name.tmp" "$dst/$name"
		else
			rm -f "$dst/$name.tmp"
			# Doxygen's struct pages have a bare NAME line (`rv_wc`), which
			# whatis/apropos cannot use: add `\- struct rv_wc of <rverbs/cq.h>`.
			hdr=$(sed -n 's,^\\fC#include <\(rverbs/[^>]*\)>\\fP$,\1,p' "$f" | head -n 1 | sed 's,\\&,,g')
			sed -e 's,^\.so man3/\(.*\.h\.3\)$,.so man3/rverbs_\1,' \
			    -e "/^\.SH NAME\$/{n;/\\\\-/!s,^\([A-Za-z_][A-Za-z0-9_]*\)\$,\1 \\\\- struct \1${hdr:+ of <$hdr>},;}" \
			    "$f" >"$dst/$name"
		fi
		;;
	*) continue ;;
	esac
	chmod 644 "$dst/rverbs_$name" "$dst/$name" 2>/dev/null || true
	n=$((n + 1))
done
[ -n "${MESON_INSTALL_QUIET:-}" ] || echo "Installing $n man pages to $dst"
