# License: GPLv3 Copyright: the Book AI developers
"""Test session set-up. The suite runs inside calibre's own runtime, started by
dev/test.py (pytest through calibre-debug), with a fresh calibre config folder for the
session: on each host for the full run, or on this machine's calibre for the quick run.

What the tests share is in tests/helpers/ (imported as `helpers.NAME`: pytest.ini puts
tests/ on sys.path), and the fixtures below. A test module never imports another.

The quick run (`python3 dev/test.py --quick`, which selects `-m quick`) is every test that
needs nothing but calibre's runtime in this one process and takes no long time on purpose.
Which tests those are is worked out here from what each test uses (needs_more), never
written on the tests by hand: a new test is in the quick run unless it sits in a folder or
file below, uses a fixture below, or names (itself, through its fixtures or through the
tests' own functions it calls) a helper below, a Qt class or hypothesis.
"""

import inspect
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Generator, Iterator

import pytest
from calibre.constants import __version__ as calibre_version

pytest.register_assert_rewrite('helpers')  # the helpers' asserts explain themselves as the tests' do

from helpers.books import quick_start_epub  # noqa: E402
from helpers.project import HOST, PROJECT, TESTS, run_build  # noqa: E402
from helpers.sandbox import Result, Sandbox  # noqa: E402

if TYPE_CHECKING:
    from calibre.utils.config import JSONConfig
    from qt.core import QApplication

    from helpers.peers import LlamaServer

pytest_plugins = ('helpers.keyring_bus',)  # session_bus, gnome_keyring, no_session_bus


def pytest_configure(config: pytest.Config) -> None:
    cfg = os.environ.get('CALIBRE_CONFIG_DIRECTORY')
    if not cfg or not os.environ.get('CALIBRE_CACHE_DIRECTORY') or (
            Path(cfg).resolve() == Path.home().joinpath('.config', 'calibre').resolve()):
        raise pytest.UsageError(
            'Run the tests through dev/test.py: they need calibre\'s runtime and a throwaway '
            'CALIBRE_CONFIG_DIRECTORY and CALIBRE_CACHE_DIRECTORY, never your own calibre settings.')
    install_plugin_in_this_process(Path(cfg))


def install_plugin_in_this_process(config_dir: Path) -> None:
    """Install the plugin, as built from the sources under test, into this session's
    throwaway config, so that tests can import calibre_plugins.bookai.* in process."""
    stage = Path(tempfile.mkdtemp(prefix='bookai-stage-'))
    run_build('stage', stage)
    r = subprocess.run(['calibre-customize', '-b', str(stage)], capture_output=True, text=True)
    if r.returncode != 0:
        raise pytest.UsageError(f'could not install the plugin for the tests: {r.stdout}{r.stderr}')
    import calibre.customize.ui  # noqa: F401 (loads the installed plugins: calibre_plugins.bookai imports now)


def pytest_report_header(config: pytest.Config) -> str:
    return f'Book AI tests on host {HOST}: calibre {calibre_version}, Python {sys.version.split()[0]}'


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[None, object, None]:
    """With BOOKAI_NO_SKIPS set (CI, dev/test.py), a skipped test is a failed test:
    every prerequisite must be there."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get('BOOKAI_NO_SKIPS') and not hasattr(report, 'wasxfail'):
        report.outcome = 'failed'
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.longrepr = f'skipped, and skips are not allowed here: {reason}'


# ---------------------------------------------------------------------------------------------
# The quick run: what a test needs beyond calibre's runtime in this process, from what it uses.

# tests/FOLDER/ whose every test needs more
NOT_QUICK_FOLDERS = {
    'hosts': "calibre's real main window and E-book viewer, in processes of their own",
    'peers_check': 'the LLM peers dev/peers.py makes',
}
# test files whose tests take long on purpose: each pushes a bound (hundreds of MB, seconds of silence)
NOT_QUICK_FILES = {
    'providers/test_hostile_servers.py': 'servers that send without end or fall silent, up to the bounds',
    'grounding/test_hostile_books.py': 'zip bombs unpacked up to the bounds',
    'hostile/test_battery.py': 'every attack class against every entry point, each case in a process of its own',
}
# fixtures (as named, or through the fixtures they use) that need more
NOT_QUICK_FIXTURES = {
    'qapp': 'a Qt application',
    'sandbox': "calibre's programs, run in a calibre of the test's own",
    'session_bus': 'a D-Bus session bus (and GNOME Keyring)',
    'tiny': "llama.cpp's server with the tiny model",
    'embed': "llama.cpp's server with the embedding model",
}
# helpers that start something, named in a test's code, its fixtures' or the functions they call
NOT_QUICK_HELPERS = {
    'helpers.peers': {'LlamaServer', 'AiMock', 'sdk_python', 'use_sdks', 'sdk_dir', 'peer_path', 'peers_dir',
                      'tiny_server', 'RecordingProxy'},
    'helpers.sandbox': {'Sandbox'},
}
QT_MODULES = ('qt.', 'PyQt')  # a Qt class named in a test's code: it runs Qt
# and anything of hypothesis: a fuzzing run, whose volume (thousands of inputs) is the point


# The noai host is forky's calibre and Python with calibre's AI removed (dev/strip_calibre_ai.py):
# what never reaches calibre's AI runs there exactly as on forky. These run on forky only, and are
# left out on noai (deselected: counted as such, never as passed): the providers' wire formats,
# the bottom layer, the book's text and passages (grounding), the conversation layer, the library
# searched by meaning (library_search), AI metadata (metadata), and the hostile battery (its entries are Book AI's own
# functions, files and servers' bytes). noai runs what puts the plugin into calibre without its
# AI: the hosts' real windows, the main window, the viewer, the command line, the settings, and
# the carry-over from calibre's AI settings.
SAME_AS_ON_FORKY = ('tests/core/', 'tests/providers/', 'tests/grounding/', 'tests/conversation/',
                    'tests/library_search/', 'tests/metadata/', 'tests/hostile/test_battery.py')
# ... but for the tests that compare Book AI with calibre's own AI, which noai has not
REACHES_CALIBRES_AI = ('tests/providers/test_openrouter.py',)

# The providers' wire formats and the battery's attacks on servers' bytes are Book AI's own code
# over Python's http.client, json and ssl: calibre's code never runs in them (but for the
# comparison with calibre's own AI, the carry-over of calibre's settings, and a provider's image
# answer, decoded by calibre's image code). They run on bookworm (Python 3.11) and forky (3.14),
# the oldest and newest Python of the hosts, and are deselected on trixie (3.13, between them).
ON_EVERY_PYTHON = ('tests/providers/', 'tests/hostile/test_battery.py::test_hostile[wire/')
REACHES_CALIBRE = (*REACHES_CALIBRES_AI, 'tests/providers/test_venice.py')


def same_as_on_forky(item: pytest.Item) -> bool:
    nodeid = item.nodeid
    return nodeid.startswith(SAME_AS_ON_FORKY) and not nodeid.startswith(REACHES_CALIBRES_AI)


def same_on_every_python(item: pytest.Item) -> bool:
    nodeid = item.nodeid
    return (nodeid.startswith(ON_EVERY_PYTHON) and not nodeid.startswith(REACHES_CALIBRE)
            and 'crafted_image' not in nodeid)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `quick` the tests that need no more than calibre's runtime in this process; leave out
    (deselect, so that they are not counted as passed) those marked `hosts` for other hosts, on
    noai those that run there as on forky (SAME_AS_ON_FORKY), and on trixie those that run the
    same on every Python (ON_EVERY_PYTHON)."""
    elsewhere = [item for item in items if (m := item.get_closest_marker('hosts')) and HOST not in m.args
                 or HOST == 'noai' and same_as_on_forky(item) and not m
                 or HOST == 'trixie' and same_on_every_python(item) and not m]
    if elsewhere:
        config.hook.pytest_deselected(items=elsewhere)
        items[:] = [item for item in items if item not in elsewhere]
    for item in items:
        if not needs_more(item):
            item.add_marker(pytest.mark.quick)


def needs_more(item: pytest.Item) -> str:
    """What item needs beyond calibre's runtime in this process, in words; '' for nothing."""
    path = Path(str(item.fspath)).relative_to(TESTS)
    if path.parts[0] in NOT_QUICK_FOLDERS:
        return NOT_QUICK_FOLDERS[path.parts[0]]
    if path.as_posix() in NOT_QUICK_FILES:
        return NOT_QUICK_FILES[path.as_posix()]
    for name in getattr(item, 'fixturenames', ()):
        if name in NOT_QUICK_FIXTURES:
            return NOT_QUICK_FIXTURES[name]
    function = getattr(item, 'function', None)
    if getattr(function, 'is_hypothesis_test', False):
        return 'fuzzing (hypothesis)'
    functions = [function] if function else []
    fixtures = getattr(item, '_fixtureinfo', None)  # pytest's record of the fixtures the test uses, 7.2 to 9
    if fixtures is not None:
        functions += [d.func for defs in fixtures.name2fixturedefs.values() for d in defs]
    seen = set()
    for fn in functions:
        for obj in used_by(fn, seen):
            module = (obj.__name__ if inspect.ismodule(obj) else getattr(obj, '__module__', None)) or ''
            if getattr(obj, '__name__', None) in NOT_QUICK_HELPERS.get(module, ()):
                return f'{module}.{obj.__name__}'
            if module.startswith(QT_MODULES):
                return f'Qt ({obj.__name__})'
            if module.startswith('hypothesis'):
                return 'fuzzing (hypothesis)'
    return ''


def used_by(fn: Callable, seen: set) -> Iterator[object]:
    """The module-level objects fn names (its nested functions included), and, through the
    functions and classes of the tests' own that it names, the objects those name."""
    fn = inspect.unwrap(fn)
    code = getattr(fn, '__code__', None)
    if code is None or code in seen:
        return
    seen.add(code)
    for name in names_in(code):
        obj = fn.__globals__.get(name)
        if obj is None:
            continue
        yield obj
        if ours(obj) and inspect.isfunction(obj):
            yield from used_by(obj, seen)
        elif ours(obj) and inspect.isclass(obj):
            for member in vars(obj).values():
                if inspect.isfunction(member):
                    yield from used_by(member, seen)


def names_in(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= names_in(const)
    return names


def ours(obj: object) -> bool:
    """A function or class of the tests' own (a test module's, conftest's or a helper's)."""
    module = sys.modules.get(getattr(obj, '__module__', None) or '')
    path = getattr(module, '__file__', None)
    return bool(path) and Path(path).resolve().is_relative_to(TESTS)


# ---------------------------------------------------------------------------------------------
# Fixtures

@pytest.fixture(scope='session')
def host() -> str:
    return HOST


@pytest.fixture(scope='session')
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp('session')


@pytest.fixture(scope='session')
def plugin_zip(session_dir: Path) -> Path:
    """The plugin zip, built by build.py from the sources under test."""
    out = session_dir / 'dist'
    run_build('zip', out)
    (path,) = out.glob('bookai-*.zip')
    return path


@pytest.fixture(scope='session')
def staged_plugin(session_dir: Path) -> Path:
    return Path(run_build('stage', session_dir / 'stage').strip().splitlines()[-1])


@pytest.fixture(scope='session')
def artifacts() -> Path:
    """Where screenshots and other things worth looking at go: build/test-output/<host>/."""
    d = PROJECT / 'build' / 'test-output' / HOST
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path / 'sandbox')


@pytest.fixture
def cli(sandbox: Sandbox, plugin_zip: Path) -> Callable[..., Result]:
    """The plugin installed in the sandbox's calibre; cli(*args, stdin=None, env=None) runs its
    command line there (calibre-debug -r "Book AI" -- args)."""
    sandbox.install(plugin_zip)

    def run(*args, stdin=None, env=None):
        return sandbox.run(['calibre-debug', '-r', 'Book AI', '--'] + list(args), input=stdin, env=env)
    return run


@pytest.fixture(scope='module')
def embed() -> Iterator['LlamaServer']:
    """llama-server with the real embedding model (all-MiniLM-L6-v2, 384 dimensions), one for the
    test module: what the library's search by meaning is tested against."""
    from helpers.peers import LlamaServer
    with LlamaServer('embed') as server:
        yield server


@pytest.fixture(scope='module')
def tiny(request: pytest.FixtureRequest) -> Iterator['LlamaServer']:
    """llama-server with the tiny model (helpers.peers.tiny_server), one for the test module, as
    the module says: TINY_TOKENS (the most tokens of an answer; the server's default when not
    said), TINY_CONTEXT (4096), TINY_ARGS (more arguments)."""
    from helpers.peers import tiny_server
    m = request.module
    with tiny_server(getattr(m, 'TINY_TOKENS', None), getattr(m, 'TINY_CONTEXT', 4096),
                     *getattr(m, 'TINY_ARGS', ())) as server:
        yield server


@pytest.fixture(autouse=True)
def refused_windows_forgotten() -> Iterator[None]:
    """What a service refused as too long is remembered for calibre's life (providers.context.
    REFUSED); each test starts without it, as calibre starts, since tests share their peers."""
    yield
    if 'calibre_plugins.bookai.providers.context' in sys.modules:
        sys.modules['calibre_plugins.bookai.providers.context'].REFUSED.clear()


@pytest.fixture
def library(sandbox: Sandbox) -> Path:
    """A calibre library of the test's own, holding calibre's Quick Start Guide."""
    return sandbox.make_library(quick_start_epub())


@pytest.fixture(scope='session')
def qapp() -> 'QApplication':
    """calibre's QApplication (offscreen), for widgets tested in this process."""
    # lazy: Qt only in the sessions that show widgets (not the quick run)
    from calibre.gui2 import Application
    from qt.core import QApplication
    return QApplication.instance() or Application([])


@pytest.fixture
def prefs() -> Iterator['JSONConfig']:
    """The plugin's preferences, as they were before the test once it is over."""
    # lazy: the plugin is importable once pytest_configure has installed it
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    p = plugin_prefs()
    saved = {k: p[k] for k in p.defaults}
    yield p
    for k, v in saved.items():
        p[k] = v
