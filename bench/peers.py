#!/usr/bin/env python3
"""rverbs on soft0 against the transports a user would compare it with.

Side by side, in one run, on the same loopback: `rverbs perf` (soft0 over
TCP with RVERBS_SOFT_SHM=0, and on its same-host path) against UCX
(`ucx_perftest`, UCX_TLS=tcp or posix,cma), libfabric (`fi_pingpong`, tcp and
shm providers), qperf and sockperf (raw TCP). Rounds are interleaved (every
row and peer once per round, then again), each cell is the median over the
rounds, and each row ends with the ratio of rverbs to the best peer
(latency: rverbs / best, below 1 is ahead; bandwidth: rverbs / best, above 1
is ahead). Peers that are not installed are left out and named.

Usage: bench/peers.py [--rverbs build/tools/rverbs] [--rounds 5] [--quick]
                      [--rows lat,bw] [--json FILE]
Install the peers: apt-get install ucx-utils libfabric-bin qperf sockperf
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time

LAT, BW = "lat", "bw"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=5.0):
    end = time.time() + timeout
    while time.time() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


def pair(server, client, env=None, port=None, timeout=60):
    """Run a server, then the client against it; the client's stdout."""
    e = dict(os.environ, **(env or {}))
    srv = subprocess.Popen(server, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if port:
            wait_port(port)
        else:
            time.sleep(0.5)
        out = subprocess.run(client, env=e, capture_output=True, text=True, timeout=timeout)
        return out.stdout + out.stderr
    finally:
        srv.kill()
        srv.wait()


# ---- the measurements: each returns µs (latency) or Gb/s (bandwidth), or None

def rverbs(tool, mode, size, iters, shm, blocking):
    test = "send" if mode == LAT else "write"
    cmd = [tool, "perf", test, mode, "-s", str(size), "-n", str(iters), "--json", "--loopback",
           "-p", str(free_port())]
    if mode == BW:
        cmd += ["-t", "128"]
    if blocking:
        cmd += ["-e"]
    env = dict(os.environ, RVERBS_SOFT_SHM="1" if shm else "0", RVERBS_DEVICE="soft0")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    try:
        r = json.loads(out.stdout)["results"][0]
    except (ValueError, KeyError, IndexError):
        return None
    return r["t_typical_us"] if mode == LAT else r["bw_avg_gbps"]


def ucx(mode, size, iters, shm, blocking):
    port = free_port()
    test = "tag_lat" if mode == LAT else "ucp_put_bw"
    env = {"UCX_TLS": "posix,cma,self" if shm else "tcp,self", "UCX_WARN_UNUSED_ENV_VARS": "n"}
    extra = ["-E", "sleep"] if blocking else []
    out = pair(["ucx_perftest", "-p", str(port)] + extra,
               ["ucx_perftest", "127.0.0.1", "-p", str(port), "-t", test, "-s", str(size), "-n", str(iters)] + extra,
               env=env)  # no probe: ucx_perftest takes the first connection for its client
    m = re.search(r"^Final:\s+\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
    if not m:
        return None
    return float(m.group(1)) if mode == LAT else float(m.group(5)) * 8 * 1.048576 / 1000


def libfabric(mode, size, iters, shm, blocking):
    if mode != LAT or blocking:
        return None
    port = free_port()
    args = ["-p", "shm", "-e", "rdm"] if shm else ["-p", "tcp", "-e", "msg"]
    args += ["-S", str(size), "-I", str(iters)]
    out = pair(["fi_pingpong"] + args + ["-B", str(port)], ["fi_pingpong"] + args + ["-P", str(port), "127.0.0.1"])
    # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
    for line in out.splitlines():
        f = line.split()
        if len(f) == 8 and f[0] == str(size):
            return float(f[6])
    return None


def qperf(mode, size, iters, shm, blocking):
    if shm:
        return None
    port = free_port()
    test = "tcp_lat" if mode == LAT else "tcp_bw"
    out = pair(["qperf", "-lp", str(port)], ["qperf", "-lp", str(port), "127.0.0.1", "-m", str(size), "-t", "2", test],
               port=port)
    m = re.search(r"(latency|bw)\s*=\s*([\d.]+)\s*(\S+)", out)
    if not m:
        return None
    v, unit = float(m.group(2)), m.group(3)
    if mode == LAT:
        return v * {"ns": 1e-3, "us": 1, "ms": 1e3}.get(unit, 1)
    return v * 8 * {"KB/sec": 1e-6, "MB/sec": 1e-3, "GB/sec": 1}.get(unit, 1e-3)


def sockperf(mode, size, iters, shm, blocking):
    if shm or blocking:
        return None
    port = free_port()
    if mode == LAT:
        out = pair(["sockperf", "sr", "--tcp", "-p", str(port)],
                   ["sockperf", "pp", "--tcp", "-i", "127.0.0.1", "-p", str(port), "-m", str(size), "-t", "2"],
                   port=port)
        m = re.search(r"percentile 50\.000 =\s*([\d.]+)", out)
        return float(m.group(1)) if m else None
    out = pair(["sockperf", "sr", "--tcp", "-p", str(port)],
               ["sockperf", "tp", "--tcp", "-i", "127.0.0.1", "-p", str(port), "-m", str(size), "-t", "2"], port=port)
    m = re.search(r"BandWidth is ([\d.]+) MBps", out)
    return float(m.group(1)) * 8 * 1.048576 / 1000 if m else None


PEERS = {
    "UCX": (ucx, "ucx_perftest"),
    "libfabric": (libfabric, "fi_pingpong"),
    "qperf": (qperf, "qperf"),
    "sockperf": (sockperf, "sockperf"),
}

# (name, mode, size, same host, blocking)
ROWS = [
    ("64 B latency, TCP, busy-poll", LAT, 64, False, False),
    ("64 B latency, same host, busy-poll", LAT, 64, True, False),
    ("64 B latency, TCP, blocking", LAT, 64, False, True),
    ("64 B latency, same host, blocking", LAT, 64, True, True),
    ("4 KiB bandwidth, TCP", BW, 4096, False, False),
    ("4 KiB bandwidth, same host", BW, 4096, True, False),
    ("64 KiB bandwidth, TCP", BW, 65536, False, False),
    ("64 KiB bandwidth, same host", BW, 65536, True, False),
    ("1 MiB bandwidth, TCP", BW, 1 << 20, False, False),
    ("1 MiB bandwidth, same host", BW, 1 << 20, True, False),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rverbs", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "rverbs"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 rounds, fewer iterations (a smoke run)")
    ap.add_argument("--rows", default="lat,bw", help="lat, bw or both")
    ap.add_argument("--json", help="write the medians and ratios here")
    a = ap.parse_args()
    rounds = 2 if a.quick else a.rounds
    kinds = set(a.rows.split(","))
    rows = [r for r in ROWS if r[1] in kinds]
    peers = {n: f for n, (f, exe) in PEERS.items() if shutil.which(exe)}
    missing = [n for n, (_, exe) in PEERS.items() if not shutil.which(exe)]
    if not os.access(a.rverbs, os.X_OK):
        sys.exit(f"peers.py: no rverbs tool at {a.rverbs} (--rverbs)")
    cells = {(r[0], p): [] for r in rows for p in ["rverbs"] + list(peers)}
    for rnd in range(rounds):
        for name, mode, size, shm, blocking in rows:
            lat_iters = 2000 if a.quick else 10000
            bw_iters = max(200, (64 << 20) // size) if a.quick else max(1000, (512 << 20) // size)
            iters = lat_iters if mode == LAT else bw_iters
            v = rverbs(a.rverbs, mode, size, iters, shm, blocking)
            if v is not None:
                cells[(name, "rverbs")].append(v)
            for p, f in peers.items():
                try:
                    v = f(mode, size, iters, shm, blocking)
                except (subprocess.TimeoutExpired, OSError):
                    v = None
                if v is not None:
                    cells[(name, p)].append(v)
        print(f"round {rnd + 1}/{rounds} done", file=sys.stderr)

    unit = {LAT: "µs", BW: "Gb/s"}
    cols = ["rverbs"] + list(peers)
    print(f"| row | {' | '.join(cols)} | best peer | rverbs / best |")
    print("|---" * (len(cols) + 3) + "|")
    report = []
    for name, mode, size, shm, blocking in rows:
        med = {c: statistics.median(cells[(name, c)]) for c in cols if cells[(name, c)]}
        others = {c: v for c, v in med.items() if c != "rverbs"}
        best = (min if mode == LAT else max)(others, key=others.get) if others else None
        ratio = med["rverbs"] / others[best] if best and "rverbs" in med and others[best] else None
        cellstr = [f"{med[c]:.2f} {unit[mode]}" if c in med else "—" for c in cols]
        print(f"| {name} | {' | '.join(cellstr)} | {best or '—'} | "
              f"{f'{ratio:.2f}×' if ratio else '—'} |")
        report.append({"row": name, "mode": mode, "size": size, "same_host": shm, "blocking": blocking,
                       "unit": unit[mode], "medians": med, "samples": {c: cells[(name, c)] for c in cols},
                       "best_peer": best, "ratio": ratio})
    print(f"\n{rounds} interleaved rounds; latency is one-way (half the round trip, rverbs: "
          f"perf's typical), bandwidth one direction. Not installed: {', '.join(missing) or 'none'}.")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rounds": rounds, "missing": missing, "rows": report}, f, indent=1)


if __name__ == "__main__":
    main()
