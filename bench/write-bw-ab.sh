#!/bin/bash
# A/B of `rverbs perf "$op" bw --loopback` between two builds, interleaved:
# each round runs every size with BASE, NEW and NEW with
# RVERBS_SOFT_SHM_DIRECT=0 (soft0's one-copy WRITE off) in turn, then prints
# the medians and min-max in Gb/s and the load average seen.
#
#   [OP=read] bench/write-bw-ab.sh BASE_RVERBS NEW_RVERBS [ROUNDS] [SIZES] [-- EXTRA perf args]
#   e.g. bench/write-bw-ab.sh /tmp/base/build/tools/rverbs build/tools/rverbs 5 "4096 65536 1048576" -- -n 50000
set -eu
op=${OP:-write}
base=$1 new=$2 rounds=${3:-5} sizes=${4:-"4096 65536 1048576"}
shift $(( $# < 4 ? $# : 4 ))
[ "${1:-}" = "--" ] && shift
out=$(mktemp)
for r in $(seq 1 "$rounds"); do
	for s in $sizes; do
		for v in base new new0; do
			bin=$new; env=
			[ $v = base ] && bin=$base
			[ $v = new0 ] && env=RVERBS_SOFT_SHM_DIRECT=0
			mbs=$(env $env timeout 300 "$bin" perf "$op" bw --loopback -s "$s" -t 128 "$@" 2>&1 |
				awk -v s="$s" '$1 == s { print $4 }')
			echo "$r $s $v ${mbs:-x} $(cut -d' ' -f1 /proc/loadavg)" >> "$out"
		done
	done
done
python3 - "$out" <<'PY'
import collections, statistics as st, sys
d = collections.defaultdict(list); loads = []
for line in open(sys.argv[1]):
    r, s, v, mbs, load = line.split()
    loads.append(float(load))
    if mbs != 'x':
        d[(int(s), v)].append(float(mbs) * 8 / 1000)
print('size | base | new | new, RVERBS_SOFT_SHM_DIRECT=0   (Gb/s: median (min-max))')
for s in sorted({k[0] for k in d}):
    cells = []
    for v in ('base', 'new', 'new0'):
        x = d.get((s, v), [])
        cells.append('%.1f (%.1f-%.1f) n=%d' % (st.median(x), min(x), max(x), len(x)) if x else '-')
    print(s, '|', ' | '.join(cells))
print('load average (1 min) during the runs: %.2f-%.2f' % (min(loads), max(loads)))
PY
rm -f "$out"
