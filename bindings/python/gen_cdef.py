#!/usr/bin/python3
"""Generate the cffi declarations of the Python binding from the public headers.

    gen_cdef.py --soname librverbs.so.0 --output _cdef.py [--layout-c probe.c]
                -I DIR... --cc CC [CC ARGS...] -- HEADER...

What it does, and never more (the headers are the only source of truth):

1. Writes a translation unit that includes every public header it is given
   (rverbs/ibv.h is skipped: it needs <infiniband/verbs.h> and is an escape
   hatch to raw libibverbs objects, useless from Python).
2. Runs the C preprocessor on it (`cc -E -dD -DRV_API=`) and keeps only the
   lines that come from the rverbs include directories, so the C library's
   own typedefs never reach cffi (cffi knows uint64_t, size_t ... natively).
3. Strips what cffi's parser does not accept (GNU attributes, __extension__,
   restrict) and turns object-like integer macros into `#define NAME value`
   lines that cffi understands; their values are computed by preprocessing
   once more and evaluating the integer expression. String macros become
   Python constants; function-like macros (RVERBS_CHECK_VERSION) are compile
   time only and are listed as such.
4. Parses the result with cffi itself, so a declaration cffi cannot read fails
   the build here rather than at import time, and emits:
   - _cdef.py: CDEF (the text for ffi.cdef), SONAME, and the inventories
     FUNCTIONS, STRUCTS, ENUMS, CONSTANTS, STRING_CONSTANTS, SKIPPED_MACROS;
   - optionally a C program that prints sizeof/offsetof of every public struct
     and sizeof of every enum, which the coverage test compares with cffi's.
"""
import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile

SKIPPED_HEADERS = {"rverbs/ibv.h"}

LINEMARK = re.compile(r'^#\s*(\d+)\s+"([^"]*)"')
DEFINE = re.compile(r"^#define\s+(\w+)(\([^)]*\))?(?:\s+(.*))?$")


def preprocess(cc, incdirs, headers, extra_lines=(), extra_flags=()):
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as tu:
        for h in headers:
            tu.write("#include <%s>\n" % h)
        for line in extra_lines:
            tu.write(line + "\n")
        name = tu.name
    try:
        cmd = list(cc) + ["-E", "-std=c11", "-DRV_API="] + list(extra_flags)
        for d in incdirs:
            cmd += ["-I", d]
        cmd.append(name)
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, universal_newlines=True)
        return out.stdout, name
    finally:
        os.unlink(name)


def is_ours(path, incdirs):
    real = os.path.realpath(path)
    for d in incdirs:
        root = os.path.join(os.path.realpath(d), "rverbs") + os.sep
        if real.startswith(root):
            return True
    return False


def split_ours(text, incdirs, tu_name):
    """The declarations and #defines that come from the rverbs headers."""
    decls, defines = [], []
    ours = False
    for line in text.splitlines():
        m = LINEMARK.match(line)
        if m:
            ours = is_ours(m.group(2), incdirs)
            continue
        if not ours:
            continue
        if line.startswith("#define"):
            defines.append(line)
        elif line.startswith("#"):
            continue
        else:
            decls.append(line)
    return "\n".join(decls), defines


def clean_for_cffi(text):
    text = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", "", text)
    text = re.sub(r"\b__extension__\b", "", text)
    text = re.sub(r"\b(__restrict__|__restrict|restrict)\b", "", text)
    text = re.sub(r"\b__inline__\b|\b__inline\b", "inline", text)
    text = re.sub(r"\n\s*\n+", "\n", text)
    return text.strip() + "\n"


SUFFIX = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)([uUlL]+)\b")
CAST = re.compile(r"\(\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:u?int(?:8|16|32|64)_t|size_t|"
                  r"char|short|int|long(?:\s+long)?|unsigned|signed)\s*\)")


def eval_int(expr, names):
    """Evaluate a preprocessed C integer constant expression, or None."""
    py = SUFFIX.sub(r"\1", expr)
    py = CAST.sub("", py)
    py = py.replace("&&", " and ").replace("||", " or ").replace("!", " not ")
    try:
        tree = ast.parse(py.strip(), mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Constant,
               ast.Name, ast.Load, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            return None
        if isinstance(node, ast.Name) and node.id not in names:
            return None
        if isinstance(node, ast.Constant) and not isinstance(node.value, int):
            return None
    try:
        value = eval(compile(tree, "<macro>", "eval"), {"__builtins__": {}}, dict(names))
    except Exception:
        return None
    return int(value)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cc", nargs="+", required=True, help="the C compiler command")
    ap.add_argument("-I", dest="incdirs", action="append", default=[])
    ap.add_argument("headers", nargs="*",
                    help="public headers, as included (rverbs/qp.h) or as paths ending so")
    ap.add_argument("--soname", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--layout-c")
    args = ap.parse_args(argv)

    headers = []
    for h in args.headers:
        m = re.search(r"(rverbs/[^/]+\.h)$", h.replace(os.sep, "/"))
        inc = m.group(1) if m else h
        if inc not in SKIPPED_HEADERS and inc not in headers:
            headers.append(inc)
    # The umbrella first, so that declarations come in the headers' own order.
    headers.sort(key=lambda h: (h != "rverbs/rverbs.h", h))

    text, tu_name = preprocess(args.cc, args.incdirs, headers, extra_flags=["-dD"])
    decls, define_lines = split_ours(text, args.incdirs, tu_name)
    decls = clean_for_cffi(decls)

    import cffi
    ffi = cffi.FFI()
    ffi.cdef(decls)

    # Names the parser found.
    functions = sorted(set(re.findall(r"\b(rv_\w+)\s*\(", decls)) -
                       set(re.findall(r"\(\s*\*\s*(rv_\w+)\s*\)", decls)))
    structs = []
    for tag in re.findall(r"\bstruct\s+(\w+)\s*\{", decls):
        if tag not in structs:
            structs.append(tag)
    enums = []
    for tag in re.findall(r"\benum\s+(\w+)\s*\{", decls):
        if tag not in enums:
            enums.append(tag)
    enumerators = {}
    for tag in enums:
        enumerators.update(ffi.typeof("enum " + tag).relements)

    # Macros: object-like ones from our headers.
    macros, skipped = [], {}
    for line in define_lines:
        m = DEFINE.match(line)
        if not m:
            continue
        name, params, body = m.group(1), m.group(2), (m.group(3) or "").strip()
        if name == "RV_API" or re.match(r"^RVERBS_\w+_H$", name):
            continue  # the export macro and include guards
        if params is not None:
            skipped[name] = "function-like macro (compile time only)"
            continue
        if not body:
            skipped[name] = "empty macro"
            continue
        macros.append(name)
    constants, strings = {}, {}
    if macros:
        probe = ['__rvgen_macro__ "%s" = %s ;' % (n, n) for n in macros]
        expanded, _ = preprocess(args.cc, args.incdirs, headers, probe, extra_flags=["-P"])
        for n, expr in re.findall(r'__rvgen_macro__\s+"(\w+)"\s*=\s*(.*?)\s*;\s*$', expanded, re.M):
            if re.fullmatch(r'"(?:[^"\\]|\\.)*"', expr):
                strings[n] = ast.literal_eval(expr)
                continue
            value = eval_int(expr, {**enumerators, **constants})
            if value is None:
                skipped[n] = "not an integer constant expression: " + expr
            else:
                constants[n] = value

    cdef = decls + "".join("#define %s %d\n" % (n, v) for n, v in sorted(constants.items()))
    check = cffi.FFI()
    check.cdef(cdef)  # the final text must parse too

    typedef_of = {}
    for tag in structs:
        m = re.search(r"typedef\s+struct\s+%s\s+(\w+)\s*;" % tag, decls) or \
            re.search(r"typedef\s+struct\s+%s\s*\{.*?\}\s*(\w+)\s*;" % tag, decls, re.S)
        typedef_of[tag] = m.group(1) if m else None

    with open(args.output + ".tmp", "w") as f:
        f.write('"""Generated by bindings/python/gen_cdef.py from the rverbs public headers.\n'
                'Do not edit: rebuild instead."""\n\n')
        f.write("SONAME = %r\n\n" % args.soname)
        f.write("HEADERS = %r\n\n" % headers)
        f.write("CDEF = r'''\n%s'''\n\n" % cdef)
        f.write("FUNCTIONS = %r\n\n" % functions)
        f.write("STRUCTS = %r\n\n" % {t: typedef_of[t] for t in structs})
        f.write("ENUMS = %r\n\n" % {t: sorted(ffi.typeof("enum " + t).relements) for t in enums})
        f.write("CONSTANTS = %r\n\n" % dict(sorted(constants.items())))
        f.write("STRING_CONSTANTS = %r\n\n" % dict(sorted(strings.items())))
        f.write("SKIPPED_MACROS = %r\n" % dict(sorted(skipped.items())))
    os.replace(args.output + ".tmp", args.output)

    if args.layout_c:
        with open(args.layout_c + ".tmp", "w") as f:
            f.write("/* Generated by bindings/python/gen_cdef.py: the layout of every public\n"
                    " * struct and the size of every enum, as the C compiler sees them. */\n")
            f.write("#include <stddef.h>\n#include <stdio.h>\n")
            for h in headers:
                f.write("#include <%s>\n" % h)
            f.write("\nint main(void)\n{\n")
            for tag in structs:
                ctype = "struct " + tag
                f.write('\tprintf("sizeof %%s %%zu\\n", "%s", sizeof(%s));\n' % (ctype, ctype))
                f.write('\tprintf("alignof %%s %%zu\\n", "%s", _Alignof(%s));\n' % (ctype, ctype))
                for fname, _ in ffi.typeof(ctype).fields:
                    f.write('\tprintf("offsetof %%s %%s %%zu\\n", "%s", "%s", offsetof(%s, %s));\n'
                            % (ctype, fname, ctype, fname))
            for tag in enums:
                ctype = "enum " + tag
                f.write('\tprintf("sizeof %%s %%zu\\n", "%s", sizeof(%s));\n' % (ctype, ctype))
                for name in sorted(ffi.typeof(ctype).relements):
                    f.write('\tprintf("value %%s %%lld\\n", "%s", (long long)(%s));\n'
                            % (name, name))
            for name in sorted(constants):
                # The sign the generator computed picks the format; a wrong sign
                # then shows as a mismatch instead of a compiler warning.
                fmt, cast = ("%lld", "long long") if constants[name] < 0 else \
                    ("%llu", "unsigned long long")
                f.write('\tprintf("value %%s %s\\n", "%s", (%s)(%s));\n'
                        % (fmt, name, cast, name))
            f.write("\treturn 0;\n}\n")
        os.replace(args.layout_c + ".tmp", args.layout_c)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
