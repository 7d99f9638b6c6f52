#!/bin/sh
# The committed seed corpora of the soft0 wire fuzzers are exactly what their
# generators write: runs each generator into a scratch directory and compares.
# A difference means the encoder or a generator changed without
# `scripts/fuzz-wire --gen-corpus` (then regenerate and commit the corpus).
#
# Usage: check-corpus.sh GEN_WIRE GEN_ROCE GEN_AUTH CORPUS_DIR
set -eu
gen_wire=$1 gen_roce=$2 gen_auth=$3 corpus=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/wire-fpdu" "$tmp/wire-mpa" "$tmp/roce-ud" "$tmp/soft-auth"
"$gen_wire" "$tmp/wire-fpdu" "$tmp/wire-mpa"
"$gen_roce" "$tmp/roce-ud"
"$gen_auth" "$tmp/soft-auth"
status=0
for d in wire-fpdu wire-mpa roce-ud soft-auth; do
	if ! diff -r "$tmp/$d" "$corpus/$d"; then
		echo "tests/fuzz/corpus/$d differs from its generator: run scripts/fuzz-wire --gen-corpus" >&2
		status=1
	fi
done
exit $status
