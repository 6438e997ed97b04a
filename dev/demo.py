#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Try Book AI without touching your own calibre, with no account and no network:
build it, start a local model, and ask about a book of a demo library, in a
sandbox config under build/demo/.

    python3 dev/demo.py                 installs what is missing (Debian), then runs
    python3 dev/demo.py --gui           then opens calibre's main window on the demo library
    python3 dev/demo.py --fresh         start again from an empty sandbox

Run it as root, or as a user with sudo: it needs root only to install what this
machine lacks from Debian (dev/machine.py), and asks sudo for that alone.

What it does: builds the plugin and installs it into the sandbox config; makes
llama.cpp's server and the Qwen2.5-Coder-0.5B-Instruct model (dev/peers.py: built
and downloaded the first time, about 8 minutes, then cached); makes a demo library
of calibre's Quick Start Guides; configures the "OpenAI compatible" provider for
the local server; and runs `calibre-debug -r "Book AI" -- ask` on a demo book: a
summary and a question, each with passages of the book, so the answers stream into
this terminal with the passages they cite. Your own calibre settings and libraries
are never used.

With --gui and a display, calibre opens and the local model keeps answering
until calibre closes. Without a display, calibre starts headless and a screenshot
of its window is saved and its path printed.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
DEMO = Path(os.environ.get('BOOKAI_DEMO_DIR') or PROJECT / 'build' / 'demo')
QUICK_START = Path('/usr/share/calibre/quick_start')
DEMO_LANGUAGES = ('eng', 'deu', 'fra', 'ita')


def say(*args):
    print('[demo]', *args, flush=True)


sys.path.insert(0, str(PROJECT / 'dev'))
import machine  # noqa: E402
import peers  # noqa: E402

# The model the demo asks, and how llama.cpp's server runs it: greedy (temperature 0), with the
# tokens and the runs of tokens of its answer so far made less likely again (a repeat penalty and
# llama.cpp's DRY sampler: a model this small, asked for paragraphs, otherwise repeats a sentence
# until the length limit), up to 8192 tokens of
# context (a book's passages fill about 1,600), answers of up to 700 tokens, and each answer
# worked out from its whole prompt, with no cache of an earlier one: reusing a cached beginning
# changes the order of the sums, and with it the words, so the command line and the window
# would answer the same question differently.
MODEL = 'qwen'
MODEL_NAME = 'Qwen2.5-Coder-0.5B-Instruct'
SERVER_ARGS = ('--temp', '0', '--repeat-penalty', '1.1', '--dry-multiplier', '0.8', '-n', '700', '--no-cache-prompt',
               '--cache-ram', '0')


def peers_folder():
    """Where dev/peers.py keeps llama.cpp's server and the model: the tests' folder when
    run by them ($BOOKAI_PEERS), else the machine's cache, else one in the demo folder."""
    if os.environ.get('BOOKAI_PEERS'):
        return os.environ['BOOKAI_PEERS']
    peers_dir = os.environ.get('BOOKAI_PEERS_DIR', '/var/cache/bookai-peers')
    if not os.access(os.path.dirname(peers_dir.rstrip('/')) or '/', os.W_OK) and not os.path.isdir(peers_dir):
        peers_dir = str(DEMO / 'peers')
    return peers_dir


def model_is_made(peers_dir):
    return Path(peers_dir, 'bin', 'llama-server').exists() and Path(peers_dir, 'models', peers.QWEN_GGUF[0]).exists()


def ensure_tools():
    """calibre, and what dev/peers.py needs to build llama.cpp's server (when not made yet)."""
    machine.install(machine.DEMO if not model_is_made(peers_folder()) else ('calibre',))


def local_model():
    """llama.cpp's server with the demo's model, made once (dev/peers.py); started by `with`."""
    peers_dir = peers_folder()
    say(f'local model: llama.cpp\'s server with {MODEL_NAME} (made the first time, then cached in {peers_dir})')
    subprocess.run([sys.executable, PROJECT / 'dev' / 'peers.py', 'setup', 'llama-server', MODEL], check=True,
                   env=dict(os.environ, BOOKAI_PEERS_DIR=peers_dir), stdout=subprocess.DEVNULL)
    os.environ['BOOKAI_PEERS'] = peers_dir
    sys.path.insert(0, str(PROJECT / 'tests'))
    from helpers.peers import LlamaServer
    return LlamaServer(MODEL, alias=MODEL_NAME, ctx=8192, extra_args=SERVER_ARGS, start=False)


def book_ai(*args, env, **kw):
    return subprocess.run(['calibre-debug', '-r', 'Book AI', '--'] + [str(a) for a in args], env=env, **kw)


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


DEMO_LOOKUPS = 3  # when on (the screenshots): a few show them; the 0.5B model wastes most of eight


def set_lookups(on):
    """The demo's setting for lookups (Settings, Sent to the AI). Off for the demo's own answers: a
    0.5B model wastes most lookups, and each sends the whole prompt again, which would make the
    first command take many minutes on a laptop's cores; at most DEMO_LOOKUPS when on."""
    path = DEMO / 'config' / 'plugins' / 'bookai.json'
    data = json.loads(path.read_text(encoding='utf-8')) if path.exists() else {}
    data['lookups'] = bool(on)
    data['lookup_calls'] = DEMO_LOOKUPS
    path.write_text(json.dumps(data, indent=2, sort_keys=True), encoding='utf-8')
    path.chmod(0o600)


def run(argv, env, **kw):
    return subprocess.run([str(a) for a in argv], env=env, check=True, **kw)


GROUNDED = 'How do I convert an ebook to another format?'


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
    ap.add_argument('--gui', action='store_true', help='then open calibre on the demo library')
    a = ap.parse_args(argv)
    ensure_tools()
    if a.fresh and DEMO.exists():
        shutil.rmtree(DEMO)
    env = sandbox_env()
    out = subprocess.run([sys.executable, PROJECT / 'build.py', 'zip', '--out', DEMO / 'dist'], check=True,
                         capture_output=True, text=True).stdout
    zip_path = Path(out.split()[0])
    say('built', out.strip())
    run(['calibre-customize', '-a', zip_path], env, stdout=subprocess.DEVNULL)
    run(['calibre-debug', '-c', "from calibre.utils.config import dynamic; dynamic.set('welcome_wizard_was_run', True)"], env)
    library = make_library(env)
    with local_model() as server:
        book_ai('configure', 'OpenAI compatible', f'base_url={server.base_url}/v1', f'model={MODEL_NAME}', '--use',
                env=env, check=True, stdout=subprocess.DEVNULL)
        set_lookups(False)
        say('lookups are off for this small model (Settings, Sent to the AI): a larger one looks things up')
        question = 'Summarize (a quick action), with passages of the book'
        say(f'asking {MODEL_NAME} about book 1 of the demo library: {question}')
        print(flush=True)
        r = book_ai('ask', '--library', library, '--book', 1, '--action', 'summarize', '--scope', 'book', env=env)
        print(flush=True)
        if r.returncode != 0:
            say('the answer failed: see the sentence above')
            return r.returncode
        say('that answer came from the model on this computer; nothing left it')
        say(f'and with passages of the book itself, cited: {GROUNDED}')
        print(flush=True)
        r = book_ai('ask', '--library', library, '--book', 1, '--prompt', GROUNDED, '--scope', 'book', env=env)
        print(flush=True)
        if r.returncode != 0:
            say('the answer failed: see the sentence above')
            return r.returncode
        if a.gui:
            return open_calibre(library, env)
    say('to try the window too: python3 dev/demo.py --gui')
    return 0


def open_calibre(library, env):
    if env.get('QT_QPA_PLATFORM') != 'offscreen':
        say('starting calibre; Book AI is on the toolbar, next to View')
        return subprocess.run(['calibre', '--with-library', str(library)], env=env).returncode
    shot = DEMO / 'main-window.png'
    report_path = DEMO / 'main-window.json'
    say('no display here: starting calibre headless')
    probe = PROJECT / 'tests' / 'hosts' / 'probes' / 'main_window.py'
    # the probe selects book 1, opens Discuss and clicks the Summarize quick action, then asks
    # GROUNDED with passages of the whole book
    run(['calibre-debug', '-e', probe, library], dict(env, BOOKAI_PROBE_OUT=str(report_path),
        BOOKAI_PROBE_SCREENSHOT=str(shot), BOOKAI_PROBE_DISCUSS='Summarize', BOOKAI_PROBE_DISCUSS_SCOPE='book',
        BOOKAI_PROBE_SHOTS=str(DEMO),
        BOOKAI_PROBE_GROUNDED=GROUNDED, BOOKAI_PROBE_TIMEOUT='600'),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = json.loads(report_path.read_text())
    ai = report.get('book_ai') or {}
    menu = [t.replace('&', '').split('\t')[0] for t in ai.get('menu') or []]
    say(f'calibre started with {len(report.get("iactions", []))} actions; Book AI on the toolbar: '
        f'{ai.get("on_main_toolbar", False)}; its menu: {", ".join(menu)}')
    say(f'the discussion window answered "{report.get("question", "")}":')
    print(report.get('answer') or report.get('error') or '(no answer)', flush=True)
    grounded = report.get('grounded') or {}
    say(f'and with passages of the book ({len(grounded.get("places", []))} sent), "{GROUNDED}":')
    print(grounded.get('answer') or grounded.get('error') or '(no answer)', flush=True)
    say(f'screenshots: {shot}, {DEMO / "discussion-in-calibre.png"}, {DEMO / "discussion-grounded.png"}, '
        f'{DEMO / "settings_from_menu.png"}')
    return 0 if ai.get('on_main_toolbar') and report.get('answer') else 1


if __name__ == '__main__':
    sys.exit(main())
