#!/usr/bin/env python3
# rdma-core's pyverbs test suite (Debian's python3-pyverbs ships it under
# /usr/share/doc/rdma-core/tests/, partly gzipped) on soft0 through `rverbs run`:
# one process per module (a hung module costs its timeout, not the run), the
# per-module table of passed / failed / errors / skipped, exit 1 on any failure,
# error or timeout, 77 (skip) when pyverbs or the suite is not installed or the
# layer is sanitized (a sanitizer runtime cannot be loaded into python3 late).
#
# usage: run-pyverbs.py RVERBS_TOOL [--exclude MODULE,...] [MODULE...]
#        (no modules: every test_*.py of the installed suite but the excluded)
# RVERBS_PYVERBS_TIMEOUT: seconds per module (default 120).
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

from sanitized import sanitized

SUITE = '/usr/share/doc/rdma-core/tests'
# The Python whose dist-packages holds pyverbs (a pyenv or venv python3 first on
# PATH would not find it).
PYTHONS = ['/usr/bin/python3', shutil.which('python3') or 'python3']
# unittest's summary: "Ran 12 tests in 0.3s", then "OK (skipped=2)" or
# "FAILED (failures=1, errors=2, skipped=3)"; and one "ERROR: name (id)" per problem.
RAN = re.compile(r'^Ran (\d+) tests? in', re.M)
SUMMARY = re.compile(r'^(OK|FAILED)(?: \((.*)\))?$', re.M)
PROBLEM = re.compile(r'^(FAIL|ERROR): (\S+)', re.M)


def skip(why):
    print('SKIP:', why)
    sys.exit(77)


def find_python():
    for py in PYTHONS:
        if subprocess.run([py, '-c', 'import pyverbs.device'], capture_output=True).returncode == 0:
            return py
    return None


def copy_suite(dst):
    for fn in os.listdir(SUITE):
        src = os.path.join(SUITE, fn)
        if fn.endswith('.py.gz'):
            with gzip.open(src, 'rb') as f, open(os.path.join(dst, fn[:-3]), 'wb') as g:
                shutil.copyfileobj(f, g)
        elif os.path.isfile(src):
            shutil.copy(src, dst)


def run_module(tool, py, tmp, mod, timeout):
    try:
        p = subprocess.run([tool, 'run', '--', py, 'run_tests.py', '--dev', 'soft0', '-v', mod],
                           cwd=tmp, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        out, timed_out = p.stderr + p.stdout, False
    except subprocess.TimeoutExpired as e:
        out = (e.stderr or b'').decode(errors='replace') + (e.stdout or b'').decode(errors='replace')
        timed_out = True
    counts = {'passed': 0, 'failed': 0, 'errors': 0, 'skipped': 0}
    bad = [f'{m.group(2)}: {m.group(1)}' for m in PROBLEM.finditer(out)]
    ran, summary = RAN.search(out), SUMMARY.search(out)
    if ran and summary:
        n = {'failures': 0, 'errors': 0, 'skipped': 0, 'expected failures': 0,
             'unexpected successes': 0}
        for part in (summary.group(2) or '').split(', '):
            if '=' in part:
                k, v = part.split('=')
                n[k] = int(v)
        counts['failed'] = n['failures'] + n['unexpected successes']
        counts['errors'] = n['errors']
        counts['skipped'] = n['skipped']
        counts['passed'] = int(ran.group(1)) - counts['failed'] - n['errors'] - n['skipped']
    elif not timed_out:
        bad.append('no unittest summary')
    if not timed_out and p.returncode != 0 and not bad:
        bad.append(f'exit status {p.returncode}')
    if timed_out:
        bad.append(f'timed out after {timeout} s')
    return counts, bad, out


def main():
    if len(sys.argv) < 2:
        sys.exit('usage: run-pyverbs.py RVERBS_TOOL [--exclude MODULE,...] [MODULE...]')
    tool = os.path.abspath(sys.argv[1])
    args, exclude = sys.argv[2:], set()
    if args[:1] == ['--exclude']:
        exclude, args = set(args[1].split(',')), args[2:]
    if sanitized():
        sys.exit(77)
    if not os.path.isfile(os.path.join(SUITE, 'run_tests.py')):
        skip(f'{SUITE}/run_tests.py not installed (python3-pyverbs)')
    py = find_python()
    if not py:
        skip('no python3 imports pyverbs (python3-pyverbs)')
    timeout = int(os.environ.get('RVERBS_PYVERBS_TIMEOUT', '120'))
    with tempfile.TemporaryDirectory(prefix='rverbs-pyverbs-') as tmp:
        copy_suite(tmp)
        mods = args or sorted(f[:-3] for f in os.listdir(tmp)
                              if f.startswith('test_') and f.endswith('.py')
                              and f[:-3] not in exclude)
        if exclude:
            print('not run:', ', '.join(sorted(exclude)))
        total = {'passed': 0, 'failed': 0, 'errors': 0, 'skipped': 0}
        rows, failures = [], []
        for mod in mods:
            counts, bad, out = run_module(tool, py, tmp, mod, timeout)
            rows.append((mod, counts, bad))
            for k in total:
                total[k] += counts[k]
            if bad:
                failures.append((mod, bad, out))
        print(f'{"module":28} {"passed":>6} {"failed":>6} {"errors":>6} {"skipped":>7}')
        for mod, c, bad in rows:
            note = '  (' + bad[-1] + ')' if bad and bad[-1].startswith(('timed', 'exit')) else ''
            print(f'{mod:28} {c["passed"]:6} {c["failed"]:6} {c["errors"]:6} {c["skipped"]:7}{note}')
        print(f'{"total":28} {total["passed"]:6} {total["failed"]:6} {total["errors"]:6} '
              f'{total["skipped"]:7}')
        for mod, bad, out in failures:
            print(f'\n==== {mod}: ' + ', '.join(bad))
            print(out[-6000:])
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
