# License: GPLv3 Copyright: the Book AI developers
"""Test session set-up. The suite runs inside calibre's own runtime, started by
dev/test.py on each host (pytest through calibre-debug), with a fresh calibre
config folder for the session.
"""

import os
import sys
from pathlib import Path

import pytest

from sandbox import PROJECT, Sandbox, quick_start_epub, run_build

HOST = os.environ.get('BOOKAI_HOST', 'unknown')


def pytest_configure(config):
    cfg = os.environ.get('CALIBRE_CONFIG_DIRECTORY')
    if not cfg or not os.environ.get('CALIBRE_CACHE_DIRECTORY') or (
            Path(cfg).resolve() == Path.home().joinpath('.config', 'calibre').resolve()):
        raise pytest.UsageError(
            'Run the tests through dev/test.py: they need calibre\'s runtime and a throwaway '
            'CALIBRE_CONFIG_DIRECTORY and CALIBRE_CACHE_DIRECTORY, never your own calibre settings.')
    install_plugin_in_this_process(Path(cfg))


def install_plugin_in_this_process(config_dir):
    """Install the plugin, as built from the sources under test, into this session's
    throwaway config, so that tests can import calibre_plugins.bookai.* in process."""
    import subprocess
    import tempfile
    stage = Path(tempfile.mkdtemp(prefix='bookai-stage-'))
    run_build('stage', stage)
    r = subprocess.run(['calibre-customize', '-b', str(stage)], capture_output=True, text=True)
    if r.returncode != 0:
        raise pytest.UsageError(f'could not install the plugin for the tests: {r.stdout}{r.stderr}')
    import calibre.customize.ui  # noqa: F401 (loads the installed plugins: calibre_plugins.bookai imports now)


def pytest_report_header(config):
    from calibre.constants import __version__
    return f'Book AI tests on host {HOST}: calibre {__version__}, Python {sys.version.split()[0]}'


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With BOOKAI_NO_SKIPS set (CI, dev/test.py), a skipped test is a failed test:
    every prerequisite must be there."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get('BOOKAI_NO_SKIPS') and not hasattr(report, 'wasxfail'):
        report.outcome = 'failed'
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.longrepr = f'skipped, and skips are not allowed here: {reason}'


@pytest.fixture(scope='session')
def host():
    return HOST


@pytest.fixture(scope='session')
def session_dir(tmp_path_factory):
    return tmp_path_factory.mktemp('session')


@pytest.fixture(scope='session')
def plugin_zip(session_dir):
    """The plugin zip, built by build.py from the sources under test."""
    out = session_dir / 'dist'
    run_build('zip', out)
    (path,) = out.glob('bookai-*.zip')
    return path


@pytest.fixture(scope='session')
def staged_plugin(session_dir):
    return Path(run_build('stage', session_dir / 'stage').strip().splitlines()[-1])


@pytest.fixture(scope='session')
def artifacts():
    """Where screenshots and other things worth looking at go: build/test-output/<host>/."""
    d = PROJECT / 'build' / 'test-output' / HOST
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture
def sandbox(tmp_path):
    return Sandbox(tmp_path / 'sandbox')


@pytest.fixture
def cli(sandbox, plugin_zip):
    """The plugin installed in the sandbox's calibre; cli(*args, stdin=None, env=None) runs its
    command line there (calibre-debug -r "Book AI" -- args)."""
    sandbox.install(plugin_zip)

    def run(*args, stdin=None, env=None):
        return sandbox.run(['calibre-debug', '-r', 'Book AI', '--'] + list(args), input=stdin, env=env)
    return run


@pytest.fixture
def library(sandbox):
    """A calibre library of the test's own, holding calibre's Quick Start Guide."""
    return sandbox.make_library(quick_start_epub())


@pytest.fixture(scope='session')
def qapp():
    """calibre's QApplication (offscreen), for widgets tested in this process."""
    from calibre.gui2 import Application
    from qt.core import QApplication
    return QApplication.instance() or Application([])


@pytest.fixture
def prefs():
    """The plugin's preferences, as they were before the test once it is over."""
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    p = plugin_prefs()
    saved = {k: p[k] for k in p.defaults}
    yield p
    for k, v in saved.items():
        p[k] = v
