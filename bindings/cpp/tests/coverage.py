#!/usr/bin/python3
"""The C++ binding covers the C API: every function of lib/rverbs.sym is
called by rverbs.hpp or listed in NOT_WRAPPED with the reason, and the
builders cover what the C API lets a program set by name (the mask bits of
the connection helper's and the context's attributes, the auth secret
among them) and every work-request opcode.

rv_X_ref, rv_X_unref and rv_X_close are reached through
RVERBS_HPP_TRAITS(rv_X, X), which this test expands. Comments do not count:
a function only mentioned in a comment is not wrapped.

usage: coverage.py RVERBS_SYM RVERBS_HPP INCLUDE_DIR
"""
import re
import sys

# Functions with no C++ counterpart, and why. A function listed here that the
# header starts to call, or that the library no longer exports, fails the test.
NOT_WRAPPED = {
    "rv_context_ibv": "the escape hatch (rverbs/ibv.h) returns libibverbs objects and needs "
                      "<infiniband/verbs.h>, which rverbs.hpp does not include: call it on get()",
    "rv_pd_ibv": "idem (escape hatch)",
    "rv_mr_ibv": "idem (escape hatch)",
    "rv_cq_ibv": "idem (escape hatch)",
    "rv_qp_ibv": "idem (escape hatch)",
}

# Enumerations every enumerator of which the header must use.
COVERED_ENUMS = {
    "rv_context_attr_mask": "context_options (listen address, soft flags, auth secret)",
    "rv_conn_attr_mask": "conn_options (the connection helper's attributes)",
    "rv_listener_attr_mask": "listener_options",
    "rv_cq_attr_mask": "cq::create with a channel (the rest through rv_cq_attr)",
    "rv_wr_opcode": "the work-request builders (rverbs::wr) and qp::bind_mw",
}
# ... except these, and why.
NOT_BUILT = {
    "RV_CQ_ATTR_COMP_VECTOR": "set through rv_cq_attr and cq::create(ctx, &attr): one field, "
                              "no builder needed",
    "RV_WR_BIND_MW": "posted by qp::bind_mw (rv_qp_bind_mw), not as an rv_send_wr",
}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def main(sym_path, hpp_path, include_dir):
    exported = re.findall(r"^\s*(rv_\w+)\s*;", open(sym_path).read(), flags=re.M)
    if len(exported) < 100:
        sys.exit("coverage: only %d functions read from %s" % (len(exported), sym_path))
    code = strip_comments(open(hpp_path).read())
    used = set(re.findall(r"\b(rv_\w+)\b", code))
    for name in re.findall(r"RVERBS_HPP_TRAITS\(\s*rv_\w+\s*,\s*(\w+)\s*\)", code):
        used |= {"rv_%s_%s" % (name, op) for op in ("ref", "unref", "close")}

    problems = []
    missing = [f for f in exported if f not in used and f not in NOT_WRAPPED]
    if missing:
        problems.append("C functions rverbs.hpp does not wrap (wrap them or list them in "
                        "NOT_WRAPPED with the reason):\n  " + "\n  ".join(missing))
    stale = [f for f in NOT_WRAPPED if f in used or f not in exported]
    if stale:
        problems.append("NOT_WRAPPED entries that are wrapped or not exported: " + ", ".join(stale))

    headers = ""
    for h in ("common.h", "context.h", "cq.h", "qp.h", "conn.h", "mw.h"):
        headers += strip_comments(open("%s/rverbs/%s" % (include_dir, h)).read())
    names = set(re.findall(r"\b(RV_\w+)\b", code))
    n_enum = 0
    for enum in COVERED_ENUMS:
        m = re.search(r"\benum\s+%s\s*\{(.*?)\}" % enum, headers, flags=re.S)
        if not m:
            problems.append("enum %s not found in the headers" % enum)
            continue
        members = re.findall(r"\b(RV_\w+)\s*=", m.group(1))
        if not members:
            problems.append("enum %s has no enumerator" % enum)
        n_enum += len(members)
        absent = [e for e in members if e not in names and e not in NOT_BUILT]
        if absent:
            problems.append("%s (%s): not set by rverbs.hpp: %s" % (enum, COVERED_ENUMS[enum],
                                                                     ", ".join(absent)))
    stale = [e for e in NOT_BUILT if e in names or not re.search(r"\b%s\s*=" % e, headers)]
    if stale:
        problems.append("NOT_BUILT entries that are used or not declared: " + ", ".join(stale))

    if problems:
        print("\n".join(problems))
        return 1
    print("coverage: %d of %d C functions wrapped by rverbs.hpp, %d listed with a reason:"
          % (len(exported) - len(NOT_WRAPPED), len(exported), len(NOT_WRAPPED)))
    for f, why in NOT_WRAPPED.items():
        print("  %s: %s" % (f, why))
    print("coverage: %d enumerators of %d enums set by the builders, %d listed with a reason"
          % (n_enum - len(NOT_BUILT), len(COVERED_ENUMS), len(NOT_BUILT)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
