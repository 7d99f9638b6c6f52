#!/usr/bin/env python3
"""Check the rules of ARCHITECTURE §3 that a compiler cannot see.

- every .h in include/rverbs/ is installed (listed in include/rverbs/meson.build);
- a public header includes only C standard headers and other rverbs headers;
  only rverbs/ibv.h may include <infiniband/...> (or any other library);
- rverbs/rverbs.h includes every public header except rverbs/ibv.h, and
  nothing it reaches includes rverbs/ibv.h;
- no static or inline functions in public headers (bindings need real symbols);
- each header has its own include guard and wraps declarations in extern "C".

Usage: check-headers.py --include-dir DIR HEADER...
"""
import argparse
import os
import re
import sys

# The C standard library headers a public header may use (C99 freestanding
# plus the few hosted ones an API could reasonably need).
STD_HEADERS = {
    'stddef.h', 'stdint.h', 'stdbool.h', 'limits.h', 'stdarg.h',
    'inttypes.h', 'stdio.h', 'sys/types.h', 'sys/uio.h',
}
ESCAPE_HATCH = 'ibv.h'
UMBRELLA = 'rverbs.h'
GENERATED = {'version.h'}  # lives in the build tree

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
STATIC_RE = re.compile(r'^\s*(static|inline)\b', re.M)
API_RE = re.compile(r'\bRV_API\b')


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'//[^\n]*', ' ', text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--include-dir', required=True)
    ap.add_argument('installed', nargs='+', help='headers meson installs')
    args = ap.parse_args()

    errors = []
    installed = {os.path.basename(p) for p in args.installed}
    present = {f for f in os.listdir(args.include_dir) if f.endswith('.h')}
    for f in sorted(present - installed):
        errors.append(f'{f}: in include/rverbs/ but not installed '
                      '(add it to public_headers in include/rverbs/meson.build)')

    includes = {}
    for name in sorted(present):
        path = os.path.join(args.include_dir, name)
        with open(path, encoding='utf-8') as fh:
            raw = fh.read()
        code = strip_comments(raw)
        incs = INCLUDE_RE.findall(code)
        includes[name] = set()
        for kind, inc in incs:
            if kind == '"':
                errors.append(f'{name}: #include "{inc}": public headers use <rverbs/...>')
            if inc.startswith('rverbs/'):
                includes[name].add(inc[len('rverbs/'):])
            elif inc in STD_HEADERS:
                pass
            elif name == ESCAPE_HATCH and inc.startswith('infiniband/'):
                pass
            else:
                errors.append(f'{name}: includes <{inc}>; only {ESCAPE_HATCH} may '
                              'include headers outside the C library and rverbs/')
        for m in STATIC_RE.finditer(code):
            line = code[:m.start()].count('\n') + 1
            errors.append(f'{name}:{line}: static/inline definition in a public header')

        stem = name[:-2].upper()
        guard = f'RVERBS_{stem}_H'
        if not re.search(rf'#\s*ifndef\s+{guard}\b', code) or \
           not re.search(rf'#\s*define\s+{guard}\b', code):
            errors.append(f'{name}: no include guard {guard}')
        if API_RE.search(code) and '#ifdef __cplusplus' not in code:
            errors.append(f'{name}: declares functions without an extern "C" block')

    # The umbrella: includes every family header, never the escape hatch.
    if UMBRELLA in includes:
        wanted = (present | GENERATED) - {UMBRELLA, ESCAPE_HATCH}
        for f in sorted(wanted - includes[UMBRELLA]):
            errors.append(f'{UMBRELLA}: does not include <rverbs/{f}>')
        seen, todo = set(), [UMBRELLA]
        while todo:
            cur = todo.pop()
            for inc in includes.get(cur, ()):
                if inc == ESCAPE_HATCH:
                    errors.append(f'{UMBRELLA} reaches <rverbs/{ESCAPE_HATCH}> '
                                  f'through {cur}')
                elif inc not in seen:
                    seen.add(inc)
                    todo.append(inc)
    else:
        errors.append(f'no {UMBRELLA}')

    for e in errors:
        print('FAIL', e)
    print(f'{len(present)} headers checked, {len(errors)} problems')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
