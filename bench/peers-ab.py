#!/usr/bin/env python3
"""Same-host WRITE bandwidth of two rverbs builds and UCX put, interleaved.

Each round, for 4 KiB, 64 KiB and 1 MiB: rverbs build A and build B (their
order alternating by round), then UCX, with bench/peers.py's command lines
and N (`rverbs perf write bw -s SIZE -n N --json --loopback -d soft0 -t 128`,
`UCX_TLS=posix,cma,self ucx_perftest -t ucp_put_bw`). Prints the median
(min-max) of each, the bytes per second of client CPU of A and B (which the
run queue does not distort), and B's time on the run queue
(`runq_wait_client_s`, when B's rverbs reports it).

Usage: bench/peers-ab.py A/tools/rverbs B/tools/rverbs [ROUNDS] [--busy] [--json FILE]
--busy: one spinning process beside the whole set, as peers.py --contended.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

SIZES = (4096, 65536, 1 << 20)


def rverbs(tool, size, iters):
    cmd = [tool, "perf", "write", "bw", "-s", str(size), "-n", str(iters), "--json", "--loopback",
           "-p", str(peers.free_port()), "-d", "soft0", "-t", "128"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        return json.loads(out.stdout)["results"][0]
    except (ValueError, KeyError, IndexError, subprocess.TimeoutExpired):
        return None


def fmt(v):
    return f"{statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f})" if v else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("rounds", type=int, nargs="?", default=7)
    ap.add_argument("--busy", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    res = []
    load0 = os.getloadavg()[0]
    busy = peers.busy_process(None) if a.busy else None
    try:
        for rnd in range(a.rounds):
            for size in SIZES:
                iters = peers.bw_iterations(size, True)
                order = [("A", a.a), ("B", a.b)] if rnd % 2 == 0 else [("B", a.b), ("A", a.a)]
                for who, tool in order:
                    r = rverbs(tool, size, iters)
                    if r:
                        res.append(dict(round=rnd, size=size, who=who, bw=r["bw_avg_gbps"], wall=r["wall_s"],
                                        cpu=r["cpu_client_s"], rq=r.get("runq_wait_client_s"), iters=iters))
                u = peers.ucx(peers.BW, size, iters, True, False)
                if u:
                    res.append(dict(round=rnd, size=size, who="UCX", bw=u.value))
            print(f"round {rnd + 1}/{a.rounds} done", file=sys.stderr)
    finally:
        if busy:
            busy.kill()
            busy.wait()
    load1 = os.getloadavg()[0]
    print(f"{a.rounds} rounds{', one busy process' if busy else ''}; load {load0:.2f} before, {load1:.2f} after")
    print("| size | A | B | UCX put | A per CPU-s | B per CPU-s | B on the run queue (ms) |")
    print("|---|---|---|---|---|---|---|")
    for size in SIZES:
        cell = {w: [r["bw"] for r in res if r["size"] == size and r["who"] == w] for w in ("A", "B", "UCX")}
        per = {w: [r["iters"] * size * 8 / r["cpu"] / 1e9 for r in res
                   if r["size"] == size and r["who"] == w and r["cpu"] > 0] for w in ("A", "B")}
        rq = [1e3 * r["rq"] for r in res if r["size"] == size and r["who"] == "B" and r["rq"] is not None]
        print(f"| {size} | {fmt(cell['A'])} | {fmt(cell['B'])} | {fmt(cell['UCX'])} | {fmt(per['A'])} | "
              f"{fmt(per['B'])} | {fmt(rq)} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"loadavg": [load0, load1], "busy": a.busy, "runs": res}, f, indent=1)


if __name__ == "__main__":
    main()
