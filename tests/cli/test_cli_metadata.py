# License: GPLv3 Copyright: the Book AI developers
"""`metadata` on the command line (calibre-debug -r "Book AI" -- metadata), on a real library with
custom columns, against a scripted model: the values given shown beside the book's and nothing
written; --apply writes them, never over a field changed since; --undo puts back exactly what was
there; a field the library cannot fill, or no book, said in a sentence."""

import json

from helpers.book_fields import BOOK, library_with_columns, open_library
from helpers.scripted_model import ScriptedModel

COLUMNS = (('mood', 'Mood', 'enumeration', {'enum_values': ['Dark', 'Calm', 'Hopeful']}),
           ('read', 'Read on', 'datetime', {}))
VALUES = {'tags': ('Manual', 'Software'), '#mood': 'Calm'}


def answer(request):
    """As a good model would answer: only the fields asked for (the schema's), in their shapes."""
    asked = request['response_format']['json_schema']['schema']['properties']
    given = {'tags': ['software', 'Ebook management'], 'description': 'A guide to calibre.',
             'languages': ['English'], 'custom_mood': 'hopeful'}
    return json.dumps({k: v for k, v in given.items() if k in asked})


def values(lib):
    cache = open_library(lib)
    try:
        return {k: cache.field_for(k, BOOK) for k in ('tags', 'comments', '#mood')}
    finally:
        cache.close()


def test_shown_then_applied_then_undone(cli, sandbox):
    lib = library_with_columns(sandbox, columns=COLUMNS, values=VALUES)
    before = values(lib)
    with ScriptedModel(answer) as model:
        r = cli('configure', 'openai_compatible', f'base_url={model.url}/v1', 'model=tiny', '--use')
        assert r.returncode == 0, r
        shown = cli('metadata', str(BOOK), '--library', lib, '--fields', 'tags,#mood',
                    '--instruction', '#mood=the mood of the book in a word')
        assert shown.returncode == 0, shown
        assert 'Tags: Manual, Software → Software, Ebook management' in shown.stdout
        assert 'Mood: Calm → Hopeful' in shown.stdout and 'new to the library: Ebook management' in shown.stdout
        assert 'Nothing was written' in shown.stdout and values(lib) == before
        assert 'the mood of the book in a word' in model.requests[0]['messages'][-1]['content']
        applied = cli('metadata', str(BOOK), '--library', lib, '--fields', 'tags,#mood', '--apply')
        assert applied.returncode == 0 and '2 values written' in applied.stdout, applied
    after = values(lib)
    assert set(after['tags']) == {'Software', 'Ebook management'} and after['#mood'] == 'Hopeful'
    undone = cli('metadata', '--library', lib, '--undo')
    assert undone.returncode == 0 and '2 values put back' in undone.stdout, undone
    assert values(lib) == before
    again = cli('metadata', '--library', lib, '--undo')
    assert again.returncode == 5 and 'no metadata' in again.stderr


def test_what_cannot_be_done_is_said(cli, sandbox):
    lib = library_with_columns(sandbox, columns=COLUMNS, values=VALUES)
    with ScriptedModel(answer) as model:
        cli('configure', 'openai_compatible', f'base_url={model.url}/v1', 'model=tiny', '--use')
        for args, words in ((['--fields', '#read'], 'cannot fill'), (['--fields', '#nothing'], 'has no field'),
                            (['--fields', 'title'], 'no field title'), (['--instruction', 'no equals sign'], 'FIELD=TEXT')):
            r = cli('metadata', str(BOOK), '--library', lib, *args)
            assert r.returncode == 2 and words in r.stderr, (args, r)
        r = cli('metadata', '--library', lib)
        assert r.returncode == 2 and 'Name the books' in r.stderr
        r = cli('metadata', '99', '--library', lib)
        assert r.returncode == 2 and '99' in r.stderr
        assert model.requests == []  # nothing was asked


def test_the_books_text_goes_only_with_with_text_and_only_its_opening(cli, sandbox):
    lib = library_with_columns(sandbox, columns=COLUMNS, values=VALUES)
    with ScriptedModel(answer) as model:
        assert cli('configure', 'openai_compatible', f'base_url={model.url}/v1', 'model=tiny', '--use').returncode == 0
        without = cli('metadata', str(BOOK), '--library', lib, '--fields', 'tags')
        assert without.returncode == 0, without
        with_text = cli('metadata', str(BOOK), '--library', lib, '--fields', 'tags', '--with-text')
        assert with_text.returncode == 0, with_text
        first, second = (r['messages'][-1]['content'] for r in model.requests)
    assert 'The opening of the book:' not in first and 'The opening of the book:' in second
    from calibre_plugins.bookai.metadata.asking import MAX_TEXT_CHARS
    from calibre_plugins.bookai.metadata.reading import opening as book_opening
    from helpers.book_fields import open_library
    cache = open_library(lib)
    try:
        whole = book_opening(cache, BOOK, 10 ** 7)
    finally:
        cache.close()
    assert len(whole) > MAX_TEXT_CHARS + 1000
    assert whole[:MAX_TEXT_CHARS] in second  # the guide's first pages
    assert whole[MAX_TEXT_CHARS:MAX_TEXT_CHARS + 1000] not in second  # and nothing after them
