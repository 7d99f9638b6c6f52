#!/usr/bin/env python3
"""The compatibility layer's cost on soft0: perftest through `rverbs run`
against `rverbs perf` (the same test on rverbs' own API), in one run.

For each case (ib_write_bw / `rverbs perf write bw`, ib_send_lat /
`rverbs perf send lat`, and ib_read_bw / `rverbs perf read bw`) and size, the
two programs run in turn, interleaved, --reps times each (server and client
as two processes on loopback, the same iterations, queue depths and CQ
moderation as perftest's defaults), and the table gives each one's median
and the layer's overhead (bandwidth lost, latency added). Nothing here is a
pass/fail threshold: it is a measurement (bench/README.md).

usage: compat-vs-perf.py RVERBS_TOOL [--reps N] [--iters N] [--sizes A,B,...] [--json]
Exit 77 when perftest is not installed.
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

HOST = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def listening(port):
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


def perftest(tool, prog, size, iters, timeout=120):
    """One perftest run through the layer; its client's result row (list of floats)."""
    port = free_port()
    base = [tool, "run", "--", prog, "-d", "soft0", "-s", str(size), "-n", str(iters), "-p", str(port)]
    server = subprocess.Popen(base, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    end = time.time() + 20
    while not listening(port) and time.time() < end and server.poll() is None:
        time.sleep(0.02)
    try:
        client = subprocess.run(base + [HOST], capture_output=True, text=True, timeout=timeout)
        server.wait(timeout=timeout)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    if client.returncode != 0:
        raise RuntimeError(f"{prog} client failed: {client.stdout}{client.stderr}")
    for line in client.stdout.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] == str(size) and f[1] == str(iters):
            return [float(x) for x in f[2:]]
    raise RuntimeError(f"no result row in {prog}'s output:\n{client.stdout}")


def rverbs_perf(tool, test, mode, size, iters, timeout=120):
    argv = [tool, "perf", test, mode, "--loopback", "-s", str(size), "-n", str(iters), "--json"]
    if mode == "lat":
        argv += ["-Q", "1"]  # ib_*_lat signals every send
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"rverbs perf failed: {p.stdout}{p.stderr}")
    return json.loads(p.stdout)["results"][0]


# case: (perftest program, rverbs perf test, mode, default sizes)
CASES = [
    ("ib_write_bw", "write", "bw", [4096, 65536]),
    ("ib_read_bw", "read", "bw", [65536]),
    ("ib_send_lat", "send", "lat", [2, 4096]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tool")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--iters", type=int, default=0, help="iterations (default: 5000 bw, 1000 lat)")
    ap.add_argument("--sizes", default="", help="comma-separated sizes for every case")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if not all(shutil.which(c[0]) for c in CASES):
        print("SKIP: perftest is not installed")
        return 77
    rows = []
    for prog, test, mode, sizes in CASES:
        if a.sizes:
            sizes = [int(s) for s in a.sizes.split(",")]
        iters = a.iters or (5000 if mode == "bw" else 1000)
        for size in sizes:
            layer, own = [], []
            for _ in range(a.reps):  # interleaved: both see the same machine
                r = perftest(a.tool, prog, size, iters)
                # bw rows: BW peak, BW average [MB/s], msg rate; lat rows:
                # t_min, t_max, t_typical, t_avg ... [us]
                layer.append(r[1] if mode == "bw" else r[2])
                o = rverbs_perf(a.tool, test, mode, size, iters)
                own.append(o["bw_avg_MBps"] if mode == "bw" else o["t_typical_us"])
            ml, mo = statistics.median(layer), statistics.median(own)
            if mode == "bw":
                overhead = (mo - ml) / mo * 100 if mo else 0.0
            else:
                overhead = ml - mo
            rows.append({"case": f"{prog} vs rverbs perf {test} {mode}", "bytes": size, "iters": iters,
                         "unit": "MB/s" if mode == "bw" else "us (typical)",
                         "layer_median": ml, "rverbs_median": mo,
                         "layer_all": layer, "rverbs_all": own,
                         "overhead": overhead,
                         "overhead_unit": "% bandwidth lost" if mode == "bw" else "us added"})
    if a.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(f"{'case':40} {'bytes':>7} {'unit':>13} {'layer':>10} {'rverbs':>10}  overhead")
    for r in rows:
        print(f"{r['case']:40} {r['bytes']:>7} {r['unit']:>13} {r['layer_median']:>10.2f} "
              f"{r['rverbs_median']:>10.2f}  {r['overhead']:+.2f} {r['overhead_unit']}")
    print(f"(medians of {a.reps} interleaved runs each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
