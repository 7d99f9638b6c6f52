#!/bin/sh
# Instructions per call of the libibverbs-compatible layer (compat/) against
# the rverbs facade, on soft0, in the same program (bench/compat-overhead):
# runs each case once under callgrind, collecting only inside the case's
# function (--toggle-collect), and divides the instructions by the calls the
# program reports.
#
#   bench/compat-callgrind.sh [BUILD_DIR] [OPS] [ROUNDS]   (default: build, 6400, 3)
#
# Each case runs ROUNDS times; a cell is one figure when the rounds agree to
# 0.5 instructions per call, else "min-max". soft0's own work inside a post or
# a poll (a frame sent by the caller, progress made by a poll) depends on
# timing, so the facade and the layer may differ by more than the layer's
# translation in some rounds; the "min-max" cells show where.
# The last column needs no comparison: the instructions the layer's own
# code (compat/*.c: WR and completion translation, the checks) executed per
# call, from callgrind_annotate; it does not depend on soft0's timing.
# Counts the calling thread only (soft0's progress thread is not in the
# toggled functions). Exit status 77 when valgrind is not installed or the
# program cannot find soft0 through the layer.
set -eu

build=${1:-build}
ops=${2:-6400}
rounds=${3:-3}
exe=$build/bench/compat-overhead
if ! command -v valgrind >/dev/null 2>&1; then
	echo "compat-callgrind: valgrind is not installed" >&2
	exit 77
fi
if [ ! -x "$exe" ]; then
	echo "compat-callgrind: $exe is not built (ninja -C $build bench/compat-overhead)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Appends the Ir per call of case $1 to $tmp/$1$2 (tag $2 optional); exits
# 77 if soft0 is absent.
run() {
	tag=${2:-}
	out=$tmp/$1$tag.out
	rc=0
	valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect="$1" \
		"$exe" --only "$1" -n "$ops" >"$tmp/$1.log" 2>"$tmp/$1.err" || rc=$?
	if [ "$rc" = 77 ]; then
		cat "$tmp/$1.err" >&2
		exit 77
	fi
	if [ "$rc" != 0 ]; then
		echo "compat-callgrind: $1 failed (exit $rc):" >&2
		grep -v '^==' "$tmp/$1.err" | tail -3 >&2
		echo "$1$tag" >>"$tmp/failed"
		return
	fi
	calls=$(awk -v c="$1" '$1 == c { print $3 }' "$tmp/$1.log")
	comps=$(awk -v c="$1" '$1 == c { print $5 }' "$tmp/$1.log")
	echo "$calls $comps" >>"$tmp/$1$tag.calls"
	awk -v calls="$calls" '/^(summary|totals):/ { printf "%.1f\n", $2 / calls; exit }' "$out" >>"$tmp/$1$tag"
	# Of those, the instructions in the layer's own code (compat/*.c).
	callgrind_annotate --auto=no --threshold=100 "$out" 2>/dev/null | awk -v calls="$calls" '
		/^ *[0-9,]+ +\( *[0-9.]+%\)/ && / [^ ]*compat\/[^ :]*\.c:/ { n = $1; gsub(",", "", n); own += n }
		END { printf "%.1f\n", own / calls }' >>"$tmp/$1$tag.own"
}

cell() { # file: "x" or "min-max", "n/a" when no round ran
	[ -s "$1" ] || { echo n/a; return; }
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		if (v[NR] - v[1] <= 0.5) printf "%.1f\n", (v[1] + v[NR]) / 2
		else printf "%.1f-%.1f\n", v[1], v[NR] }'
}

i=0
while [ "$i" -lt "$rounds" ]; do
	i=$((i + 1))
	for op in post_send post_batch post_recv poll_empty poll_full; do
		run "layer_$op"
		run "facade_$op"
	done
	# The empty poll without the poller's progress work (soft0's
	# RVERBS_SOFT_POLL_PROGRESS=0): no timing left in it.
	RVERBS_SOFT_POLL_PROGRESS=0 run layer_poll_empty .noprog
	RVERBS_SOFT_POLL_PROGRESS=0 run facade_poll_empty .noprog
done

echo "instructions per call on soft0 (callgrind, calling thread, collected inside the measured function only; $ops operations, $rounds rounds)"
echo
echo "| operation | layer (ibv_*) | facade (rv_*) | layer minus facade | of the layer's, in compat/*.c |"
echo "|---|---|---|---|---|"
for row in "post_send:ibv_post_send / rv_qp_post_send, one 64 B WRITE, signalled" \
	"post_batch:the same, 64 per batch, only the last signalled" \
	"post_recv:ibv_post_recv / rv_qp_post_recv, one receive WR" \
	"poll_empty:ibv_poll_cq / rv_cq_poll, empty CQ" \
	"poll_empty.noprog:the same, RVERBS_SOFT_POLL_PROGRESS=0" \
	"poll_full:ibv_poll_cq / rv_cq_poll, one completion each"; do
	op=${row%%:*} what=${row#*:}
	a=$(cell "$tmp/layer_$op")
	b=$(cell "$tmp/facade_$op")
	d=$(awk -v a="$a" -v b="$b" 'BEGIN {
		if (a == "n/a" || b == "n/a") { print "n/a"; exit }
		if (a ~ /[0-9]-/ || b ~ /[0-9]-/) {
			split(a, x, "-"); split(b, y, "-"); if (!(2 in x)) x[2] = x[1]; if (!(2 in y)) y[2] = y[1]
			printf "%+.1f to %+.1f\n", x[1] - y[2], x[2] - y[1]; exit }
		printf "%+.1f\n", a - b }')
	echo "| $what | $a | $b | $d | $(cell "$tmp/layer_$op.own") |"
done
# Empty polls inside the one-completion case (calls beyond the completions).
for side in layer facade; do
	f=$tmp/${side}_poll_full.calls
	[ -s "$f" ] && awk -v s="$side" '{ e = $1 - $2; if (e > m) m = e } END {
		if (m > 0) printf "note: %s poll_full found the CQ empty in up to %d calls of a round\n", s, m }' "$f"
done
if [ -s "$tmp/failed" ]; then
	echo "note: runs that failed (not in the table): $(sort "$tmp/failed" | uniq -c | awk '{ printf "%s%s x%d", NR > 1 ? ", " : "", $2, $1 }')"
fi
exit 0
