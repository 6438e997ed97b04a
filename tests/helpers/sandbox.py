# License: GPLv3 Copyright: the Book AI developers
"""A calibre sandbox for tests: its own config folder, and calibre's real tools run in it.

Every test that installs the plugin or starts a calibre program gets a fresh
sandbox, so no test sees another's settings.
"""

import importlib.util
import json
import os
import subprocess
from pathlib import Path
from types import ModuleType

from helpers.project import PROJECT, TESTS

# The probes: scripts run under calibre-debug in calibre's real main window or viewer, each
# writing a JSON report (tests/hosts/probes/*.py; they import only each other).
PROBES = TESTS / 'hosts' / 'probes'


class Result:
    """What a program run in the sandbox did: its exit code and its output."""

    def __init__(self, proc: subprocess.CompletedProcess):
        self.returncode: int = proc.returncode
        self.stdout: str = proc.stdout
        self.stderr: str = proc.stderr

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def __repr__(self) -> str:
        return f'<exit {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}>'


class Sandbox:
    """A calibre config, cache and runtime folder under root, and calibre's programs run with them."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.config = self.root / 'config'
        self.cache = self.root / 'cache'
        self.runtime = self.root / 'runtime'
        for d in (self.config, self.cache, self.runtime):
            d.mkdir(parents=True, exist_ok=True)
        self.runtime.chmod(0o700)

    def env(self, **extra: object) -> dict[str, str]:
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

    def run(self, argv: list, timeout: float = 300, env: dict | None = None, **kw) -> Result:
        proc = subprocess.run([str(a) for a in argv], env=self.env(**(env or {})), capture_output=True,
                              text=True, timeout=timeout, cwd=str(PROJECT), **kw)
        return Result(proc)

    def customize(self, *args: object) -> Result:
        return self.run(['calibre-customize'] + list(args))

    def debug(self, code: str, env: dict | None = None) -> Result:
        return self.run(['calibre-debug', '-c', code], env=env)

    def install(self, zip_path: Path) -> Result:
        r = self.customize('-a', zip_path)
        assert r.returncode == 0, r
        return r

    def installed_plugins(self) -> str:
        r = self.customize('-l')
        assert r.returncode == 0, r
        return r.stdout

    def make_library(self, *books: Path) -> Path:
        lib = self.root / 'library'
        r = self.run(['calibredb', '--with-library', lib, 'add'] + [str(b) for b in books])
        assert r.returncode == 0, r
        return lib

    def convert(self, src: Path, dest: Path, timeout: float = 300) -> Path:
        """Convert src to dest (the format by its extension) with calibre's ebook-convert."""
        r = self.run(['ebook-convert', src, dest], timeout=timeout)
        assert r.returncode == 0 and Path(dest).exists(), r
        return Path(dest)

    def gprefs(self, **values: object) -> None:
        """Set calibre GUI preferences, as a user who changed them in calibre would have."""
        code = ('import json, sys; from calibre.gui2 import gprefs\n'
                f'for k, v in json.loads({json.dumps(json.dumps(values))}).items(): gprefs[k] = v')
        r = self.debug(code)
        assert r.returncode == 0, r

    def probe(self, name: str, args: tuple | list = (), timeout: float = 180,
              env: dict | None = None) -> tuple[dict, Result]:
        """Run tests/hosts/probes/NAME.py under calibre-debug; returns (report dict, Result)."""
        out = self.root / f'probe-{name}.json'
        out.unlink(missing_ok=True)
        extra = {'BOOKAI_PROBE_OUT': out}
        extra.update(env or {})
        try:
            r = self.run(['calibre-debug', '-e', PROBES / f'{name}.py'] + list(args), timeout=timeout, env=extra)
        except subprocess.TimeoutExpired as e:  # what the probe's watchdog wrote says where it was
            said = json.loads(out.read_text()) if out.exists() else None
            stacks = Path(f'{out}.stacks')
            stacks = stacks.read_text(errors='replace')[-6000:] if stacks.exists() else ''
            raise AssertionError(f'the {name} probe did not end within {timeout} s; its report: {said}; '
                                 f'its threads, by faulthandler: {stacks}; '
                                 f'its output ends: {str(e.stdout or "")[-2000:]} {str(e.stderr or "")[-2000:]}') from None
        report = json.loads(out.read_text()) if out.exists() else None
        assert report is not None, f'the {name} probe wrote no report: {r}'
        return report, r


def probe_module(name: str) -> ModuleType:
    """tests/hosts/probes/NAME.py imported as a module, for a test that reads a report
    the way the probe itself does (loaded by its path: the probes are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f'bookai_probe_{name}', PROBES / f'{name}.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tracebacks(text: str) -> list[str]:
    """The Python tracebacks in a program's output."""
    return [chunk for chunk in text.split('Traceback (most recent call last):')[1:]]
