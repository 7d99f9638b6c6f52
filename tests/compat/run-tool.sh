#!/bin/bash
# `rverbs run` itself: the program's exit status comes back unchanged, the
# layer's directory is first on LD_LIBRARY_PATH (and what was there stays
# after it), a program that does not exist is 127, no program is a usage
# error (2), and RVERBS_COMPAT_DIR naming no layer is refused.
#
# Usage: run-tool.sh RVERBS_TOOL COMPAT_BUILD_DIR
set -uo pipefail
tool=$1 layer=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

"$tool" run -- sh -c 'exit 7'
[ $? -eq 7 ] || fail "the program's exit status 7 did not come back"
"$tool" run true || fail "rverbs run true failed"

path=$(LD_LIBRARY_PATH=/some/where "$tool" run sh -c 'echo "$LD_LIBRARY_PATH"') || fail "rverbs run sh failed"
[ "$(readlink -f "${path%%:*}")" = "$(readlink -f "$layer")" ] || fail "first on LD_LIBRARY_PATH: $path, not $layer"
[ "${path#*:}" = /some/where ] || fail "the caller's LD_LIBRARY_PATH was not kept after the layer: $path"

"$tool" run /nonexistent/program 2>/dev/null
[ $? -eq 127 ] || fail "a missing program did not exit 127"
"$tool" run 2>/dev/null
[ $? -eq 2 ] || fail "no program did not exit 2"
RVERBS_COMPAT_DIR=/nonexistent "$tool" run true 2>/dev/null
[ $? -eq 1 ] || fail "RVERBS_COMPAT_DIR without a layer was not refused"
RVERBS_COMPAT_DIR=$layer "$tool" run true || fail "RVERBS_COMPAT_DIR=$layer refused"
echo PASS
