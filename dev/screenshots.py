#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""The README's screenshots, from real answers of the demo's model, never from the tests'
random tiny model.

    python3 dev/screenshots.py                remake them into docs/screenshots/
    python3 dev/screenshots.py --novel-only   only the novel's (Story so far, X-Ray), the rest made before
    python3 dev/screenshots.py --lookups-only only the lookups' picture, the rest made before
    python3 dev/screenshots.py --metadata-only only AI metadata's review, the rest made before

It runs `dev/demo.py --gui` in a sandbox of its own (build/screenshots/): calibre's main
window, the discussion window's Summarize and its answer from passages of the book, a passage
shown from its link; then calibre's E-book viewer on the same book with Book AI's panel, the
Explain quick action on the selected text, answered by the same model; then Pride and Prejudice
(tests/books, in the public domain) added to the library and opened in the viewer a few chapters
in: Story so far, and the X-Ray tab built, both by the same model. Then it copies the pictures
into docs/screenshots/ and prints what it copied, with what the model answered. As root or as a
user with sudo, like the demo.
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
    'viewer-recap.png': 'viewer-recap.png',
    'viewer-xray.png': 'viewer-xray.png',
    'discussion-recap.png': 'discussion-recap.png',
    'discussion-xray.png': 'discussion-xray.png',
    'discussion-lookups.png': 'discussion-lookups.png',
    'metadata-review.png': 'metadata-review.png',
    'metadata-undo.png': 'metadata-undo.png',
}
NOVEL = PROJECT / 'tests' / 'books' / 'pride-and-prejudice.epub'
SECTIONS = '3'  # the title page, then Chapters 1 and 2 read: a few minutes of the model on two cores
XRAY_NAME = 'Mr. Bennet'  # the entry the X-Ray's screenshot shows
NOVEL_SHOTS = ('viewer-recap.png', 'viewer-xray.png', 'discussion-recap.png', 'discussion-xray.png',
               'discussion-lookups.png')
METADATA_SHOTS = ('metadata-review.png', 'metadata-undo.png')
METADATA_BOOKS = '10,1,3'  # the novel, the English and the French guides
METADATA_FIELDS = 'tags,comments,languages'
# the question of the lookups' picture
LOOKUP_QUESTION = 'Search the book for Netherfield: who has taken it, and what do the Bennets hope?'


def say(*args):
    print('[screenshots]', *args, flush=True)


def main():
    lookups_only = '--lookups-only' in sys.argv[1:] and (OUT / 'library').exists()
    metadata_only = '--metadata-only' in sys.argv[1:] and (OUT / 'library').exists()
    novel_only = lookups_only or metadata_only or '--novel-only' in sys.argv[1:] and (
        OUT / 'library').exists()  # the demo's made before
    if not novel_only:
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
    if novel_only:  # the plugin as it is now, in the sandbox made before
        out = subprocess.run([sys.executable, str(PROJECT / 'build.py'), 'zip', '--out', str(OUT / 'dist')], check=True,
                             capture_output=True, text=True).stdout
        subprocess.run(['calibre-customize', '-a', out.split()[0]], env=sandbox, check=True, stdout=subprocess.DEVNULL)
    with demo.local_model() as server:
        demo.book_ai('configure', 'OpenAI compatible', f'base_url={server.base_url}/v1', f'model={demo.MODEL_NAME}',
                     '--use', env=sandbox, check=True, stdout=subprocess.DEVNULL)
        demo.set_lookups(True)
        if not novel_only:
            explain(sandbox)
        if lookups_only:
            lookups(sandbox)
        elif not metadata_only:
            novel(sandbox)
        if not novel_only or metadata_only:
            metadata(sandbox, server)
    for made, name in COPIED.items():
        if novel_only and made not in NOVEL_SHOTS or lookups_only and made != 'discussion-lookups.png':
            if not (metadata_only and made in METADATA_SHOTS):
                continue
        if metadata_only and made not in METADATA_SHOTS:
            continue
        shutil.copyfile(OUT / made, DOCS / name)
        say(f'{DOCS / name}')
    return 0


def explain(sandbox):
    """The viewer on the English guide: Explain on the selected text."""
    book = next(p for p in (OUT / 'library').glob('*/*/*.epub') if p.parent.name.endswith('(1)'))  # the English guide
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


def novel(sandbox):
    """The novel in the viewer a few chapters in: Story so far, then the X-Ray; then its discussion
    window in the library, as of the place the viewer saved: Story so far and the X-Ray tab."""
    book = add_novel(sandbox)
    got = viewer_probe(book, sandbox, 'novel', BOOKAI_PROBE_RECAP='1', BOOKAI_PROBE_XRAY=XRAY_NAME,
                       BOOKAI_PROBE_XRAY_SHOT_ONLY='1')
    if not got.get('r_answer'):
        raise SystemExit('[screenshots] Story so far got no recap: see ' + str(OUT / 'novel.json'))
    say('Story so far:', got['r_answer'][:600])
    if not got.get('x_entities') or got.get('x_shown') != XRAY_NAME:
        raise SystemExit('[screenshots] the X-Ray did not show ' + XRAY_NAME + ': see ' + str(OUT / 'novel.json'))
    say('X-Ray:', got['x_entities'], got['x_details'][:600])
    report = OUT / 'discussion-recap.json'
    say('calibre\'s main window: the discussion window about the novel, Story so far and X-Ray')
    subprocess.run(['calibre-debug', '-e', str(PROJECT / 'tests' / 'hosts' / 'probes' / 'main_window.py'),
                    str(OUT / 'library')],
                   env=dict(sandbox, BOOKAI_PROBE_OUT=str(report), BOOKAI_PROBE_RECAP='Pride and Prejudice',
                            BOOKAI_PROBE_XRAY=XRAY_NAME, BOOKAI_PROBE_LOOKUP=LOOKUP_QUESTION,
                            BOOKAI_PROBE_SHOTS=str(OUT), BOOKAI_PROBE_TIMEOUT='1500'),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = json.loads(report.read_text()) if report.exists() else {}
    if not got.get('r_answer') or got.get('x_shown') != XRAY_NAME:
        raise SystemExit('[screenshots] the discussion window made no recap or X-Ray: see ' + str(report))
    say('Story so far, in the library:', got['r_answer'][:600])
    if not got.get('l_lookups'):
        raise SystemExit('[screenshots] the model looked nothing up: see ' + str(report))
    say('Looked up:', got['l_lookups'], 'and answered:', got['l_answer'][:600])


def lookups(sandbox):
    """Only the lookups' picture: the novel added and opened in the viewer a few chapters in (its place
    saved), then its discussion window in the library, LOOKUP_QUESTION asked in a new chat."""
    book = add_novel(sandbox)
    viewer_probe(book, sandbox, 'novel-place')
    # fewer passages with the question (400 tokens, not 1,500), so that a search finds some it lacks
    path = OUT / 'config' / 'plugins' / 'bookai.json'
    settings = json.loads(path.read_text(encoding='utf-8'))
    path.write_text(json.dumps(dict(settings, book_text_budget=400), indent=2, sort_keys=True), encoding='utf-8')
    report = OUT / 'discussion-lookups.json'
    subprocess.run(['calibre-debug', '-e', str(PROJECT / 'tests' / 'hosts' / 'probes' / 'main_window.py'),
                    str(OUT / 'library')],
                   env=dict(sandbox, BOOKAI_PROBE_OUT=str(report), BOOKAI_PROBE_RECAP='Pride and Prejudice',
                            BOOKAI_PROBE_LOOKUP=LOOKUP_QUESTION, BOOKAI_PROBE_LOOKUP_ONLY='1',
                            BOOKAI_PROBE_SHOTS=str(OUT), BOOKAI_PROBE_TIMEOUT='1500'),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path.write_text(json.dumps(settings, indent=2, sort_keys=True), encoding='utf-8')
    got = json.loads(report.read_text()) if report.exists() else {}
    if not got.get('l_lookups'):
        raise SystemExit('[screenshots] the model looked nothing up: see ' + str(report))
    say('Looked up:', got['l_lookups'], 'and answered:', got['l_answer'][:600])


def metadata(sandbox, server):
    """AI metadata's review in calibre's main window: Fill in metadata with AI… for the novel and two
    guides, the demo's model asked for their tags, a description and languages; the review shown
    once filled, then Apply all and Undo metadata change (the demo's library as it was), what Undo
    said shown too."""
    if not any((OUT / 'library').glob('*/Pride and Prejudice*')):
        add_novel(sandbox)
    report = OUT / 'metadata.json'
    say('calibre\'s main window: Fill in metadata with AI, then its review')
    subprocess.run(['calibre-debug', '-e', str(PROJECT / 'tests' / 'hosts' / 'probes' / 'metadata.py'),
                    str(OUT / 'library')],
                   env=dict(sandbox, BOOKAI_PROBE_OUT=str(report), BOOKAI_PROBE_METADATA_SERVER=server.base_url,
                            BOOKAI_PROBE_MODEL=demo_model(), BOOKAI_PROBE_BOOKS=METADATA_BOOKS,
                            BOOKAI_PROBE_FIELDS=METADATA_FIELDS,
                            BOOKAI_PROBE_SHOTS=str(OUT), BOOKAI_PROBE_TIMEOUT='1500'),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = json.loads(report.read_text()) if report.exists() else {}
    if not got.get('review', {}).get('rows'):
        raise SystemExit('[screenshots] the review showed nothing: see ' + str(report))
    if got.get('values_undone') != got.get('values_before'):
        raise SystemExit('[screenshots] Undo did not put the demo library back as it was: see ' + str(report))
    for row in got['review']['texts']:
        say('  ' + ' | '.join(row))


def demo_model():
    import demo
    return demo.MODEL_NAME


def add_novel(sandbox):
    """The novel added to the demo's library afresh (a copy added before is removed first: the
    viewer starts at its beginning); the path of its EPUB there."""
    library = str(OUT / 'library')
    ids = subprocess.run(['calibredb', '--with-library', library, 'search', 'title:"=Pride and Prejudice"'],
                         env=sandbox, capture_output=True, text=True).stdout.strip()
    if ids:
        subprocess.run(['calibredb', '--with-library', library, 'remove', '--permanent', ids], env=sandbox,
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run(['calibredb', '--with-library', library, 'add', '-d', str(NOVEL)], env=sandbox,
                   check=True, stdout=subprocess.DEVNULL)
    return next(p for p in (OUT / 'library').glob('*/*/*.epub') if 'Pride' in p.name)


def viewer_probe(book, sandbox, name, **env):
    """The viewer's probe on book, SECTIONS on, doing what env says; its report."""
    report = OUT / f'{name}.json'
    say(f'the E-book viewer, {SECTIONS} sections into {book.name}: {name}')
    prefs = OUT / 'config' / 'viewer-webengine.json'  # the viewer's panels as they first are: no Search open
    if prefs.exists():
        kept = json.loads(prefs.read_text())
        kept.pop('main_window_state', None)
        prefs.write_text(json.dumps(kept))
    subprocess.run(['calibre-debug', '-e', str(PROJECT / 'tests' / 'hosts' / 'probes' / 'viewer.py'), str(book)],
                   env=dict(sandbox, BOOKAI_PROBE_OUT=str(report), BOOKAI_PROBE_SECTIONS=SECTIONS,
                            BOOKAI_PROBE_SHOTS=str(OUT), BOOKAI_PROBE_TIMEOUT='1500', **env),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads(report.read_text()) if report.exists() else {}


if __name__ == '__main__':
    sys.exit(main())
