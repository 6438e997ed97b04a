#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Check the types of plugin/ and build.py with mypy, as dev/test.py does before any test.

    python3 dev/typecheck.py            mypy's output; exit 0 only with no error
    python3 dev/typecheck.py -- ARGS    extra arguments for mypy (e.g. a file of the plugin alone)

The settings are in mypy.ini. The mypy is Debian 12's (python3-mypy, 1.0.1), run by Debian's
Python, /usr/bin/python3, whatever python3 runs this file: the version that CI has is the one
that tells. Needs no root; where that mypy is missing it says what to install and fails.

mypy cannot see two things that calibre makes when it loads the plugin, so this first writes
them under build/typing/: calibre_plugins/bookai, the name the plugin imports itself by, as a
symlink to plugin/; and a copy of mypy's typeshed whose builtins.pyi ends with the names calibre
gives a plugin's modules (dev/typing/calibre_builtins.pyi). mypy's paths in
build/typing/calibre_plugins/bookai/ are printed as the plugin/ paths they are.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
TYPING = PROJECT / 'build' / 'typing'
PYTHON = '/usr/bin/python3'  # Debian's, which python3-mypy installs into
MISSING = 'mypy is missing: as root, apt-get install python3-mypy (Debian 12\'s mypy 1.0.1)'
LINKED = 'build/typing/calibre_plugins/bookai/'


def mypy_typeshed() -> Path | None:
    """The typeshed folder of Debian's mypy, or None when that mypy is not installed."""
    if not os.access(PYTHON, os.X_OK):
        return None
    r = subprocess.run([PYTHON, '-c', 'import mypy, os; print(os.path.dirname(mypy.__file__))'],
                       capture_output=True, text=True)
    return Path(r.stdout.strip()) / 'typeshed' if r.returncode == 0 else None


def prepare(typeshed: Path) -> None:
    """Write build/typing/: the plugin under its import name, and typeshed with calibre's builtins."""
    package = TYPING / 'calibre_plugins'
    package.mkdir(parents=True, exist_ok=True)
    (package / '__init__.py').touch()
    link = package / 'bookai'
    if not link.is_symlink():
        link.symlink_to(os.path.relpath(PROJECT / 'plugin', package))
    copy = TYPING / 'typeshed'
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(typeshed, copy)
    builtins = copy / 'stdlib' / 'builtins.pyi'
    added = (PROJECT / 'dev' / 'typing' / 'calibre_builtins.pyi').read_text(encoding='utf-8')
    builtins.write_text(builtins.read_text(encoding='utf-8') + '\n' + added, encoding='utf-8')


def run(args: list[str] | None = None) -> int:
    """Run mypy with mypy.ini, printing its output; returns its exit code (2 when it is missing)."""
    typeshed = mypy_typeshed()
    if typeshed is None:
        print(MISSING, flush=True)
        return 2
    prepare(typeshed)
    r = subprocess.run([PYTHON, '-m', 'mypy', '--config-file', 'mypy.ini', *(args or [])],
                       cwd=PROJECT, capture_output=True, text=True)
    sys.stdout.write((r.stdout + r.stderr).replace(LINKED, 'plugin/'))
    sys.stdout.flush()
    return r.returncode


if __name__ == '__main__':
    argv = sys.argv[1:]
    sys.exit(run(argv[1:] if argv[:1] == ['--'] else argv))
