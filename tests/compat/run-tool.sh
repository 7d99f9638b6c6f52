#!/bin/bash
# `rverbs run` itself: the program's exit status comes back unchanged, the
# layer's directory is first on LD_LIBRARY_PATH (and what was there stays
# after it), a program that does not exist is 127, no program is a usage
# error (2), RVERBS_COMPAT_DIR naming no layer is refused, and the sysfs
# view shows soft0 (where the kernel allows a private mount namespace).
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

# The sysfs view (where a private mount namespace can be made: root, or
# unprivileged user namespaces): soft0 with device/net/lo (its listen address
# is 127.0.0.1), the other classes still there, nothing left outside.
if [ -d /sys/class/net ] && { [ "$(id -u)" = 0 ] || unshare -Ur true 2>/dev/null; } &&
   [ ! -e /sys/class/infiniband/soft0 ]; then
	net=$("$tool" run sh -c 'ls /sys/class/infiniband/soft0/device/net/') || fail "rverbs run ls failed"
	[ "$net" = lo ] || fail "soft0's device/net in the view: '$net', not lo"
	"$tool" run sh -c 'test -e /sys/class/infiniband/soft0/device/net/lo/address' ||
		fail "device/net/lo does not lead to the netdev"
	gt=$("$tool" run cat /sys/class/infiniband/soft0/ports/1/gid_attrs/types/0)
	[ "$gt" = "RoCE v2" ] || fail "GID 0's type in the view: '$gt'"
	"$tool" run sh -c 'test -e /sys/class/net/lo/address' || fail "the real classes are gone in the view"
	[ ! -e /sys/class/infiniband/soft0 ] || fail "the view is visible outside rverbs run"
	net=$(RVERBS_RUN_SYSFS=0 "$tool" run sh -c 'ls /sys/class/infiniband/soft0 2>/dev/null')
	[ -z "$net" ] || fail "RVERBS_RUN_SYSFS=0 still gave a view"
else
	echo "no private mount namespace here: the sysfs view is not checked"
fi
echo PASS
