# License: GPLv3 Copyright: the Book AI developers
"""AI metadata kept for later (metadata/kept.py): the proposals of a run read back exactly, a newer
one of a book's field in place of the older, those done with forgotten (the file gone with the last),
each library its own; a damaged or foreign file set aside whole and never obeyed; the fields the
reader changed since found; values shown in a line, tags new to the library marked."""

import json
import os

import pytest

from calibre_plugins.bookai.metadata.changes import MetadataUndo, Proposal, apply
from calibre_plugins.bookai.metadata.kept import MAX_SHOWN_CHARS, KeptProposals, KeptReview, changed_since, shown
from helpers.book_fields import BOOK, library_with_columns, open_library

LIB = 'lib-1'
PROPOSALS = [Proposal(LIB, 1, 'tags', 'Tags', ('Manual',), ('Manual', 'Ebooks'), ('Ebooks',), ('Tags: a note',)),
             Proposal(LIB, 1, 'comments', 'Comments', None, '<p>A guide.</p>'),
             Proposal(LIB, 2, '#mood', 'Mood', 'Calm', 'Dark'),
             Proposal(LIB, 2, '#level', 'Reading level', None, 7),
             Proposal(LIB, 3, 'languages', 'Languages', (), ('eng', 'fra'))]
TITLES = {1: 'The Guide', 2: 'A "Novel"', 3: 'Third'}


@pytest.fixture
def kept(tmp_path):
    return KeptProposals(str(tmp_path / 'kept'))


def test_kept_proposals_read_back_exactly(kept):
    assert kept.review(LIB).proposals == [] and not kept.has(LIB)
    kept.add(LIB, PROPOSALS, TITLES)
    assert kept.has(LIB) and oct(os.stat(kept.path(LIB)).st_mode & 0o777) == '0o600'
    back = kept.review(LIB)
    assert back.proposals == PROPOSALS and back.titles == TITLES
    assert kept.review('another-library').proposals == []  # each library its own


def test_a_newer_proposal_replaces_the_older_and_done_ones_are_forgotten(kept):
    kept.add(LIB, PROPOSALS, TITLES)
    newer = Proposal(LIB, 2, '#mood', 'Mood', 'Calm', 'Hopeful')
    kept.add(LIB, [newer, Proposal('elsewhere', 9, 'tags', 'Tags', None, ('X',))], {2: 'A "Novel"', 9: 'Gone'})
    back = kept.review(LIB)
    assert [p for p in back.proposals if p.key == '#mood'] == [newer] and len(back.proposals) == 5
    assert all(p.book_id != 9 for p in back.proposals)  # another library's proposal is never kept here
    left = kept.forget(LIB, [(1, 'tags'), (1, 'comments'), (2, '#mood')])
    assert [(p.book_id, p.key) for p in left.proposals] == [(2, '#level'), (3, 'languages')]
    assert kept.review(LIB).proposals == left.proposals and set(kept.review(LIB).titles) == {2, 3}
    kept.forget(LIB, [(2, '#level'), (3, 'languages')])
    assert not kept.has(LIB) and kept.review(LIB) == KeptReview()


@pytest.mark.parametrize('damage', [
    lambda d: d.update(version=2),
    lambda d: d.update(kind='metadata-undo'),
    lambda d: d.update(library='another'),
    lambda d: d['proposals'][0].update(field='title'),
    lambda d: d['proposals'][0].update(book=0),
    lambda d: d['proposals'][0].update(book=True),
    lambda d: d['proposals'][0].update(new=None),
    lambda d: d['proposals'][0].update(new={'a': 1}),
    lambda d: d['proposals'][0].update(notes='not a list'),
    lambda d: d['proposals'][0].update(new_tags=[1]),
    lambda d: d['proposals'][0].update(label='x' * 5000),
    lambda d: d['titles'].update({'-1': 'x'}),
    lambda d: d['titles'].update({'4': 4}),
    lambda d: d.update(proposals=[]),
])
def test_a_damaged_file_is_set_aside_whole_and_never_obeyed(kept, damage):
    kept.add(LIB, PROPOSALS, TITLES)
    path = kept.path(LIB)
    with open(path, encoding='utf-8') as f:
        data = json.load(f)
    damage(data)
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(data, f)
    assert kept.review(LIB).proposals == []
    assert not os.path.exists(path) and os.path.exists(path + '.damaged')  # kept aside, not overwritten
    kept.add(LIB, PROPOSALS[:1], TITLES)  # a new file begun beside it
    assert kept.review(LIB).proposals == PROPOSALS[:1] and os.path.exists(path + '.damaged')


def test_not_json_and_not_a_file_are_set_aside(kept):
    os.makedirs(os.path.dirname(kept.path(LIB)), exist_ok=True)
    with open(kept.path(LIB), 'wb') as f:
        f.write(b'{"kind": "metadata-kept", "version": 1, "proposals": [' + b'[' * 100_000)
    assert kept.review(LIB).proposals == [] and os.path.exists(kept.path(LIB) + '.damaged')
    os.mkfifo(kept.path(LIB))
    assert kept.review(LIB).proposals == []  # never waited on


def test_the_fields_changed_since_are_found(sandbox, tmp_path):
    cache = open_library(library_with_columns(sandbox, columns=(('mood', 'Mood', 'text', {}),),
                                              values={'tags': ('Manual',), '#mood': 'calm'}))
    try:
        lib = str(cache.library_id)
        read = [Proposal(lib, BOOK, 'tags', 'Tags', cache.field_for('tags', BOOK), ('Manual', 'Ebooks')),
                Proposal(lib, BOOK, '#mood', 'Mood', 'calm', 'dark'),
                Proposal(lib, 99, 'tags', 'Tags', None, ('Gone',))]
        assert changed_since(cache, read) == {(99, 'tags')}  # a book no longer there
        cache.set_field('#mood', {BOOK: 'cheerful'})  # the reader changes it after the job read it
        assert changed_since(cache, read) == {(BOOK, '#mood'), (99, 'tags')}
        done = apply(cache, lib, read[:2], MetadataUndo(str(tmp_path / 'undo')))
        assert [p.key for p in done.conflicts] == ['#mood'] and [p.key for p in done.written] == ['tags']
    finally:
        cache.close()


def test_values_are_shown_in_a_line():
    assert shown('tags', ('Manual', 'Ebooks'), ('ebooks',)) == 'Manual, Ebooks (new)'
    assert shown('comments', '<p>A <b>good</b>\n guide &amp; more.</p>') == 'A good guide & more.'
    assert shown('tags', None) == shown('comments', '') == '(none)'
    assert shown('languages', ('eng', 'fra')) == 'English, French'
    assert shown('#read', True) == 'Yes' and shown('#level', 7) == '7'
    assert len(shown('comments', 'word ' * 1000)) == MAX_SHOWN_CHARS
    assert '\x1b' not in shown('#mood', 'dark\x1b[31m')
