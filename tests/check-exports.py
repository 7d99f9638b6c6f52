#!/usr/bin/python3
"""No executable rverbs builds for users exports a symbol of its own (issue 17).

An executable's global function that a shared library also names is bound in
place of the library's at run time: the `rverbs` tool's own rdma_connect()
once took librdmacm's calls from librverbs. The tools and examples are built
with hidden visibility (gnu_symbol_visibility : 'hidden'), so their dynamic
symbol table may hold only what the runtime itself put there: copy
relocations of system libraries' data (stderr@GLIBC_2.2.5, a C++ vtable
@GLIBCXX_...), each carrying the version of the library that defines it;
in a sanitizer build, the sanitizer runtime's own (__asan_*, __ubsan_*);
and weak instantiations of the C++ standard library's templates (namespace
std, which libstdc++ declares with default visibility). Anything else,
unversioned or versioned by rverbs, is the executable's own.

usage: check-exports.py EXECUTABLE...
"""
import re
import subprocess
import sys

# Versions of the system libraries whose data an executable may copy-relocate.
RUNTIME_VERSIONS = re.compile(r"^(GLIBC|GLIBCXX|CXXABI|GCC)_[0-9.]+$")
SANITIZER = re.compile(r"^__(asan|ubsan|lsan|tsan|sanitizer)_")
STD_TEMPLATE = re.compile(r"^_Z(N|NK|GVZN)?St")


def own_exports(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], check=True, capture_output=True,
                         text=True).stdout
    bad = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        kind, name = fields[1], fields[2]
        sym, _, version = name.partition("@")
        version = version.lstrip("@")
        if version and RUNTIME_VERSIONS.match(version):
            continue
        if SANITIZER.match(sym) or (kind in "WVu" and STD_TEMPLATE.match(sym)):
            continue
        bad.append(name)
    return bad


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    failed = False
    for path in sys.argv[1:]:
        bad = own_exports(path)
        if bad:
            failed = True
            print(f"{path} exports {len(bad)} symbol(s) of its own: {', '.join(bad)}; build it "
                  "with gnu_symbol_visibility : 'hidden' and rename what clashes with a library")
        else:
            print(f"{path}: exports nothing of its own")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
