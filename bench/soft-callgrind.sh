#!/bin/sh
# soft0's instructions per operation under callgrind, repeated: the empty
# poll, the post calls of 64 B WRITEs (bench/overhead's soft rows) and one
# 64 B SEND round trip on the same-host rings (bench/ring-cpu).
#
#   bench/soft-callgrind.sh [BUILD_DIR] [ROUNDS]      (default: build, 9)
#   bench/soft-callgrind.sh BUILD_A ROUNDS BUILD_B    (the two interleaved)
#
# Unlike the facade's rows of overhead-callgrind.sh, these counts depend on
# timing: how many empty polls a wait takes, whether the progress thread or
# the caller received a frame. So each is run ROUNDS times and reported as
# min / median / max; with two builds the runs alternate, so that both see
# the same load. One figure is exact: the empty poll with
# RVERBS_SOFT_POLL_PROGRESS=0 (no progress made by the poller).
#
# Exit status 77 when valgrind is not installed.
set -eu

a=${1:-build}
rounds=${2:-9}
b=${3:-}
if ! command -v valgrind >/dev/null 2>&1; then
	echo "soft-callgrind: valgrind is not installed" >&2
	exit 77
fi
for d in $a $b; do
	for exe in bench/overhead bench/ring-cpu; do
		if [ ! -x "$d/$exe" ]; then
			echo "soft-callgrind: $d/$exe is not built (ninja -C $d $exe)" >&2
			exit 1
		fi
	done
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Ir of the toggled function / ops, appended to $tmp/<build tag>.<name>.
run() { # tag name ops function command...
	tag=$1 name=$2 ops=$3 fn=$4
	shift 4
	if valgrind --tool=callgrind --callgrind-out-file="$tmp/out" --toggle-collect="$fn" "$@" \
		>/dev/null 2>&1; then
		awk -v ops="$ops" '/^(summary|totals):/ { printf "%.1f\n", $2 / ops; exit }' "$tmp/out" \
			>>"$tmp/$tag.$name"
	fi
}

# 64 unsignalled WRITEs per batch, the last signalled: as overhead-callgrind.sh.
post_ops=$((100000 / 10 / 64 * 64))
round() { # tag build
	run "$1" poll 100000 loop_soft_poll_empty "$2/bench/overhead" --only loop_soft_poll_empty -n 100000
	run "$1" post "$post_ops" soft_post_batch "$2/bench/overhead" --only soft_post_batch -n "$post_ops"
	# 1000 warm-up and 3000 measured round trips, two messages each.
	run "$1" ring 8000 pingpong "$2/bench/ring-cpu" 3000 1
}

i=0
while [ "$i" -lt "$rounds" ]; do
	i=$((i + 1))
	round A "$a"
	[ -z "$b" ] || round B "$b"
done
RVERBS_SOFT_POLL_PROGRESS=0 run A exact 100000 loop_soft_poll_empty "$a/bench/overhead" --only loop_soft_poll_empty -n 100000
[ -z "$b" ] || RVERBS_SOFT_POLL_PROGRESS=0 run B exact 100000 loop_soft_poll_empty "$b/bench/overhead" \
	--only loop_soft_poll_empty -n 100000

stats() { # file: "min / median / max (n)"
	[ -s "$1" ] || { echo "n/a"; return; }
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.1f / %.1f / %.1f (%d runs)\n", v[1], m, v[NR], NR }'
}

echo "soft0, instructions per operation (callgrind, calling thread only): min / median / max"
echo
if [ -z "$b" ]; then
	echo "| operation | $a |"
	echo "|---|---|"
else
	echo "| operation | $a | $b |"
	echo "|---|---|---|"
fi
for row in "poll:poll_cq, empty CQ" "exact:poll_cq, empty CQ, RVERBS_SOFT_POLL_PROGRESS=0" \
	"post:post_send, 64 B WRITE (post calls only)" "ring:64 B SEND round trip, same-host rings (per message)"; do
	name=${row%%:*} what=${row#*:}
	if [ -z "$b" ]; then
		echo "| $what | $(stats "$tmp/A.$name") |"
	else
		echo "| $what | $(stats "$tmp/A.$name") | $(stats "$tmp/B.$name") |"
	fi
done
