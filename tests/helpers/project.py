# License: GPLv3 Copyright: the Book AI developers
"""Where the project is, which host the suite runs on, and build.py, the one place that
knows the plugin's version and its zip's contents."""

import functools
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parent.parent
PROJECT = TESTS.parent
PLUGIN_NAME = 'Book AI'
# The host this run is on (dev/test.py sets it: bookworm, trixie, forky, noai; 'quick' for --quick).
HOST = os.environ.get('BOOKAI_HOST', 'unknown')


@functools.lru_cache(maxsize=None)
def build_script() -> ModuleType:
    """build.py, imported as a module."""
    spec = importlib.util.spec_from_file_location('bookai_build', PROJECT / 'build.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_build(command: str, out: Path) -> str:
    """Run build.py COMMAND --out OUT with this Python; returns what it printed."""
    r = subprocess.run([sys.executable, str(PROJECT / 'build.py'), command, '--out', str(out)],
                       capture_output=True, text=True, cwd=str(PROJECT))
    assert r.returncode == 0, r.stderr
    return r.stdout
