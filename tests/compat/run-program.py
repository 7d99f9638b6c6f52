#!/usr/bin/env python3
"""Runs an unmodified libibverbs or librdmacm program through `rverbs run` on
soft0, as a server and a client on loopback, and checks both exit statuses
and a line of each one's output. Exit 77 (skip) when the program is not
installed.

The client starts once the server listens on its TCP port (read from
/proc/net/tcp), or for a program that listens on none (mckey) once its
READY test passes, so a slow start of the server is no failure.

usage: run-program.py RVERBS_TOOL CASE
"""
import re
import shutil
import socket
import subprocess
import sys
import time

from sanitized import sanitized

SOFT = ["-d", "soft0"]
HOST = "127.0.0.1"
UDADDY_PORT = 7174  # udaddy has no port option
# mckey's group: one of this run's own (239.200-249.x.y, from the clock), so
# that runs in parallel on one host do not hear each other.
_NS = time.time_ns() // 1000
MCKEY_GROUP = "239.%d.%d.%d" % (200 + _NS % 50, (_NS >> 8) % 256, 1 + (_NS >> 16) % 254)


def perftest(prog, extra, line):
    """perftest and the pingpongs: the same command, the client adds the host."""
    server = [prog] + SOFT + extra + ["-p", "{port}"]
    return (server, server + [HOST], line, line)


# case: (server argv, client argv, regex the server prints, regex the client prints)
CASES = {
    "ibv_rc_pingpong": perftest("ibv_rc_pingpong", [], r"\d+ bytes in [\d.]+ seconds"),
    "ibv_rc_pingpong-gid": perftest("ibv_rc_pingpong", ["-g", "0"], r"1000 iters in [\d.]+ seconds"),
    "ibv_rc_pingpong-events": perftest("ibv_rc_pingpong", ["-e"], r"1000 iters in [\d.]+ seconds"),
    "ibv_rc_pingpong-new_send": perftest("ibv_rc_pingpong", ["-N"], r"1000 iters in [\d.]+ seconds"),
    "ibv_uc_pingpong": perftest("ibv_uc_pingpong", [], r"\d+ bytes in [\d.]+ seconds"),
    "ibv_srq_pingpong": perftest("ibv_srq_pingpong", [], r"\d+ bytes in [\d.]+ seconds"),
    # A RoCE port refuses an AH without a GRH (rxe too): UD needs -g.
    "ibv_ud_pingpong": perftest("ibv_ud_pingpong", ["-g", "0"], r"\d+ bytes in [\d.]+ seconds"),
    "ib_write_bw": perftest("ib_write_bw", [], r"^\s*65536\s+5000\s+[\d.]+\s+[\d.]+"),
    "ib_read_bw": perftest("ib_read_bw", [], r"^\s*65536\s+1000\s+[\d.]+\s+[\d.]+"),
    "ib_send_lat": perftest("ib_send_lat", [], r"^\s*2\s+1000\s+[\d.]+"),
    "ib_atomic_bw": perftest("ib_atomic_bw", [], r"^\s*8\s+1000\s+[\d.]+\s+[\d.]+"),
    "ib_write_bw-rdma_cm": perftest("ib_write_bw", ["-R"], r"^\s*65536\s+5000\s+[\d.]+\s+[\d.]+"),
    "ib_read_bw-rdma_cm": perftest("ib_read_bw", ["-R"], r"^\s*65536\s+1000\s+[\d.]+\s+[\d.]+"),
    "ib_send_lat-rdma_cm": perftest("ib_send_lat", ["-R"], r"^\s*2\s+1000\s+[\d.]+"),
    "ib_atomic_bw-rdma_cm": perftest("ib_atomic_bw", ["-R"], r"^\s*8\s+1000\s+[\d.]+\s+[\d.]+"),
    "rping": (["rping", "-s", "-a", HOST, "-p", "{port}", "-C", "10", "-v"],
              ["rping", "-c", "-a", HOST, "-p", "{port}", "-C", "10", "-v"],
              r"^server ping data: rdma-ping-9: ", r"^ping data: rdma-ping-9: "),
    "ucmatose": (["ucmatose", "-p", "{port}", "-c", "2", "-C", "20"],
                 ["ucmatose", "-s", HOST, "-p", "{port}", "-c", "2", "-C", "20"],
                 r"^return status 0$", r"^return status 0$"),
    "udaddy": (["udaddy"], ["udaddy", "-s", HOST], r"^return status 0$", r"^return status 0$"),
    "rdma_server": (["rdma_server", "-p", "{port}"], ["rdma_client", "-s", HOST, "-p", "{port}"],
                    r"^rdma_server: end 0$", r"^rdma_client: end 0$"),
    # Multicast through rdma_cm: the receiver joins, the sender joins and sends
    # 10 datagrams to the group, which the receiver must all get.
    "mckey": (["mckey", "-m", MCKEY_GROUP, "-b", HOST], ["mckey", "-m", MCKEY_GROUP, "-b", HOST, "-s"],
              r"^data transfers complete$(.|\n)*^return status 0$",
              r"^data transfers complete$(.|\n)*^return status 0$"),
}



def udp_bound(addr, port):
    """True when some socket is bound to IPv4 `addr`, UDP `port` (soft0 binds
    a joined group's socket to the group and RoCEv2's port 4791)."""
    want = "%08X:%04X" % (int.from_bytes(socket.inet_aton(addr), "little"), port)
    try:
        with open("/proc/net/udp") as f:
            next(f)
            return any(line.split()[1] == want for line in f)
    except OSError:
        return False


def group_port_free(addr):
    """False where a socket holds UDP 4791 without SO_REUSEADDR (a kernel RoCE
    device): soft0 cannot join groups there (docs/ud.md, "Multicast")."""
    import errno

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((addr, 4791))
        except OSError as e:
            return e.errno != errno.EADDRINUSE
    return True


# Servers that listen on no TCP port: how to tell they are ready (the program
# prints through a pipe, fully buffered, so its output cannot tell).
READY = {"mckey": lambda: udp_bound(MCKEY_GROUP, 4791)}


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def listening(port):
    """True when some socket listens on TCP port `port` (state 0A)."""
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            continue
    return False




def main():
    if sanitized():
        return 77
    tool, case = sys.argv[1], sys.argv[2]
    server_argv, client_argv, want_server, want_client = CASES[case]
    missing = [p for p in {server_argv[0], client_argv[0]} if shutil.which(p) is None]
    if missing:
        print(f"not installed: {' '.join(missing)} (Debian: ibverbs-utils, perftest, rdmacm-utils)")
        return 77
    if case == "mckey" and not group_port_free(MCKEY_GROUP):
        print("skipped: UDP port 4791 is held without SO_REUSEADDR (a kernel RoCE device?): soft0 "
              "cannot join multicast groups on this host")
        return 77
    port = UDADDY_PORT if case == "udaddy" else free_port()
    fill = lambda argv: [a.replace("{port}", str(port)) for a in argv]
    server = subprocess.Popen([tool, "run", "--"] + fill(server_argv), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    ready = READY.get(case)
    while (ready is None and not listening(port) or ready is not None and not ready()) \
            and server.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        client = subprocess.run([tool, "run", "--"] + fill(client_argv), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=120)
        cout = client.stdout
        crc = client.returncode
    except subprocess.TimeoutExpired as e:
        cout = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        crc = "timeout"
    try:
        sout, _ = server.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        sout, _ = server.communicate()
    print("--- server\n" + sout + "--- client\n" + cout)
    ok = True
    for side, rc, out, want in (("server", server.returncode, sout, want_server),
                                ("client", crc, cout, want_client)):
        if rc != 0:
            print(f"FAIL: {side} exited {rc}")
            ok = False
        if not re.search(want, out, re.M):
            print(f"FAIL: {side} printed no line matching {want!r}")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
