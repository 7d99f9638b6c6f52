#!/usr/bin/env python3
"""Runs one libibverbs program through `rverbs run` and checks that it exits 0
and prints a line matching a regex. Exit 77 when it is not installed.

usage: run-simple.py RVERBS_TOOL "PROGRAM ARGS" REGEX
"""
import re
import shutil
import subprocess
import sys

from sanitized import sanitized




def main():
    if sanitized():
        return 77
    tool, cmd, want = sys.argv[1], sys.argv[2].split(), sys.argv[3]
    if shutil.which(cmd[0]) is None:
        print(f"{cmd[0]} is not installed (Debian: ibverbs-utils)")
        return 77
    p = subprocess.run([tool, "run", "--"] + cmd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    print(p.stdout)
    if p.returncode != 0:
        print(f"FAIL: exited {p.returncode}")
        return 1
    if not re.search(want, p.stdout, re.M):
        print(f"FAIL: no line matching {want!r}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
