# License: GPLv3 Copyright: the Book AI developers
"""`read-next` on the command line (calibre-debug -r "Book AI" -- read-next), on a real calibre library
whose index by meaning the real embedding model makes (all-MiniLM-L6-v2 in llama-server, as LM Studio's
provider), against a scripted model: from anywhere, the quick action read_next; from the library, the
books offered, nearest first and those read last, the books started from left out, and the books the
answer names listed by the numbers sent only (a number never sent is said to be none); --json; the
messages shown and nothing sent with --show-sent; no book to start from, said."""

import json
import re

import pytest

from helpers.book_fields import open_library, set_plugin_prefs
from helpers.meaning_library import BOOKS, make_meaning_library
from helpers.scripted_model import ScriptedModel

CANDIDATE = re.compile(r'^\[(\d+)\] (.+?) by ', re.M)


def answer(request: dict) -> str:
    text = request['messages'][-1]['content']
    offered = CANDIDATE.findall(text)
    if not offered:  # from anywhere
        return 'Moby-Dick: another sea.'
    (first, title), (second, other) = offered[:2]
    return f'[{first}] {title}: the same island.\n\n[{second}] {other}: a sea.\n\n[77] Ghost: not offered.\x1b[2J'


@pytest.fixture
def setup(cli, sandbox, embed):
    lib, ids = make_meaning_library(sandbox.root)
    db = open_library(lib)
    db.create_custom_column('read', 'Read', 'bool', False)
    db.close()
    db = open_library(lib)
    db.set_field('#read', {ids[5]: True})
    db.close()

    def configure(model):
        set_plugin_prefs(sandbox, providers={
            'openai_compatible': {'base_url': model.url + '/v1', 'model': 'tiny', 'temperature': 0.0},
            'lmstudio': {'base_url': embed.base_url + '/v1', 'model': embed.model}},
            provider='openai_compatible', library_embeddings_provider='lmstudio', confirm_send='never')
    return lib, ids, configure


def test_from_the_library_the_books_named_by_the_numbers_sent(cli, setup):
    lib, ids, configure = setup
    with ScriptedModel(answer) as model:
        configure(model)
        r = cli('read-next', '--library', lib, '--book', str(ids[0]), '--from-library', '--read-field', '#read')
        assert r.returncode == 0, r
        sent = model.requests[0]['messages'][-1]['content']
        offered = CANDIDATE.findall(sent)
        titles = [t for _n, t in offered]
        id_of = {b[0]: ids[i] for i, b in enumerate(BOOKS)}
        assert 'The Keeper of Vesterholm' not in titles  # the book started from
        assert titles[-1] == 'Return to Vesterholm'     # the nearest, but read: last
        assert 'Embedding 12 books' in r.stderr
        assert 'Suggested from your library:' in r.stdout
        listed = [line for line in r.stdout.splitlines() if re.match(r'^\[\d+\] \d+\t', line)]
        assert listed == [f'[1] {id_of[titles[0]]}\t{titles[0]}', f'[2] {id_of[titles[1]]}\t{titles[1]}']
        assert '[77] (not one of the books offered)' in r.stdout and '\x1b' not in r.stdout
        as_json = cli('read-next', '--library', lib, '--book', str(ids[0]), '--from-library', '--read-field',
                      '#read', '--json')
        assert as_json.returncode == 0, as_json
        books = [e for e in map(json.loads, as_json.stdout.splitlines()) if e.get('type') == 'book']
        assert [b['offered'] for b in books] == [True, True, False] and books[0]['title'] == titles[0]
        assert 'id' not in books[2] and books[0]['id'] == id_of[titles[0]]
        assert 'Embedding' not in as_json.stderr  # the index kept: nothing embedded again
        shown = cli('read-next', '--library', lib, '--book', str(ids[0]), '--from-library', '--show-sent')
        assert shown.returncode == 0 and 'Return to Vesterholm' in shown.stdout and len(model.requests) == 2
        anywhere = cli('read-next', '--library', lib, '--book', str(ids[0]))
        assert anywhere.returncode == 0 and 'Moby-Dick' in anywhere.stdout, anywhere
        assert 'Suggest some good books to read after' in model.requests[-1]['messages'][-1]['content']
    # similar shares the index's way in: the same books, nearest first, the index as kept
    similar = cli('similar', str(ids[0]), '--library', lib, '--limit', '2', '--search', 'tags:"=Sea"')
    assert similar.returncode == 0 and similar.stdout.splitlines()[0].startswith(f'{ids[5]}\tReturn to'), similar
    assert similar.stdout.count('\n') == 4 and 'Embedding' not in similar.stderr


def test_what_cannot_be_done_is_said(cli, setup):
    lib, ids, configure = setup
    with ScriptedModel(answer) as model:
        configure(model)
        none = cli('read-next', '--library', lib, '--from-library')  # nothing selected, read or rated
        assert none.returncode == 5 and 'No book to start from' in none.stderr, none
        assert cli('read-next', '--library', lib).returncode == 2
        missing = cli('read-next', '--library', lib, '--book', '999')
        assert missing.returncode == 2 and '999' in missing.stderr
        field = cli('read-next', '--library', lib, '--book', str(ids[0]), '--from-library', '--read-field', '#nope')
        assert field.returncode == 2 and '#nope' in field.stderr
        assert model.requests == []
