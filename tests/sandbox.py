# License: GPLv3 Copyright: the Book AI developers
"""A calibre sandbox for tests: its own config folder, and calibre's real tools run in it.

Every test that installs the plugin or starts a calibre program gets a fresh
sandbox, so no test sees another's settings.
"""

import functools
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PROJECT = TESTS.parent
PROBES = TESTS / 'hosts' / 'probes'
PLUGIN_NAME = 'Book AI'


@functools.lru_cache(maxsize=None)
def build_script():
    """build.py, imported as a module: the one place that knows the version and the zip's contents."""
    spec = importlib.util.spec_from_file_location('bookai_build', PROJECT / 'build.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_build(command, out):
    """Run build.py COMMAND --out OUT with this Python; returns what it printed."""
    r = subprocess.run([sys.executable, str(PROJECT / 'build.py'), command, '--out', str(out)],
                       capture_output=True, text=True, cwd=str(PROJECT))
    assert r.returncode == 0, r.stderr
    return r.stdout


def quick_start_epub(lang='eng'):
    """calibre's Quick Start Guide, a real EPUB that Debian's calibre ships."""
    for base in ('/usr/share/calibre/quick_start', '/usr/lib/calibre/resources/quick_start'):
        p = Path(base) / f'{lang}.epub'
        if p.exists():
            return p
    raise FileNotFoundError(f'calibre\'s Quick Start Guide ({lang}.epub) is not installed')


class Result:

    def __init__(self, proc):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    @property
    def output(self):
        return self.stdout + self.stderr

    def __repr__(self):
        return f'<exit {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}>'


class Sandbox:

    def __init__(self, root: Path):
        self.root = Path(root)
        self.config = self.root / 'config'
        self.cache = self.root / 'cache'
        self.runtime = self.root / 'runtime'
        for d in (self.config, self.cache, self.runtime):
            d.mkdir(parents=True, exist_ok=True)
        self.runtime.chmod(0o700)

    def env(self, **extra):
        env = dict(os.environ)
        env.update({
            'CALIBRE_CONFIG_DIRECTORY': str(self.config),
            'CALIBRE_CACHE_DIRECTORY': str(self.cache),
            'XDG_RUNTIME_DIR': str(self.runtime),
            'QT_QPA_PLATFORM': 'offscreen',
            'QTWEBENGINE_DISABLE_SANDBOX': '1',
            'PYTHONDONTWRITEBYTECODE': '1',
        })
        env.pop('CALIBRE_OVERRIDE_LANG', None)
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def run(self, argv, timeout=300, env=None, **kw):
        proc = subprocess.run([str(a) for a in argv], env=self.env(**(env or {})), capture_output=True,
                              text=True, timeout=timeout, cwd=str(PROJECT), **kw)
        return Result(proc)

    def customize(self, *args):
        return self.run(['calibre-customize'] + list(args))

    def debug(self, code, env=None):
        return self.run(['calibre-debug', '-c', code], env=env)

    def install(self, zip_path):
        r = self.customize('-a', zip_path)
        assert r.returncode == 0, r
        return r

    def installed_plugins(self):
        r = self.customize('-l')
        assert r.returncode == 0, r
        return r.stdout

    def make_library(self, *books):
        lib = self.root / 'library'
        r = self.run(['calibredb', '--with-library', lib, 'add'] + [str(b) for b in books])
        assert r.returncode == 0, r
        return lib

    def convert(self, src, dest, timeout=300):
        """Convert src to dest (the format by its extension) with calibre's ebook-convert."""
        r = self.run(['ebook-convert', src, dest], timeout=timeout)
        assert r.returncode == 0 and Path(dest).exists(), r
        return Path(dest)

    def gprefs(self, **values):
        """Set calibre GUI preferences, as a user who changed them in calibre would have."""
        code = ('import json, sys; from calibre.gui2 import gprefs\n'
                f'for k, v in json.loads({json.dumps(json.dumps(values))}).items(): gprefs[k] = v')
        r = self.debug(code)
        assert r.returncode == 0, r

    def probe(self, name, args=(), timeout=180, env=None):
        """Run tests/hosts/probes/NAME.py under calibre-debug; returns (report dict, Result)."""
        out = self.root / f'probe-{name}.json'
        out.unlink(missing_ok=True)
        extra = {'BOOKAI_PROBE_OUT': out}
        extra.update(env or {})
        r = self.run(['calibre-debug', '-e', PROBES / f'{name}.py'] + list(args), timeout=timeout, env=extra)
        report = json.loads(out.read_text()) if out.exists() else None
        assert report is not None, f'the {name} probe wrote no report: {r}'
        return report, r


# A small EPUB made by a test: its container, its chapters' XHTML, its package.
CONTAINER = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
             '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
             '</rootfiles></container>')
XHTML = '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title>' \
        '</head><body>{body}</body></html>'


def opf(chapters):
    items = ''.join(f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
                    for i in range(len(chapters)))
    refs = ''.join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    return (f'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f'<metadata/><manifest>{items}</manifest><spine>{refs}</spine></package>')


def make_epub(path, chapters, container=CONTAINER, package=None, method=zipfile.ZIP_DEFLATED):
    """An EPUB of chapters: each an XHTML body (str), or bytes used as the whole file."""
    with zipfile.ZipFile(path, 'w', method) as zf:
        zf.writestr('mimetype', 'application/epub+zip', compress_type=zipfile.ZIP_STORED)
        zf.writestr('META-INF/container.xml', container)
        zf.writestr('OEBPS/content.opf', package if package is not None else opf(chapters))
        for i, body in enumerate(chapters):
            zf.writestr(f'OEBPS/c{i}.xhtml', body if isinstance(body, bytes) else XHTML.format(body=body))
    return path


def tracebacks(text):
    """The Python tracebacks in a program's output."""
    return [chunk for chunk in text.split('Traceback (most recent call last):')[1:]]



class ViewAction:
    """Stands for calibre's View action: records what would be opened in the E-book viewer."""

    def __init__(self):
        self.opened = []

    def view_format_by_id(self, book_id, fmt, open_at=None):
        self.opened.append((book_id, fmt, open_at))


def stand_in_gui(job_manager=False):
    """What Book AI's windows need of calibre's main window: the View action and, with job_manager,
    calibre's real job manager (real conversion jobs in worker processes)."""
    from qt.core import QWidget
    gui = QWidget()
    gui.iactions = {'View': ViewAction()}
    if job_manager:
        from calibre.gui2.jobs import JobManager
        gui.job_manager = JobManager()
    return gui


def wait_until(condition, timeout=120):
    """Run Qt's events until condition() holds; an AssertionError after timeout seconds."""
    import time
    from qt.core import QApplication, QEventLoop
    end = time.monotonic() + timeout
    while not condition():
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        if time.monotonic() > end:
            raise AssertionError('timed out waiting')
        time.sleep(0.005)
