# License: GPLv3 Copyright: the Book AI developers
"""history search and history export on the command line: the conversations kept for a library
found by their words and written out as Markdown or HTML, on standard output or into a file that
is never replaced without --force; what came from a History file printed inert; each failure in
one sentence with its exit code."""

import json
import stat

from calibre_plugins.bookai.conversation.books import BookInfo
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.core.messages import WebLink
from helpers.books import quick_start_epub
from helpers.conversations import answered

HOSTILE = '\x1b]52;c;cHduZWQ=\x07\x1b[2J\x9b31m'
RAW = ('\x1b', '\x9b', '\x07')


def kept(sandbox):
    """A library with three conversations in its History, as the windows keep them."""
    lib = sandbox.make_library(quick_start_epub())
    library = BookLibrary.open(str(lib))
    library_id = library.library_id
    library.db.close()
    history = History(str(sandbox.config / 'plugins' / 'bookai-history'))
    convs = []
    for n, (title, question, answer) in enumerate([
            ('Quick Start Guide', 'How do I convert a book?', 'With **Convert books**.'),
            ('Quick Start Guide' + HOSTILE, 'What is a library?', 'A folder.' + HOSTILE + '<script>x()</script>'),
            ('Another', 'Where is the quick start?', 'In Help.')]):
        conv = answered(BookInfo(1, title, ('John Schember',)), library_id, question, answer,
                        1_700_000_000 + n * 100, 1_700_000_000 + n * 100, f'conv{n}',
                        links=(WebLink('Manual', 'https://manual.calibre-ebook.com/'),), model='tiny',
                        provider='openai_compatible')
        history.save(conv)
        convs.append(conv)
    return lib


def test_search_lists_the_best_first_and_prints_nothing_raw(cli, sandbox):
    lib = kept(sandbox)
    r = cli('history', 'search', '--library', lib, 'QUICK', 'start')
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert [line.split('\t')[0] for line in lines] == ['conv1', 'conv0', 'conv2']  # titles first, then the newest
    assert lines[1].split('\t')[2:] == ['Quick Start Guide', 'Quick Start Guide by John Schember']
    assert not [c for c in RAW if c in r.stdout] and r'\x1b]52;c;cHduZWQ=\x07' in r.stdout
    r = cli('history', 'search', '--library', lib, 'convert', '--json')
    assert r.returncode == 0, r
    (found,) = [json.loads(line) for line in r.stdout.splitlines()]
    assert found['id'] == 'conv0' and found['questions'] == 1 and found['model'] == 'tiny'
    assert found['books'] == ['Quick Start Guide by John Schember'] and found['book_ids'] == [1]
    r = cli('history', 'search', '--library', lib, 'dickens')
    assert r.returncode == 5 and r.stdout == '' and 'No conversation matches "dickens".' in r.stderr, r


def test_export_to_standard_output_and_to_a_file(cli, sandbox, tmp_path):
    lib = kept(sandbox)
    r = cli('history', 'export', '--library', lib, 'conv0', 'conv1')
    assert r.returncode == 0, r
    assert r.stdout.startswith('# Quick Start Guide\n') and 'With **Convert books**.' in r.stdout
    assert '[Manual](<https://manual.calibre-ebook.com/>)' in r.stdout and r.stdout.count('\n---\n') == 1
    assert not [c for c in RAW if c in r.stdout] and '&lt;script>' in r.stdout
    out = tmp_path / 'talk.html'
    r = cli('history', 'export', '--library', lib, 'conv1', '--output', out)
    assert r.returncode == 0 and r.stdout == '' and f'saved in {out}' in r.stderr, r
    html = out.read_text('utf-8')
    assert html.startswith('<!DOCTYPE html>') and '<script' not in html and 'What is a library?' in html
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    r = cli('history', 'export', '--library', lib, 'conv0', '--output', out)
    assert r.returncode == 2 and 'add --force' in r.stderr and out.read_text('utf-8') == html, r
    r = cli('history', 'export', '--library', lib, 'conv0', '--output', out, '--force', '--format', 'md')
    assert r.returncode == 0 and out.read_text('utf-8').startswith('# Quick Start Guide\n'), r


def test_export_failures_are_told_in_one_sentence(cli, sandbox, tmp_path):
    lib = kept(sandbox)
    r = cli('history', 'export', '--library', lib, 'nosuch')
    assert r.returncode == 5 and 'No conversation with the id nosuch' in r.stderr and r.stdout == '', r
    (tmp_path / 'file').write_text('x')
    r = cli('history', 'export', '--library', lib, 'conv0', '--output', tmp_path / 'file' / 'out.md')
    assert r.returncode == 6 and 'could not be saved' in r.stderr, r
    r = cli('history', 'export', '--library', lib, 'conv0', '--format', 'pdf')
    assert r.returncode == 2 and 'pdf' in r.stderr, r
    r = cli('history', '--library', lib)
    assert r.returncode == 2 and 'Traceback' not in r.stderr, r
    damaged = next((sandbox.config / 'plugins' / 'bookai-history').glob('*/conv2.json'))
    damaged.write_text('{"format": 1, "id":')
    r = cli('history', 'export', '--library', lib, 'conv2')
    assert r.returncode == 7 and 'could not be read' in r.stderr and 'Traceback' not in r.stderr, r
    assert damaged.with_name('conv2.json.damaged').exists()
    r = cli('history', 'search', '--library', lib, 'nothing')
    assert r.returncode == 5, r
    r = cli('history', 'search', '--library', sandbox.root / 'nolibrary', 'x')
    assert r.returncode == 2 and 'no calibre library' in r.stderr, r
