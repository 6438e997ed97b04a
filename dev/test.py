#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Run Book AI's test suite inside calibre's own runtime, on every host.

    python3 dev/test.py                            all hosts, made first where missing
    python3 dev/test.py --host noai                one host
    python3 dev/test.py --host forky -- -k viewer -x    extra pytest arguments
    python3 dev/test.py --setup-only               make the hosts and peers, run no test
    python3 dev/test.py --jobs 1                   one host after another (default: two at once)
    python3 dev/test.py --quick                    no root: the quick run, below

Both first check the types with mypy (dev/typecheck.py, settings in mypy.ini) and stop,
running no test, when it finds an error.

It needs root (the hosts are chroots): run it as root, or as a user with sudo, and it
goes on through sudo. It first installs what this machine lacks from Debian
(dev/machine.py), then makes the hosts and the LLM peers side by side.

Each host runs pytest through its calibre-debug with a throwaway calibre config
folder, in a network namespace of its own with only loopback (see dev/hosts.py).
A host whose run fails, has a skipped test (every prerequisite must be there), or
runs no test at all fails the whole run. Two hosts run at once (--jobs), each
printing its output whole when it ends. The summary ends with one line:
"total: N passed, N failed, N skipped".

--quick runs, as any user, on this machine's own calibre (Debian's calibre package,
with python3-pytest, python3-hypothesis, python3-mypy and gettext: what is missing is said in
one line before anything runs), the tests that need nothing but
calibre's runtime in one process: no display or Qt application, no host root, no
LLM peer or keyring, no calibre program started. tests/conftest.py works out which
tests those are from what each one uses and marks them `quick`; this selects them
(-m quick) with a throwaway calibre config and cache, a private runtime folder and
no session bus, so nothing of your own calibre or keyring is reached. No set-up
step, no network namespace; extra pytest arguments work as above.
"""

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hosts  # noqa: E402
import machine  # noqa: E402
import subprocess  # noqa: E402
import typecheck  # noqa: E402

RESULTS = hosts.PROJECT / 'build' / 'test-results'
PYTEST_MAIN = 'import sys, pytest; sys.exit(pytest.main(sys.argv[1:]))'


def run_host(host, pytest_args, allow_skips, log=None, threads=None):
    """Run the suite on host; returns (exit code, counts, seconds). With log (a path), what the
    run prints goes there instead of to this terminal. threads: the CPU threads its model servers
    may use (its share of this machine's cores when hosts run at once; all of them otherwise)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    junit = RESULTS / f'{host}.xml'
    junit.unlink(missing_ok=True)
    if host == 'bookworm':
        scratch = Path(tempfile.mkdtemp(prefix='bookai-test-'))
        junit_arg = str(junit)
    else:  # a chroot: /tmp is a fresh tmpfs for every run, the project is at /project
        scratch = Path('/tmp/bookai-test')
        junit_arg = f'{hosts.IN_ROOT_PROJECT}/build/test-results/{host}.xml'
    env = {
        'BOOKAI_HOST': host,
        'CALIBRE_CONFIG_DIRECTORY': str(scratch / 'calibre-config'),
        'CALIBRE_CACHE_DIRECTORY': str(scratch / 'calibre-cache'),
        'TMPDIR': str(scratch),
        'BOOKAI_PEER_THREADS': str(threads or os.cpu_count() or 1),
    }
    if not allow_skips:
        env['BOOKAI_NO_SKIPS'] = '1'
    argv = ['sh', '-c', f'mkdir -p {scratch}/calibre-config && exec "$@"', 'sh',
            'calibre-debug', '-c', PYTEST_MAIN, '--', f'--junitxml={junit_arg}',
            f'--basetemp={scratch}/pytest'] + pytest_args
    heading = f'\n=== {host}: calibre {hosts.HOSTS[host]["calibre"]}'
    start = time.monotonic()
    if log is None:
        print(heading, flush=True)
        code = hosts.run(host, argv, env=env, check=False, isolated=True).returncode
    else:
        with open(log, 'w') as out:
            out.write(heading.lstrip() + '\n')
            out.flush()
            code = hosts.run(host, argv, env=env, check=False, isolated=True, stdout=out,
                             stderr=subprocess.STDOUT).returncode
    seconds = time.monotonic() - start
    return code, read_counts(junit), seconds


# The hosts' runs, longest first (measured on 1.3.0, two at once on two cores: forky 32 min, with
# the README's demo; bookworm 27, with the demo; trixie 25; noai 18): started in this order, two
# lanes end within two minutes of each other, where starting bookworm and trixie first left forky
# to run alone at the end, six minutes longer in all.
LONGEST_FIRST = ('forky', 'bookworm', 'trixie', 'noai')


def run_hosts(selected, pytest_args, allow_skips, jobs):
    """Run the suite on each selected host, jobs of them at once (each in its own network
    namespace, so their servers and calibre instances never meet). With more than one at once,
    each host's output is kept in build/test-results/HOST.log and printed whole when it ends."""
    if jobs <= 1 or len(selected) == 1:
        return {host: run_host(host, pytest_args, allow_skips) for host in selected}
    RESULTS.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()

    def one(host):
        log = RESULTS / f'{host}.log'
        # each host's model servers get their share of the cores: llama.cpp's and
        # stable-diffusion.cpp's threads wait for each other spinning, so two servers with a
        # thread per core each, at once, can slow one another down many times over
        result = run_host(host, pytest_args, allow_skips, log, threads=max(1, (os.cpu_count() or 1) // jobs))
        with lock:
            sys.stdout.write(log.read_text(errors='replace'))
            print(f'=== {host}: ended after {result[2]:.0f}s', flush=True)
        return result

    order = sorted(selected, key=lambda h: LONGEST_FIRST.index(h) if h in LONGEST_FIRST else len(LONGEST_FIRST))
    print(f'running {len(selected)} hosts, {jobs} at once, the longest first: {", ".join(order)}', flush=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {host: pool.submit(one, host) for host in order}
        return {host: futures[host].result() for host in selected}


def types_checked():
    """mypy over plugin/ and build.py (dev/typecheck.py, mypy.ini), its output printed: True with no error."""
    print('=== mypy (dev/typecheck.py)', flush=True)
    code = typecheck.run()
    if code != 0:
        print(f'mypy: FAILED (exit {code}): no test was run', flush=True)
    return code == 0


def quick_missing():
    """The Debian packages the quick run needs that this machine lacks: calibre; pytest and hypothesis
    in calibre's Python (Debian's calibre runs on Debian's, asked in its stead when calibre is
    missing); mypy, which runs first; gettext, whose msgfmt the build's tests compare with."""
    calibre = shutil.which('calibre-debug')
    # a plain loop: calibre-debug -c runs the code inside a function, where a comprehension would
    # not see the import
    code = ('import importlib.util\nfor m in ("pytest", "hypothesis"):\n'
            '    print(m, importlib.util.find_spec(m) is not None)')
    found = subprocess.run([calibre or typecheck.PYTHON, '-c', code], capture_output=True, text=True).stdout
    return (([] if calibre else ['calibre'])
            + [f'python3-{m}' for m in ('pytest', 'hypothesis') if f'{m} True' not in found.splitlines()]
            + ([] if typecheck.mypy_typeshed() else ['python3-mypy']) + ([] if shutil.which('msgfmt') else ['gettext']))


def run_quick(pytest_args):
    """The quick run on this machine's calibre, as the user running it; returns pytest's exit code."""
    scratch = Path(tempfile.mkdtemp(prefix='bookai-quick-'))
    (scratch / 'calibre-config').mkdir()
    (scratch / 'runtime').mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('BOOKAI_', 'CALIBRE_')) and k != 'DBUS_SESSION_BUS_ADDRESS'}
    env.update({
        'BOOKAI_HOST': 'quick', 'BOOKAI_NO_SKIPS': '1',
        'CALIBRE_CONFIG_DIRECTORY': str(scratch / 'calibre-config'),
        'CALIBRE_CACHE_DIRECTORY': str(scratch / 'calibre-cache'),
        'XDG_RUNTIME_DIR': str(scratch / 'runtime'), 'TMPDIR': str(scratch),
        'QT_QPA_PLATFORM': 'offscreen', 'PYTHONDONTWRITEBYTECODE': '1',
    })
    argv = ['calibre-debug', '-c', PYTEST_MAIN, '--', '-m', 'quick', f'--basetemp={scratch}/pytest'] + pytest_args
    start = time.monotonic()
    try:
        code = subprocess.run(argv, env=env, cwd=str(hosts.PROJECT)).returncode
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f'quick run: {time.monotonic() - start:.1f}s, {"ok" if code == 0 else f"FAILED (pytest exit {code})"}')
    return code


def read_counts(junit):
    counts = {'passed': 0, 'failed': 0, 'skipped': 0}
    if not junit.exists():
        return counts
    root = ET.parse(junit).getroot()
    for suite in root.iter('testsuite'):
        tests = int(suite.get('tests', 0))
        failed = int(suite.get('failures', 0)) + int(suite.get('errors', 0))
        skipped = int(suite.get('skipped', 0))
        counts['failed'] += failed
        counts['skipped'] += skipped
        counts['passed'] += tests - failed - skipped
    return counts


def prepare(selected):
    """Make what the tests need: first what this machine needs from Debian (dev/machine.py, the
    only apt on this machine), then the hosts, and the LLM peers (dev/peers.py) beside them:
    building llama-server is CPU-bound, making roots is network- and dpkg-bound."""
    machine.install(machine.TESTS + hosts.PACKAGES)
    peers = subprocess.Popen([sys.executable, str(hosts.PROJECT / 'dev' / 'peers.py'), 'setup'])
    hosts.setup_parallel(selected)
    if peers.wait() != 0:
        raise SystemExit('making the test peers failed (see above)')
    # now that the hosts exist, the SDKs can be byte-compiled by each host's own Python
    subprocess.run([sys.executable, str(hosts.PROJECT / 'dev' / 'peers.py'), 'setup', 'sdk'], check=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--host', action='append', choices=list(hosts.HOSTS),
                    help='run on this host only (repeatable); default: all of them')
    ap.add_argument('--allow-skips', action='store_true', help='do not fail on skipped tests')
    ap.add_argument('--no-setup', action='store_true', help='do not check or make the hosts first')
    ap.add_argument('--setup-only', action='store_true', help='make the hosts and the peers, then stop')
    ap.add_argument('--quick', action='store_true',
                    help='no root: the tests that need only calibre\'s runtime, on this machine\'s calibre')
    ap.add_argument('--jobs', type=int, default=2, metavar='N',
                    help='hosts run at once (default 2: on two cores, one host\'s waits are the other\'s work)')
    ap.add_argument('pytest_args', nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    pytest_args = a.pytest_args[1:] if a.pytest_args[:1] == ['--'] else a.pytest_args
    if a.quick:
        if a.host or a.allow_skips or a.no_setup or a.setup_only:
            ap.error('--quick runs on this machine\'s calibre only, with no set-up and no skips')
        missing = quick_missing()  # all of it in one line, before mypy would name its own part
        if missing:
            raise SystemExit(f'The quick run needs more from Debian: as root, apt-get install {" ".join(missing)}')
        return run_quick(pytest_args) if types_checked() else 1
    if os.geteuid() != 0:  # the hosts are chroots
        if not shutil.which('sudo'):
            raise SystemExit('dev/test.py needs root: the hosts are chroots. Run it as root, or as a user with '
                             'sudo (python3 dev/test.py --quick needs no root)')
        print('dev/test.py needs root for the hosts (chroots): going on with sudo', flush=True)
        os.execvp('sudo', ['sudo', sys.executable, os.path.abspath(__file__)] + (argv if argv is not None
                                                                                 else sys.argv[1:]))
    selected = a.host or list(hosts.HOSTS)
    if not a.no_setup:
        machine.install(machine.TESTS + hosts.PACKAGES)  # mypy among them
    if not a.setup_only and not types_checked():
        return 1
    if not a.no_setup:
        prepare(selected)
    if a.setup_only:
        print('set-up done: hosts', ', '.join(selected), 'and the peers are ready', flush=True)
        return 0
    results = run_hosts(selected, pytest_args, a.allow_skips, a.jobs)

    print('\n=== summary')
    total = {'passed': 0, 'failed': 0, 'skipped': 0}
    ok = True
    for host, (code, counts, seconds) in results.items():
        verdict = 'ok'
        if code == 5 or sum(counts.values()) == 0:
            verdict = 'FAILED: no test ran'
        elif code != 0 or counts['failed']:
            verdict = f'FAILED (pytest exit {code})'
        elif counts['skipped'] and not a.allow_skips:
            verdict = 'FAILED: skipped tests'
        ok = ok and verdict == 'ok'
        for k in total:
            total[k] += counts[k]
        print(f'{host:9} calibre {hosts.HOSTS[host]["calibre"]:16} {counts["passed"]:4} passed '
              f'{counts["failed"]:3} failed {counts["skipped"]:3} skipped  {seconds:6.1f}s  {verdict}')
    print(f'total: {total["passed"]} passed, {total["failed"]} failed, {total["skipped"]} skipped')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
