#!/usr/bin/env python3
"""Compile, and run where marked, every marked code snippet of the guides.

A fenced block in docs/*.md whose first line is a marker is a test:

    ```c
    /* docs-test: run */        compile, link against librverbs and run (exit 0)
    /* docs-test: link */       compile and link only (needs hardware, arguments, ...)
    /* docs-test: compile */    compile only (-c): functions without a main
    ```python
    # docs-test: run            run with the Python binding on soft0

Unmarked blocks (shell commands, output, diagrams) are not tests. A guide with
no marked block is fine; a marker with an unknown mode fails.

usage: check-snippets.py --cc CC... --include DIR... --lib LIBRVERBS
                         [--cflags FLAG...] [--pythonpath P] --out DIR GUIDE.md...
Exit 0 when every snippet passed, 1 otherwise.
"""
import argparse
import os
import re
import subprocess
import sys

FENCE = re.compile(r"^```(\w+)\s*$")
MARK = {"c": re.compile(r"^\s*/\* docs-test: (\w+) \*/\s*$"),
        "python": re.compile(r"^\s*# docs-test: (\w+)\s*$")}
MODES = {"c": ("run", "link", "compile"), "python": ("run",)}


def snippets(path):
    """(lang, mode, first line number, text) of each marked block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i].strip())
        if not m:
            i += 1
            continue
        lang, start, body = m.group(1), i + 1, []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        i += 1
        mark = MARK.get(lang)
        mm = mark.match(body[0]) if mark and body else None
        if mm:
            yield lang, mm.group(1), start + 1, "\n".join(body) + "\n"


def run(cmd, env=None, timeout=120):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       env=env, timeout=timeout, text=True)
    return p.returncode, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", nargs="+", required=True)
    ap.add_argument("--include", nargs="+", default=[])
    ap.add_argument("--cflags", nargs="*", default=[], help="extra compiler flags (e.g. -fsanitize=...)")
    ap.add_argument("--lib", required=True)
    ap.add_argument("--pythonpath")
    ap.add_argument("--out", required=True)
    ap.add_argument("guides", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    libdir = os.path.dirname(os.path.abspath(a.lib))
    env = dict(os.environ, RVERBS_DEVICE="soft0", RVERBS_LIBRARY=os.path.abspath(a.lib),
               LD_LIBRARY_PATH=libdir + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
    if a.pythonpath:
        env["PYTHONPATH"] = a.pythonpath
    failed = 0
    count = {}
    # The Python snippets need the binding (cffi, and its generated _cdef.py).
    # A sanitized library cannot be loaded into an uninstrumented interpreter.
    if any(f.startswith("-fsanitize") for f in a.cflags):
        python_ok = False
        print("python snippets skipped: the library is built with sanitizers")
    else:
        rc, out = run([sys.executable, "-c", "import rverbs"], env=env)
        python_ok = rc == 0
        if not python_ok:
            print("python snippets skipped: `import rverbs` failed: " + out.strip().split("\n")[-1])
    for guide in a.guides:
        base = os.path.splitext(os.path.basename(guide))[0]
        for lang, mode, line, text in snippets(guide):
            name = "%s-%d" % (base, line)
            where = "%s:%d" % (os.path.basename(guide), line)
            if mode not in MODES.get(lang, ()):
                print("FAIL %s: unknown docs-test mode %r for %s" % (where, mode, lang))
                failed += 1
                continue
            if lang == "python" and not python_ok:
                count[("python", "skipped")] = count.get(("python", "skipped"), 0) + 1
                continue
            if lang == "python":
                src = os.path.join(a.out, name + ".py")
                open(src, "w").write(text)
                rc, out = run([sys.executable, src], env=env)
            else:
                src = os.path.join(a.out, name + ".c")
                # #line makes compiler messages point into the guide.
                open(src, "w").write('#line %d "%s"\n%s' % (line, os.path.abspath(guide), text))
                flags = ["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror"] + a.cflags
                flags += ["-I" + d for d in a.include]
                if mode == "compile":
                    cmd = a.cc + flags + ["-c", src, "-o", os.path.join(a.out, name + ".o")]
                else:
                    cmd = a.cc + flags + [src, "-o", os.path.join(a.out, name), a.lib,
                                          "-Wl,-rpath," + libdir, "-lpthread"]
                rc, out = run(cmd)
                if rc == 0 and mode == "run":
                    rc, out = run([os.path.join(a.out, name)], env=env)
            count[(lang, mode)] = count.get((lang, mode), 0) + 1
            print("%s %s (%s %s)" % ("ok  " if rc == 0 else "FAIL", where, lang, mode))
            if rc != 0:
                failed += 1
                print("    " + out.replace("\n", "\n    "))
    print("snippets: " + ", ".join("%d %s %s" % (n, l, m) for (l, m), n in sorted(count.items())))
    if not count:
        print("no marked snippet found")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
