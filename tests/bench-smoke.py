#!/usr/bin/python3
"""Smoke test of a benchmark: it runs, exits 0 and prints JSON with rows.

No thresholds: the figures are not checked, only that they exist.
Usage: bench-smoke.py PROGRAM [ARGS...]
"""
import json
import subprocess
import sys

out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, timeout=240, check=False)
text = out.stdout.decode()
print(text)
if out.returncode != 0:
    sys.exit(f"{sys.argv[1]} exited with {out.returncode}")
doc = json.loads(text)
assert doc["ok"] is True, doc
assert doc["rows"], "no rows"
for row in doc["rows"]:
    assert "cpu_client_pct" in row and "cpu_server_pct" in row, row
    assert row.get("value") is not None or row.get("msgs_per_s") is not None, row
