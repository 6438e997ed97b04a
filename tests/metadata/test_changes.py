# License: GPLv3 Copyright: the Book AI developers
"""AI metadata written to a real calibre library (metadata/changes.py): only the fields ticked, never
over a value the reader changed since the job read it, never into another library, the replaced
values kept for Undo before anything is written, and Undo putting back exactly what was there, but
for a field changed since; a damaged Undo file set aside, never obeyed, never overwritten."""

import os

import pytest

from calibre_plugins.bookai.metadata.changes import MetadataUndo, Proposal, apply, undo_last
from helpers.book_fields import BOOK, library_with_columns, open_library

COLUMNS = (('mood', 'Mood', 'enumeration', {'enum_values': ['Dark', 'Calm']}),
           ('level', 'Reading level', 'int', {}),
           ('notes', 'My notes', 'comments', {'interpret_as': 'html'}))
BEFORE = {'tags': ('Manual', 'Software'), 'comments': '<p>A <b>friendly</b> guide.</p>', '#mood': 'Calm'}


@pytest.fixture
def cache(sandbox):
    c = open_library(library_with_columns(sandbox, columns=COLUMNS, values=BEFORE))
    yield c
    c.close()


@pytest.fixture
def undo(tmp_path):
    return MetadataUndo(str(tmp_path / 'undo'))


def values(cache, keys=('tags', 'comments', 'languages', '#mood', '#level', '#notes')):
    return {k: cache.field_for(k, BOOK) for k in keys}


def proposals(cache, library_id=None):
    library_id = library_id or cache.library_id
    now = values(cache)
    return [Proposal(library_id, BOOK, 'tags', 'Tags', now['tags'], ('Manual', 'Software', 'Ebooks')),
            Proposal(library_id, BOOK, 'comments', 'Comments', now['comments'], '<p>The guide to calibre.</p>'),
            Proposal(library_id, BOOK, 'languages', 'Languages', now['languages'], ('eng', 'fra')),
            Proposal(library_id, BOOK, '#mood', 'Mood', now['#mood'], 'Dark'),
            Proposal(library_id, BOOK, '#level', 'Reading level', now['#level'], 7)]


def test_applied_then_undone_exactly(cache, undo):
    before = values(cache)
    done = apply(cache, cache.library_id, proposals(cache), undo)
    assert not done.conflicts and not done.failed and len(done.written) == 5
    after = values(cache)
    assert set(after['tags']) == {'Manual', 'Software', 'Ebooks'} and after['comments'] == '<p>The guide to calibre.</p>'
    assert after['languages'] == ('eng', 'fra') and after['#mood'] == 'Dark' and after['#level'] == 7
    assert after['#notes'] == before['#notes']  # not ticked: not touched
    undone = undo_last(cache, cache.library_id, undo)
    assert undone is not None and len(undone.restored) == 5 and not undone.conflicts
    assert values(cache) == before
    assert undo_last(cache, cache.library_id, undo) is None  # nothing more to undo


def test_a_field_changed_since_the_job_read_it_is_not_written(cache, undo):
    made = proposals(cache)
    cache.set_field('#mood', {BOOK: 'Dark'})          # the reader, while the job ran
    cache.set_field('comments', {BOOK: '<p>Mine.</p>'})
    done = apply(cache, cache.library_id, made, undo)
    assert {p.key for p in done.conflicts} == {'#mood', 'comments'}
    assert cache.field_for('comments', BOOK) == '<p>Mine.</p>'
    assert len(done.written) == 3


def test_proposals_of_another_library_are_never_written(cache, undo):
    before = values(cache)
    done = apply(cache, cache.library_id, proposals(cache, library_id='another-library'), undo)
    assert not done.written and len(done.failed) == 5 and values(cache) == before
    assert undo.sets(cache.library_id) == []


def test_undo_leaves_a_field_changed_since_and_says_so(cache, undo):
    before = values(cache)
    apply(cache, cache.library_id, proposals(cache), undo)
    cache.set_field('#level', {BOOK: 9})
    undone = undo_last(cache, cache.library_id, undo)
    assert undone.conflicts == [(BOOK, '#level')] and cache.field_for('#level', BOOK) == 9
    assert values(cache, ('tags', 'comments', '#mood')) == {k: before[k] for k in ('tags', 'comments', '#mood')}


def test_nothing_is_written_when_the_old_values_cannot_be_kept(cache, tmp_path):
    before = values(cache)
    blocked = tmp_path / 'blocked'
    blocked.write_text('a file where the folder should be')
    with pytest.raises(OSError):
        apply(cache, cache.library_id, proposals(cache), MetadataUndo(str(blocked)))
    assert values(cache) == before


@pytest.mark.parametrize('damage', [b'\x00\x01 not json', b'[' * 100_000, b'{"kind": "metadata-undo", "version": 99}',
                                    b'{"kind": "cover-undo", "version": 1, "sets": []}'])
def test_a_damaged_undo_file_is_set_aside_and_never_obeyed(cache, undo, damage):
    before = values(cache)
    path = undo.path(cache.library_id)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        f.write(damage)
    assert undo_last(cache, cache.library_id, undo) is None
    assert values(cache) == before
    with open(path + '.damaged', 'rb') as f:
        assert f.read() == damage  # set aside whole, never written over
    done = apply(cache, cache.library_id, proposals(cache), undo)  # and Undo works again after it
    assert len(done.written) == 5 and len(undo.sets(cache.library_id)) == 1


def test_changes_that_are_not_a_fields_are_dropped_from_an_undo_file(cache, undo):
    """A change to a field AI metadata never writes (title), or of a book id that is none, is never
    put back, whatever the file says."""
    import json
    before = values(cache)
    path = undo.path(cache.library_id)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    bad = [{'book': BOOK, 'field': 'title', 'before': 'Pwned', 'after': cache.field_for('title', BOOK)},
           {'book': -1, 'field': 'tags', 'before': ['x'], 'after': []},
           {'book': BOOK, 'field': 'tags', 'before': {'$': 1}, 'after': list(before['tags'])}]
    with open(path, 'w') as f:
        json.dump({'kind': 'metadata-undo', 'version': 1, 'sets': [{'changes': bad}]}, f)
    assert undo_last(cache, cache.library_id, undo) is None
    assert values(cache) == before and cache.field_for('title', BOOK) != 'Pwned'
