#!/usr/bin/env python3
"""rverbs on soft0 against the transports a user would compare it with.

Side by side, in one run, on the same loopback: `rverbs perf` (soft0 over
TCP with --tcp-only, and on its same-host path) against UCX
(`ucx_perftest`, UCX_TLS=tcp or posix,cma), libfabric (`fi_pingpong`, tcp and
shm providers), qperf and sockperf (raw TCP). Rounds are interleaved (every
row and peer once per round, then again), each cell is the median over the
rounds, with the minimum and maximum beside it, and each row ends with the
ratio of rverbs to the best peer (latency: rverbs / best, below 1 is ahead;
bandwidth: rverbs / best, above 1 is ahead). CPU per side is each process's
user + system time in percent of one core (rverbs: its own figures over the
run; peers: getrusage of the server and of the client through wait4, over
the client's wall time). Peers that are not installed are left out and named.

--contended adds one busy process (a spinning loop) for the whole run, as
"other work on the machine"; unpinned by default (the scheduler places it,
as it would a build), --pin CPU pins it to one CPU.

Usage: bench/peers.py [--rverbs build/tools/rverbs] [--rounds 5] [--quick]
                      [--rows lat,bw] [--json FILE] [--contended [--pin CPU]]
                      [--peers all|none|UCX,libfabric,qperf,sockperf]
Install the peers: scripts/install-deps ucx-utils libfabric-bin qperf sockperf
"""
import argparse
import json
import os
import re
import resource
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


def children_cpu():
    """CPU seconds of the children reaped so far (getrusage RUSAGE_CHILDREN)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class Run:
    """What one measurement gives: the figure and each side's CPU (% of a core)."""

    def __init__(self, value, cpu_client=None, cpu_server=None):
        self.value, self.cpu_client, self.cpu_server = value, cpu_client, cpu_server


def pair(server, client, env=None, port=None, timeout=60):
    """Run a server, then the client against it: (client's output, client CPU %,
    server CPU %). CPU is what each process used (all its threads), from the
    rusage of its reaping, over the client's wall time; children are reaped
    one at a time, so the two differences split cleanly."""
    e = dict(os.environ, **(env or {}))
    srv = subprocess.Popen(server, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if port:
            wait_port(port)
        else:
            time.sleep(0.5)
        c0, t0 = children_cpu(), time.monotonic()
        try:
            p = subprocess.run(client, env=e, capture_output=True, text=True, timeout=timeout)
            out = p.stdout + p.stderr
        except subprocess.TimeoutExpired:
            out = ""
        wall = time.monotonic() - t0
        c1 = children_cpu()
    finally:
        try:
            srv.wait(timeout=0.2)  # servers that end with their client
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
    c2 = children_cpu()
    if wall <= 0:
        return out, None, None
    return out, 100 * (c1 - c0) / wall, 100 * (c2 - c1) / wall


# ---- the measurements: each returns a Run (µs for latency, Gb/s for
# bandwidth) or None

def bw_iterations(size, shm, quick=False):
    """A bandwidth run's N, the same for every tool: 512 MiB over TCP, 8 GiB
    on the same host (about 0.1 s at 600 Gb/s; a 512 MiB same-host run took
    6-9 ms, and one preemption by a 4 ms tick halved its figure: bench/README)."""
    if quick:
        return max(200, (64 << 20) // size)
    return max(1000, ((8 << 30) if shm else (512 << 20)) // size)


def rverbs(tool, mode, size, iters, shm, blocking):
    test = "send" if mode == LAT else "write"
    cmd = [tool, "perf", test, mode, "-s", str(size), "-n", str(iters), "--json", "--loopback",
           "-p", str(free_port()), "-d", "soft0"]
    if mode == BW:
        cmd += ["-t", "128"]
    if blocking:
        cmd += ["-e"]
    if not shm:
        cmd += ["--tcp-only"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        r = json.loads(out.stdout)["results"][0]
    except (ValueError, KeyError, IndexError, subprocess.TimeoutExpired):
        return None
    wall = r["wall_s"]
    return Run(r["t_typical_us"] if mode == LAT else r["bw_avg_gbps"],
               100 * r["cpu_client_s"] / wall if wall else None, 100 * r["cpu_server_s"] / wall if wall else None)


def ucx(mode, size, iters, shm, blocking):
    port = free_port()
    test = "tag_lat" if mode == LAT else "ucp_put_bw"
    env = {"UCX_TLS": "posix,cma,self" if shm else "tcp,self", "UCX_WARN_UNUSED_ENV_VARS": "n"}
    extra = ["-E", "sleep"] if blocking else []
    out, cc, cs = pair(["ucx_perftest", "-p", str(port)] + extra,
                       ["ucx_perftest", "127.0.0.1", "-p", str(port), "-t", test, "-s", str(size), "-n", str(iters)]
                       + extra, env=env)  # no probe: ucx_perftest takes the first connection for its client
    m = re.search(r"^Final:\s+\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
    if not m:
        return None
    return Run(float(m.group(1)) if mode == LAT else float(m.group(5)) * 8 * 1.048576 / 1000, cc, cs)


def libfabric(mode, size, iters, shm, blocking):
    if mode != LAT or blocking:
        return None
    port = free_port()
    args = ["-p", "shm", "-e", "rdm"] if shm else ["-p", "tcp", "-e", "msg"]
    args += ["-S", str(size), "-I", str(iters)]
    out, cc, cs = pair(["fi_pingpong"] + args + ["-B", str(port)],
                       ["fi_pingpong"] + args + ["-P", str(port), "127.0.0.1"])
    # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
    for line in out.splitlines():
        f = line.split()
        if len(f) == 8 and f[0] == str(size):
            return Run(float(f[6]), cc, cs)
    return None


def qperf(mode, size, iters, shm, blocking):
    if shm:
        return None
    port = free_port()
    test = "tcp_lat" if mode == LAT else "tcp_bw"
    out, cc, cs = pair(["qperf", "-lp", str(port)],
                       ["qperf", "-lp", str(port), "127.0.0.1", "-m", str(size), "-t", "2", test], port=port)
    m = re.search(r"(latency|bw)\s*=\s*([\d.]+)\s*(\S+)", out)
    if not m:
        return None
    v, unit = float(m.group(2)), m.group(3)
    if mode == LAT:
        return Run(v * {"ns": 1e-3, "us": 1, "ms": 1e3}.get(unit, 1), cc, cs)
    return Run(v * 8 * {"KB/sec": 1e-6, "MB/sec": 1e-3, "GB/sec": 1}.get(unit, 1e-3), cc, cs)


def sockperf(mode, size, iters, shm, blocking):
    if shm or blocking:
        return None
    port = free_port()
    what = ["pp"] if mode == LAT else ["tp"]
    out, cc, cs = pair(["sockperf", "sr", "--tcp", "-p", str(port)],
                       ["sockperf"] + what + ["--tcp", "-i", "127.0.0.1", "-p", str(port), "-m", str(size), "-t", "2"],
                       port=port)
    if mode == LAT:
        m = re.search(r"percentile 50\.000 =\s*([\d.]+)", out)
        return Run(float(m.group(1)), cc, cs) if m else None
    m = re.search(r"BandWidth is ([\d.]+) MBps", out)
    return Run(float(m.group(1)) * 8 * 1.048576 / 1000, cc, cs) if m else None


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


def busy_process(pin):
    """One process that spins for the whole run: the "other work" of --contended."""
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    if pin is not None:
        os.sched_setaffinity(p.pid, {pin})
    return p


def spread(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def tree_commit(tool):
    """The commit of the source tree the tool was built from (`git describe
    --always --dirty` where the tool's build directory sits), so a table
    names what it measured; "unknown" outside a git tree."""
    here = os.path.dirname(os.path.abspath(tool))
    try:
        out = subprocess.run(["git", "-C", here, "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rverbs", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "rverbs"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 rounds, fewer iterations (a smoke run)")
    ap.add_argument("--rows", default="lat,bw", help="lat, bw or both")
    ap.add_argument("--json", help="write the medians, min-max, CPU and ratios here")
    ap.add_argument("--contended", action="store_true", help="one busy process beside the run")
    ap.add_argument("--pin", type=int, help="--contended: pin the busy process to this CPU (default: unpinned)")
    ap.add_argument("--peers", default="all",
                    help="comma-separated peers to run (UCX, libfabric, qperf, sockperf), 'all' or 'none'")
    a = ap.parse_args()
    rounds = 2 if a.quick else a.rounds
    kinds = set(a.rows.split(","))
    rows = [r for r in ROWS if r[1] in kinds]
    wanted = set(PEERS) if a.peers == "all" else set() if a.peers == "none" else set(a.peers.split(","))
    if wanted - set(PEERS):
        sys.exit(f"peers.py: unknown peer(s) {', '.join(sorted(wanted - set(PEERS)))} (--peers)")
    peers = {n: f for n, (f, exe) in PEERS.items() if n in wanted and shutil.which(exe)}
    missing = [n for n, (_, exe) in PEERS.items() if n in wanted and not shutil.which(exe)]
    if not os.access(a.rverbs, os.X_OK):
        sys.exit(f"peers.py: no rverbs tool at {a.rverbs} (--rverbs)")
    cells = {(r[0], p): [] for r in rows for p in ["rverbs"] + list(peers)}
    load0 = os.getloadavg()[0]
    busy = busy_process(a.pin) if a.contended else None
    try:
        for rnd in range(rounds):
            for name, mode, size, shm, blocking in rows:
                lat_iters = 2000 if a.quick else 10000
                iters = lat_iters if mode == LAT else bw_iterations(size, shm, a.quick)
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
    finally:
        if busy:
            busy.kill()
            busy.wait()
    load1 = os.getloadavg()[0]
    commit = tree_commit(a.rverbs)

    unit = {LAT: "µs", BW: "Gb/s"}
    cols = ["rverbs"] + list(peers)
    print(f"| row | {' | '.join(cols)} | best peer | rverbs / best |")
    print("|---" * (len(cols) + 3) + "|")
    report = []
    for name, mode, size, shm, blocking in rows:
        got = {c: [r.value for r in cells[(name, c)]] for c in cols if cells[(name, c)]}
        med = {c: statistics.median(v) for c, v in got.items()}
        others = {c: v for c, v in med.items() if c != "rverbs"}
        best = (min if mode == LAT else max)(others, key=others.get) if others else None
        ratio = med["rverbs"] / others[best] if best and "rverbs" in med and others[best] else None
        cellstr = [f"{med[c]:.2f} ({min(got[c]):.2f}–{max(got[c]):.2f})" if c in med else "—" for c in cols]
        print(f"| {name} ({unit[mode]}) | {' | '.join(cellstr)} | {best or '—'} | "
              f"{f'{ratio:.2f}×' if ratio else '—'} |")
        cols_json = {}
        for c in cols:
            runs = cells[(name, c)]
            if not runs:
                continue
            cc = [r.cpu_client for r in runs if r.cpu_client is not None]
            cs = [r.cpu_server for r in runs if r.cpu_server is not None]
            cols_json[c] = dict(spread([r.value for r in runs]), samples=[r.value for r in runs],
                                cpu_client_pct=spread(cc) if cc else None, cpu_server_pct=spread(cs) if cs else None)
        report.append({"row": name, "mode": mode, "size": size, "same_host": shm, "blocking": blocking,
                       "unit": unit[mode], "columns": cols_json, "best_peer": best, "ratio": ratio})
    print("\nCPU per side, client / server, % of one core (medians):\n")
    print(f"| row | {' | '.join(cols)} |")
    print("|---" * (len(cols) + 1) + "|")
    for r in report:
        cpu = []
        for c in cols:
            j = r["columns"].get(c)
            if not j or not j["cpu_client_pct"] or not j["cpu_server_pct"]:
                cpu.append("—")
            else:
                cpu.append(f"{j['cpu_client_pct']['median']:.0f} / {j['cpu_server_pct']['median']:.0f}")
        print(f"| {r['row']} | {' | '.join(cpu)} |")
    print(f"\n{rounds} interleaved rounds, median (min–max); latency is one-way (half the round trip; "
          f"rverbs: perf's typical), bandwidth one direction. "
          f"{'One busy process beside the run (' + ('pinned to CPU %d' % a.pin if a.pin is not None else 'unpinned') + '). ' if a.contended else ''}"
          f"Load average {load0:.2f} before, {load1:.2f} after, {os.cpu_count()} CPUs. "
          f"rverbs at {commit}. Not installed: {', '.join(missing) or 'none'}.")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rounds": rounds, "contended": a.contended, "pin": a.pin, "loadavg": [load0, load1],
                       "commit": commit, "cpus": os.cpu_count(),
                       "missing": missing, "rows": report}, f, indent=1)


if __name__ == "__main__":
    main()
