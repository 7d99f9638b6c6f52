#!/usr/bin/env python3
"""Runs an unmodified libibverbs program through `rverbs run` on soft0, as a
server and a client on loopback, and checks both exit statuses and a line of
each one's output. Exit 77 (skip) when the program is not installed.

usage: run-program.py RVERBS_TOOL CASE
"""
import re
import shutil
import socket
import subprocess
import sys
import time

# case: (program, extra arguments, the regex both sides must print)
CASES = {
    "ibv_rc_pingpong": ("ibv_rc_pingpong", ["-d", "soft0"], r"\d+ bytes in [\d.]+ seconds"),
    "ibv_rc_pingpong-gid": ("ibv_rc_pingpong", ["-d", "soft0", "-g", "0"], r"\d+ iters in [\d.]+ seconds"),
    "ibv_rc_pingpong-events": ("ibv_rc_pingpong", ["-d", "soft0", "-e"], r"\d+ iters in [\d.]+ seconds"),
    "ibv_uc_pingpong": ("ibv_uc_pingpong", ["-d", "soft0"], r"\d+ bytes in [\d.]+ seconds"),
    "ibv_srq_pingpong": ("ibv_srq_pingpong", ["-d", "soft0"], r"\d+ bytes in [\d.]+ seconds"),
    "ibv_ud_pingpong": ("ibv_ud_pingpong", ["-d", "soft0"], r"\d+ bytes in [\d.]+ seconds"),
    "ib_write_bw": ("ib_write_bw", ["-d", "soft0"], r"^\s*65536\s+5000\s+[\d.]+\s+[\d.]+"),
    "ib_read_bw": ("ib_read_bw", ["-d", "soft0"], r"^\s*65536\s+1000\s+[\d.]+\s+[\d.]+"),
    "ib_send_lat": ("ib_send_lat", ["-d", "soft0"], r"^\s*2\s+1000\s+[\d.]+"),
    "ib_atomic_bw": ("ib_atomic_bw", ["-d", "soft0"], r"^\s*8\s+1000\s+[\d.]+\s+[\d.]+"),
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    tool, case = sys.argv[1], sys.argv[2]
    prog, args, want = CASES[case]
    if shutil.which(prog) is None:
        print(f"{prog} is not installed (Debian: ibverbs-utils, perftest)")
        return 77
    port = str(free_port())
    base = [tool, "run", "--", prog] + args + ["-p", port]
    server = subprocess.Popen(base, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # The client retries while the server's out-of-band listener comes up.
    client = None
    for _ in range(50):
        time.sleep(0.2)
        client = subprocess.run(base + ["127.0.0.1"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=120)
        if client.returncode == 0 or "connect" not in client.stdout.lower():
            break
    try:
        sout, _ = server.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        server.kill()
        sout, _ = server.communicate()
    print("--- server\n" + sout + "--- client\n" + client.stdout)
    ok = True
    for side, rc, out in (("server", server.returncode, sout), ("client", client.returncode, client.stdout)):
        if rc != 0:
            print(f"FAIL: {side} exited {rc}")
            ok = False
        if not re.search(want, out, re.M):
            print(f"FAIL: {side} printed no line matching {want!r}")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
