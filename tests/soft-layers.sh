#!/bin/sh
# soft0 is a pipeline (lib/drivers/soft/README.md, "Layout"): each file calls
# only files below it in the order here, except the calls listed in ALLOWED,
# which the README justifies one by one. Reads who defines and who uses each
# symbol from the object files of the library's archive, as the README counts
# them: a pair of files is one back-running call however many functions it
# names.
#
# Fails when a file calls up outside ALLOWED, when an ALLOWED call no longer
# happens (take it out here and in the README), or when a soft0 file is not
# in ORDER (place it).
#
# Usage: soft-layers.sh ARCHIVE   (build/lib/librverbs-internal.a)
set -eu
archive=$1

# Bottom first. Files of one folder keep together, folders in the README's order.
ORDER='
wire/crc32c wire/sha256 wire/wire wire/roce
lock event completion
memory/maps memory/mr memory/dmabuf memory/atomic
iwarp/fault
samehost/shm samehost/grant samehost/shmring
iwarp/stream iwarp/auth iwarp/ext iwarp/tx iwarp/retry iwarp/rx iwarp/place iwarp/conn
ud/ud
verbs/device verbs/context verbs/cq verbs/qp verbs/srq verbs/driver
'
# The calls that still run back up: "caller>callee", each justified in the README.
ALLOWED='
samehost/shmring>iwarp/rx
samehost/shmring>iwarp/tx
'

command -v nm >/dev/null 2>&1 || { echo "soft-layers: nm (binutils) is not installed" >&2; exit 77; }

# "file kind symbol" for every soft0 member: D = defines, U = uses.
nm -A "$archive" 2>/dev/null | awk '
	{
		m = $1; sub(/:[^:]*$/, "", m)      # archive:member:addr... -> archive:member
		sub(/^.*:/, "", m)                  # member path
		sub(/^.*\//, "", m)                 # member file name
		if (m !~ /^drivers_soft_.*\.c\.o$/) next
		sub(/^drivers_soft_/, "", m); sub(/\.c\.o$/, "", m)
		if (m ~ /^(wire|memory|iwarp|samehost|ud|verbs)_/) sub(/_/, "/", m)
		if ($2 ~ /^[TDBR]$/) print m, "D", $3
		else if ($2 == "U") print m, "U", $3
	}' >"${TMPDIR:-/tmp}/soft-layers.$$"
trap 'rm -f "${TMPDIR:-/tmp}/soft-layers.$$"' EXIT

awk -v order="$ORDER" -v allowed="$ALLOWED" '
	BEGIN {
		n = split(order, o, /[ \n]+/)
		for (i = 1; i <= n; i++) if (o[i] != "") rank[o[i]] = i
		n = split(allowed, a, /[ \n]+/)
		for (i = 1; i <= n; i++) if (a[i] != "") ok[a[i]] = 1
	}
	$2 == "D" { def[$3] = $1; files[$1] = 1; next }
	{ use[NR] = $1 " " $3 }
	END {
		status = 0
		for (f in files) if (!(f in rank)) {
			printf "soft-layers: %s.c is not in the pipeline order of tests/soft-layers.sh: place it\n", f
			status = 1
		}
		for (k in use) {
			split(use[k], u, " ")
			t = def[u[2]]
			if (t == "" || t == u[1] || !(u[1] in rank) || !(t in rank)) continue
			if (rank[t] > rank[u[1]]) {
				pair = u[1] ">" t
				names[pair] = names[pair] " " u[2]
			}
		}
		for (p in names) {
			if (p in ok) { seen[p] = 1; continue }
			printf "soft-layers: %s calls up into %s (%s ): not in the allowed list (lib/drivers/soft/README.md, \"Layout\")\n",
				substr(p, 1, index(p, ">") - 1), substr(p, index(p, ">") + 1), names[p]
			status = 1
		}
		for (p in ok) if (!(p in seen)) {
			printf "soft-layers: %s no longer runs back up: take it out of ALLOWED and the README\n", p
			status = 1
		}
		c = 0
		for (p in seen) c++
		printf "soft-layers: %d pairs of files call back up (allowed:", c
		for (p in seen) printf " %s", p
		printf ")\n"
		exit status
	}' "${TMPDIR:-/tmp}/soft-layers.$$"
