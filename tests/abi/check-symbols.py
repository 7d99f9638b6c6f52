#!/usr/bin/env python3
"""The exported symbols, the version script and the headers must agree.

- every dynamic symbol librverbs.so defines is an rv_ function bound to a
  version node of lib/rverbs.sym (rv_x@@RVERBS_1.0), and nothing else leaks;
- the set of exported symbols equals the version script's list, node by node;
- every RV_API function declared in include/rverbs/*.h is in the version script
  and every symbol of the version script is declared in a header, so a new
  function cannot be forgotten (or exported by accident).

Usage: check-symbols.py --library librverbs.so --version-script rverbs.sym
                        --include-dir include/rverbs
"""
import argparse
import os
import re
import subprocess
import sys

NODE_RE = re.compile(r'([A-Za-z_][A-Za-z0-9_.]*)\s*\{(.*?)\}\s*([A-Za-z0-9_.]*)\s*;', re.S)
API_RE = re.compile(r'\bRV_API\b[^;{]*?\b(rv_[A-Za-z0-9_]+)\s*\(', re.S)


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'#[^\n]*|//[^\n]*', ' ', text)


def parse_version_script(path, errors):
    """Return {symbol: node}."""
    with open(path, encoding='utf-8') as fh:
        text = re.sub(r'/\*.*?\*/|#[^\n]*', ' ', fh.read(), flags=re.S)
    symbols = {}
    nodes = []
    for node, body, parent in NODE_RE.findall(text):
        if not node.startswith('RVERBS_'):
            errors.append(f'version script: node {node} is not named RVERBS_x.y')
        if nodes and parent != nodes[-1]:
            errors.append(f'version script: node {node} should inherit {nodes[-1]}')
        nodes.append(node)
        section = None
        for tok in re.split(r'[\s;]+', body):
            if not tok:
                continue
            if tok in ('global:', 'local:'):
                section = tok
                continue
            if section == 'local:':
                if tok != '*' or node != nodes[0]:
                    errors.append(f'version script: unexpected local entry {tok} in {node}')
                continue
            if section != 'global:':
                errors.append(f'version script: {tok} outside global: in {node}')
                continue
            if tok in symbols:
                errors.append(f'version script: {tok} listed twice '
                              f'({symbols[tok]} and {node})')
            symbols[tok] = node
    if not nodes:
        errors.append('version script: no version node found')
    return symbols, nodes


def exported_symbols(lib, errors):
    """Return {symbol: version} of the defined dynamic symbols."""
    out = subprocess.run(['nm', '-D', '--defined-only', '--with-symbol-versions', lib],
                         check=True, capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        kind, full = parts[1], parts[2]
        name, sep, version = full.partition('@@')
        if not sep:
            name, sep, version = full.partition('@')
            if sep:
                # rv_x@RVERBS_1.0 (no default) would be a compat symbol; none yet.
                errors.append(f'library: {full} is a non-default symbol version')
        if kind == 'A' and (not version or name == version) and name.startswith('RVERBS_'):
            continue  # the version node itself
        syms[name] = (version or None, kind)
    return syms


def declared_functions(include_dir):
    decl = {}
    for name in sorted(os.listdir(include_dir)):
        if not name.endswith('.h'):
            continue
        with open(os.path.join(include_dir, name), encoding='utf-8') as fh:
            code = strip_comments(fh.read())
        for fn in API_RE.findall(code):
            decl[fn] = name
    return decl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--library', required=True)
    ap.add_argument('--version-script', required=True)
    ap.add_argument('--include-dir', required=True)
    args = ap.parse_args()

    errors = []
    script, nodes = parse_version_script(args.version_script, errors)
    exported = exported_symbols(args.library, errors)
    declared = declared_functions(args.include_dir)

    for sym, (version, kind) in sorted(exported.items()):
        if not sym.startswith('rv_'):
            errors.append(f'library exports {sym} ({kind}): every symbol starts with rv_')
        if sym not in script:
            errors.append(f'library exports {sym}, which is not in the version script')
        elif version != script[sym]:
            errors.append(f'library exports {sym}@@{version}; the version script '
                          f'puts it in {script[sym]}')
        if kind not in ('T', 'W', 'i'):
            errors.append(f'library exports {sym} of nm type {kind}: only functions '
                          'belong to the ABI')
    for sym, node in sorted(script.items()):
        if sym not in exported:
            errors.append(f'{sym} ({node}) is in the version script but the library '
                          'does not define it')
        if sym not in declared:
            errors.append(f'{sym} ({node}) is in the version script but no public '
                          'header declares it with RV_API')
    for fn, hdr in sorted(declared.items()):
        if fn not in script:
            errors.append(f'{fn} is declared RV_API in {hdr} but missing from the '
                          'version script (add it to the newest node of lib/rverbs.sym)')

    for e in errors:
        print('FAIL', e)
    print(f'{len(exported)} exported, {len(script)} in the version script '
          f'({", ".join(nodes)}), {len(declared)} declared: {len(errors)} problems')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
