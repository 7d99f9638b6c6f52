#!/bin/sh
# Instructions per operation, libibverbs directly vs through rverbs, on the
# provider stub of bench/overhead: runs each loop of the benchmark once under
# callgrind, collecting only inside the loop's function (--toggle-collect),
# and divides the instructions executed by the number of operations.
#
#   bench/overhead-callgrind.sh [BUILD_DIR] [OPS]     (default: build, 100000)
#
# Exit status 77 when valgrind is not installed (the benchmark is skipped).
set -eu

build=${1:-build}
ops=${2:-100000}
exe=$build/bench/overhead
if ! command -v valgrind >/dev/null 2>&1; then
	echo "overhead-callgrind: valgrind is not installed" >&2
	exit 77
fi
if [ ! -x "$exe" ]; then
	echo "overhead-callgrind: $exe is not built (ninja -C $build bench/overhead)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Instructions per operation of loop $1 run for $2 operations (default $ops), or "n/a".
ir_per_op() {
	n=${2:-$ops}
	out=$tmp/$1.out
	if ! valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect="$1" \
		"$exe" --only "$1" -n "$n" >"$tmp/$1.log" 2>&1; then
		echo n/a
		return
	fi
	awk -v ops="$n" '/^(summary|totals):/ { printf "%.1f\n", $2 / ops; exit }' "$out"
}

echo "instructions per operation (callgrind, $ops operations per loop, collected inside the loop only)"
echo
# Of a loop's instructions, those in the facade (rv_qp_*/rv_cq_* entry points
# and lib/qp.c, lib/cq.c) and in the libibverbs driver (rv_ibv_* with what is
# inlined into it, and the static helpers of lib/drivers/ibv/), per op.
split() {
	callgrind_annotate --auto=no --threshold=100 "$tmp/$1.out" 2>/dev/null | awk -v ops="$2" '
		/^ *[0-9,]+ +\( *[0-9.]+%\)/ {
			n = $1; gsub(",", "", n)
			fn = $0; sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, "", fn)
			file = fn; sub(/:.*/, "", file)
			func = fn; sub(/^[^:]*:/, "", func); sub(/ .*/, "", func)
			if (func ~ /^rv_ibv_/ || file ~ /lib\/drivers\/ibv\//) drv += n
			else if (func ~ /^rv_(qp|cq)_/ || file ~ /lib\/(qp|cq)\.c$/) fac += n
		}
		END { printf "%.1f | %.1f\n", fac / ops, drv / ops }'
}

echo "| operation | libibverbs instr/op | rverbs instr/op | added instr/op | of which facade | of which ibv driver |"
echo "|---|---|---|---|---|---|"
for op in post_send post_send_inl post_send16 post_recv poll_empty poll_one; do
	a=$(ir_per_op "loop_ibv_$op")
	b=$(ir_per_op "loop_rv_$op")
	d=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a == "n/a" || b == "n/a") print "n/a"; else printf "%+.1f\n", b - a }')
	echo "| $op | $a | $b | $d | $(split "loop_rv_$op" "$ops") |"
done
echo
echo "software device soft0 (instructions in the calling thread only; its progress thread is not counted)"
echo
echo "| operation | instr/op |"
echo "|---|---|"
echo "| poll_cq, empty CQ | $(ir_per_op loop_soft_poll_empty) |"
echo "| post_send, 64 B WRITE (post calls only) | $(ir_per_op soft_post_batch $((ops / 10 / 64 * 64))) |"
