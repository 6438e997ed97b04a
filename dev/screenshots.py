#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""The README's screenshots, from real answers of the demo's model, never from the tests'
random tiny model.

    python3 dev/screenshots.py          remake them into docs/screenshots/

It runs `dev/demo.py --gui` in a sandbox of its own (build/screenshots/): calibre's main
window, the discussion window's Summarize and its answer from passages of the book, a passage
shown from its link; then calibre's E-book viewer on the same book with Book AI's panel, the
Explain quick action on the selected text, answered by the same model. Then it copies the
pictures into docs/screenshots/ and prints what it copied. As root or as a user with sudo,
like the demo.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
OUT = PROJECT / 'build' / 'screenshots'
DOCS = PROJECT / 'docs' / 'screenshots'
# picture made: its name in docs/screenshots/
COPIED = {
    'main-window.png': 'main-window.png',
    'discussion-in-calibre.png': 'discussion.png',
    'discussion-grounded.png': 'discussion-grounded.png',
    'citation.png': 'citation.png',
    'viewer-panel.png': 'viewer-panel.png',
}


def say(*args):
    print('[screenshots]', *args, flush=True)


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    env = dict(os.environ, BOOKAI_DEMO_DIR=str(OUT))
    env.pop('DISPLAY', None)
    env.pop('WAYLAND_DISPLAY', None)
    subprocess.run([sys.executable, str(PROJECT / 'dev' / 'demo.py'), '--gui'], env=env, check=True)
    os.environ['BOOKAI_DEMO_DIR'] = str(OUT)
    sys.path.insert(0, str(PROJECT / 'dev'))
    import demo  # its sandbox is OUT: it reads $BOOKAI_DEMO_DIR
    sandbox = demo.sandbox_env()
    book = next(p for p in (OUT / 'library').glob('*/*/*.epub') if p.parent.name.endswith('(1)'))  # the English guide
    with demo.local_model() as server:
        demo.book_ai('configure', 'OpenAI compatible', f'base_url={server.base_url}/v1', f'model={demo.MODEL_NAME}',
                     '--use', env=sandbox, check=True, stdout=subprocess.DEVNULL)
        say('the E-book viewer, with Book AI\'s panel: Explain on the selected text')
        report = OUT / 'viewer.json'
        subprocess.run(['calibre-debug', '-e', str(PROJECT / 'tests' / 'hosts' / 'probes' / 'viewer.py'), str(book)],
                       env=dict(sandbox, BOOKAI_PROBE_OUT=str(report), BOOKAI_PROBE_ASK='Explain',
                                BOOKAI_PROBE_SHOTS=str(OUT), BOOKAI_PROBE_TIMEOUT='600'),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    answer = json.loads(report.read_text()).get('answer')
    if not answer:
        raise SystemExit('[screenshots] the viewer\'s panel got no answer: see ' + str(report))
    say('the panel answered:', answer[:300])
    for made, name in COPIED.items():
        shutil.copyfile(OUT / made, DOCS / name)
        say(f'{DOCS / name}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
