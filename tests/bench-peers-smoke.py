#!/usr/bin/python3
"""Smoke test of bench/peers.py: one quick pass of the latency rows, rverbs only
(--peers none, so the run does not depend on which peers are installed).

No thresholds: the figures are not checked, only that every row has rverbs'
samples, the CPU of both sides and the commit measured.
Usage: bench-peers-smoke.py PEERS_PY RVERBS_TOOL
"""
import json
import os
import subprocess
import sys
import tempfile

peers_py, tool = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as d:
    out_json = os.path.join(d, "peers.json")
    out = subprocess.run([sys.executable, peers_py, "--rverbs", tool, "--quick", "--rows", "lat", "--peers", "none",
                          "--json", out_json], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=280,
                         check=False)
    print(out.stdout.decode())
    if out.returncode != 0:
        sys.exit(f"peers.py exited with {out.returncode}")
    with open(out_json) as f:
        doc = json.load(f)
assert doc["commit"], doc
assert doc["rounds"] == 2, doc["rounds"]
rows = doc["rows"]
assert [r["mode"] for r in rows] == ["lat"] * 4, [r["row"] for r in rows]
for r in rows:
    col = r["columns"].get("rverbs")
    assert col, f"no rverbs figures for {r['row']}"
    assert len(col["samples"]) == 2 and all(v > 0 for v in col["samples"]), col
    assert col["cpu_client_pct"] and col["cpu_server_pct"], col
    assert r["best_peer"] is None and r["ratio"] is None, r
print("bench-peers: 4 latency rows, rverbs only, JSON complete")
