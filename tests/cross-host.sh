#!/bin/bash
# Two hosts on soft0, as two network namespaces joined by a veth pair: the
# examples run server in one and client in the other, as a user would across
# machines (issue 17, item 7).
#
#   1. rdma-write with both contexts on their namespace's address
#      (RVERBS_SOFT_LISTEN_ADDR): the message arrives;
#   2. the server's context on the unspecified address (0.0.0.0): its GID is
#      the namespace's routable address, the message arrives;
#   3. the server's context on loopback (the default): the client fails at
#      once with a message that names the fix, and never reports success;
#   4. send-recv-pingpong across the namespaces, both contexts on 0.0.0.0.
#
# Needs root and iproute2 (exit 77 otherwise).
# Usage: cross-host.sh RDMA_WRITE SEND_RECV_PINGPONG
set -u
rdma_write=$1
pingpong=$2

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
	echo "skip: needs root and iproute2's ip"
	exit 77
fi

id=$(($$ % 250 + 1))
na=rvxa$$ nb=rvxb$$
ipa=10.216.$id.1 ipb=10.216.$id.2
port=$((20000 + $$ % 20000))
tmp=$(mktemp -d)
cleanup() {
	jobs -p | xargs -r kill 2>/dev/null
	ip netns del "$na" 2>/dev/null
	ip netns del "$nb" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

if ! { ip netns add "$na" && ip netns add "$nb" &&
	ip link add "rvxA$$" netns "$na" type veth peer name "rvxB$$" netns "$nb" &&
	ip -n "$na" addr add "$ipa/24" dev "rvxA$$" && ip -n "$na" link set "rvxA$$" up &&
	ip -n "$na" link set lo up &&
	ip -n "$nb" addr add "$ipb/24" dev "rvxB$$" && ip -n "$nb" link set "rvxB$$" up &&
	ip -n "$nb" link set lo up; }; then
	echo "skip: cannot create network namespaces here"
	exit 77
fi

passed=0 failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAILED: $1"; failed=$((failed + 1)); }

# Waits for "listening on port" in the server's output (10 s). Each server's
# output file is emptied by the script itself before the server starts: the
# redirection of a background job truncates in the child, maybe after
# wait_listening already found the previous server's line (a client that then
# connected before the new server listened was refused).
wait_listening() {
	for _ in $(seq 100); do
		grep -q "listening on port" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# 1 and 2: a server context on $1, the client on its own address.
write_across() {
	local server_addr=$1 what=$2 p=$3
	: >"$tmp/server.out"
	RVERBS_SOFT_LISTEN_ADDR=$server_addr timeout 30 ip netns exec "$na" "$rdma_write" server "$p" \
		>"$tmp/server.out" 2>&1 &
	local spid=$!
	if ! wait_listening "$tmp/server.out"; then
		bad "$what: the server did not start: $(cat "$tmp/server.out")"
		kill "$spid" 2>/dev/null
		return
	fi
	if ! RVERBS_SOFT_LISTEN_ADDR=$ipb timeout 30 ip netns exec "$nb" "$rdma_write" client "$ipa" "$p" \
		"across $what" >"$tmp/client.out" 2>&1; then
		bad "$what: the client failed: $(cat "$tmp/client.out")"
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		return
	fi
	wait "$spid"
	local st=$?
	if [ $st -eq 0 ] && grep -q "received by RDMA WRITE: \"across $what\"" "$tmp/server.out"; then
		ok "$what: the message arrived"
	else
		bad "$what: server exit $st: $(cat "$tmp/server.out")"
	fi
}

write_across "$ipa" "both on their addresses" "$port"
write_across 0.0.0.0 "server on 0.0.0.0" "$((port + 1))"

# 3: the server's soft0 context on loopback: refused at connect time, said why.
: >"$tmp/server.out"
timeout 30 ip netns exec "$na" env -u RVERBS_SOFT_LISTEN_ADDR "$rdma_write" server "$((port + 2))" \
	>"$tmp/server.out" 2>&1 &
spid=$!
if wait_listening "$tmp/server.out"; then
	RVERBS_SOFT_LISTEN_ADDR=$ipb timeout 30 ip netns exec "$nb" "$rdma_write" client "$ipa" "$((port + 2))" \
		"never" >"$tmp/client.out" 2>&1
	st=$?
	if [ $st -ne 0 ] && [ $st -ne 124 ] && grep -q "listen" "$tmp/client.out" &&
		! grep -q "received by RDMA WRITE" "$tmp/server.out"; then
		ok "server on loopback: the client is refused with the fix named"
	else
		bad "server on loopback: client exit $st: $(cat "$tmp/client.out")"
	fi
else
	bad "server on loopback: the server did not start: $(cat "$tmp/server.out")"
fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null

# 4: two-sided round trips across, checked byte for byte by the client.
: >"$tmp/server.out"
RVERBS_SOFT_LISTEN_ADDR=0.0.0.0 timeout 30 ip netns exec "$na" "$pingpong" -n 200 -s 4096 server "$((port + 3))" \
	>"$tmp/server.out" 2>&1 &
spid=$!
if wait_listening "$tmp/server.out" &&
	RVERBS_SOFT_LISTEN_ADDR=0.0.0.0 timeout 30 ip netns exec "$nb" "$pingpong" -n 200 -s 4096 client "$ipa" \
		"$((port + 3))" >"$tmp/client.out" 2>&1 && wait "$spid"; then
	ok "send-recv-pingpong: 200 round trips of 4 KiB"
else
	bad "send-recv-pingpong: $(cat "$tmp/client.out") / $(cat "$tmp/server.out")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
