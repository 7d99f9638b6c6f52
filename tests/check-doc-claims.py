#!/usr/bin/python3
"""Docs that cannot drift (issue 17): no sentence of the docs says that a
feature rverbs implements is "not implemented", "not yet", "-EOPNOTSUPP" ...

The features and which driver implements each come from one table,
docs/capabilities.json. The test fails
  - when a sentence (a table row, a sentence of a paragraph, a line of a
    Python docstring) names a feature the table marks implemented, together
    with a phrase that says it is missing, and none of the feature's
    qualifiers (the cases that really are refused);
  - when the table disagrees with the device: each 'soft0_cap' expression is
    evaluated on `rverbs info -v --json -d soft0`.

The driver a sentence speaks about: the file's (lib/drivers/ibv/README.md,
the soft0 pages), else soft0 if the sentence names it, else the libibverbs
driver if it names that, else rverbs as a whole (implemented by either).

usage: check-doc-claims.py SOURCE_ROOT RVERBS_TOOL
"""
import glob
import json
import os
import re
import subprocess
import sys

MISSING = re.compile(r"not implemented|not implement|not yet|not offered|EOPNOTSUPP|not supported|unsupported|"
                     r"not honou?red|not available|has no functions|are not read|"
                     r"no completion channel|cannot be sent|no driver object", re.I)
# "not yet" in the sense of time, not of a missing feature.
BENIGN = re.compile(r"not yet (known|consumed|confirmed|complete|acknowledged|posted|polled)", re.I)

DEVICE_OF_FILE = {
    "lib/drivers/ibv/README.md": "ibv",
    "lib/drivers/soft/README.md": "soft0",
    "docs/software-device.md": "soft0",
}


def files(root):
    pats = ["README.md", "docs/*.md", "bindings/README.md", "lib/drivers/*/README.md",
            "tools/README.md", "bindings/python/rverbs/*.py"]
    for p in pats:
        for f in sorted(glob.glob(os.path.join(root, p))):
            yield os.path.relpath(f, root), f


def units(text):
    """(line number, text) of each table row and each sentence of a paragraph."""
    lines = text.split("\n")
    para, start = [], 0
    for i, line in enumerate(lines + [""], 1):
        s = line.strip()
        if s.startswith("|"):
            yield from sentences(para, start)
            para = []
            yield i, s
            continue
        if not s or s.startswith("#") or s.startswith("```") or s.startswith('"""'):
            yield from sentences(para, start)
            para = []
            continue
        if not para:
            start = i
        para.append(s)
    yield from sentences(para, start)


def sentences(para, start):
    if not para:
        return
    text = " ".join(para)
    for s in re.split(r"(?<=[.;!?])\s+(?=[A-Z`(\-*])", text):
        yield start, s


def device_of(rel, unit):
    if rel in DEVICE_OF_FILE:
        return DEVICE_OF_FILE[rel]
    if "soft0" in unit:
        return "soft0"
    if re.search(r"libibverbs driver|on hardware|rxe|NIC", unit):
        return "ibv"
    return "any"


def implemented(feature, device):
    if device == "any":
        return feature["soft0"] or feature["ibv"]
    return feature[device]


def check_docs(root, table):
    bad = []
    # An acronym (SRQ, MW, SQD) matches in capitals only, other words in any case.
    compiled = [(f, re.compile("|".join(("(?:%s)" if re.sub(r"\\b", "", w).isupper() else "(?i:%s)") % w
                                        for w in f["words"])))
                for f in table["features"]]
    for rel, path in files(root):
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        for line, unit in units(text):
            probe = BENIGN.sub("", unit)
            if not MISSING.search(probe):
                continue
            dev = device_of(rel, unit)
            for feature, words in compiled:
                if not words.search(probe) or not implemented(feature, dev):
                    continue
                if any(q.lower() in unit.lower() for q in feature.get("qualifiers", [])):
                    continue
                bad.append("%s:%d: says %s (%s) is missing, which the capability table says %s "
                           "implements: \"%s\"" % (rel, line, feature["name"], MISSING.search(probe).group(0),
                                                   "rverbs" if dev == "any" else dev, unit[:200]))
    return bad


def check_device(tool, table):
    out = subprocess.run([tool, "info", "-v", "--json", "-d", "soft0"], check=True, capture_output=True,
                         text=True).stdout
    dev = json.loads(out)["devices"][0]
    bad = []
    for f in table["features"]:
        expr = f.get("soft0_cap")
        if not expr:
            continue
        has = bool(eval(expr, {"__builtins__": {}}, dev))  # the table's own expressions
        if has != f["soft0"]:
            bad.append("docs/capabilities.json: %s is %s on soft0, but the device says %s (%s)"
                       % (f["name"], "implemented" if f["soft0"] else "not implemented",
                          "yes" if has else "no", expr))
    return bad


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    root, tool = sys.argv[1], sys.argv[2]
    with open(os.path.join(root, "docs/capabilities.json"), encoding="utf-8") as fh:
        table = json.load(fh)
    bad = check_device(tool, table) + check_docs(root, table)
    for b in bad:
        print(b)
    print("%d contradiction(s) between the docs, docs/capabilities.json and soft0" % len(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
