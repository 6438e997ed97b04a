#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Try Book AI without touching your own calibre: build it, and start calibre with
it on a demo library, in a sandbox config under build/demo/.

    sudo python3 dev/demo.py            installs calibre if missing (Debian), then runs
    python3 dev/demo.py --fresh         start again from an empty sandbox

With a display, calibre's main window opens on the demo library. Without one,
calibre starts headless and a screenshot of its window is saved and its path
printed. Your own calibre settings and libraries are never used.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
DEMO = PROJECT / 'build' / 'demo'
QUICK_START = Path('/usr/share/calibre/quick_start')
DEMO_LANGUAGES = ('eng', 'deu', 'fra', 'ita')


def say(*args):
    print('[demo]', *args, flush=True)


def ensure_calibre():
    if shutil.which('calibre-debug'):
        return
    if os.geteuid() != 0:
        raise SystemExit('calibre is not installed: run this once with sudo, or install it yourself')
    say('installing calibre from Debian')
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    subprocess.run(['apt-get', 'update', '-qq'], check=True, env=env)
    subprocess.run(['apt-get', 'install', '-y', '-qq', 'calibre'], check=True, env=env, stdout=subprocess.DEVNULL)


def sandbox_env():
    runtime = DEMO / 'runtime'
    runtime.mkdir(parents=True, exist_ok=True)
    runtime.chmod(0o700)
    env = dict(os.environ, CALIBRE_CONFIG_DIRECTORY=str(DEMO / 'config'), XDG_RUNTIME_DIR=str(runtime))
    if os.geteuid() == 0:
        env['QTWEBENGINE_DISABLE_SANDBOX'] = '1'
    if not (env.get('DISPLAY') or env.get('WAYLAND_DISPLAY')):
        env['QT_QPA_PLATFORM'] = 'offscreen'
    return env


def run(argv, env, **kw):
    return subprocess.run([str(a) for a in argv], env=env, check=True, **kw)


def make_library(env):
    library = DEMO / 'library'
    if (library / 'metadata.db').exists():
        return library
    books = [QUICK_START / f'{lang}.epub' for lang in DEMO_LANGUAGES if (QUICK_START / f'{lang}.epub').exists()]
    if not books:
        raise SystemExit(f'calibre\'s Quick Start Guide EPUBs are not in {QUICK_START}')
    say(f'demo library: {len(books)} books in {library}')
    # -d: the guides share a title, keep every language
    run(['calibredb', '--with-library', library, 'add', '-d'] + books, env, stdout=subprocess.DEVNULL)
    return library


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--fresh', action='store_true', help='delete the sandbox first')
    a = ap.parse_args(argv)
    ensure_calibre()
    if a.fresh and DEMO.exists():
        shutil.rmtree(DEMO)
    env = sandbox_env()
    out = subprocess.run([sys.executable, PROJECT / 'build.py'], check=True, capture_output=True, text=True).stdout
    zip_path = Path(out.split()[0])
    say('built', out.strip())
    run(['calibre-customize', '-a', zip_path], env, stdout=subprocess.DEVNULL)
    run(['calibre-debug', '-c', "from calibre.utils.config import dynamic; dynamic.set('welcome_wizard_was_run', True)"], env)
    library = make_library(env)
    if env.get('QT_QPA_PLATFORM') != 'offscreen':
        say('starting calibre; Book AI is on the toolbar, next to View')
        return subprocess.run(['calibre', '--with-library', str(library)], env=env).returncode
    shot = DEMO / 'main-window.png'
    report_path = DEMO / 'main-window.json'
    say('no display here: starting calibre headless')
    probe = PROJECT / 'tests' / 'hosts' / 'probes' / 'main_window.py'
    run(['calibre-debug', '-e', probe, library], dict(env, BOOKAI_PROBE_OUT=str(report_path),
        BOOKAI_PROBE_SCREENSHOT=str(shot)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = json.loads(report_path.read_text())
    ai = report.get('book_ai') or {}
    say(f'calibre started with {len(report.get("iactions", []))} actions; Book AI on the toolbar: '
        f'{ai.get("on_main_toolbar", False)}; its menu: {", ".join(ai.get("menu") or [])}')
    say(f'screenshot of calibre\'s window: {shot}')
    return 0 if ai.get('on_main_toolbar') else 1


if __name__ == '__main__':
    sys.exit(main())
