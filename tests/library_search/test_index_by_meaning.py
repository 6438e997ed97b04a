# License: GPLv3 Copyright: the Book AI developers
"""The library's index by meaning made, kept up to date and searched (library_search/building.py,
finding.py) on a real calibre library made through calibre's API, with the real embedding model
(all-MiniLM-L6-v2) in llama-server: every book embedded once, then only what changed; a Stop keeps
what was embedded and the next run goes on from there; words that share nothing with a book's
description find it, with why; calibre's current search restricts it; "More like this" finds the
books nearest the selected ones and says what they share."""

import pytest

from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.library_search import building, finding
from calibre_plugins.bookai.library_search.vectors import VectorFiles
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.book_fields import open_library
from helpers.meaning_library import BOOKS, QUERIES, make_meaning_library
from helpers.peers import EMBED_DIM


@pytest.fixture
def lib(tmp_path):
    path, ids = make_meaning_library(tmp_path)
    db = open_library(path)
    yield db, ids
    db.close()


@pytest.fixture
def files(tmp_path):
    return VectorFiles(str(tmp_path / 'vectors'))


def test_every_book_once_then_only_what_changed(lib, e, files):
    db, ids = lib
    first = building.update_index(db, 'L', e, files, custom=())
    assert (first.embedded, first.kept, first.removed, first.books) == (len(BOOKS), 0, 0, len(BOOKS))
    assert first.started_again and not first.stopped and not first.left_out
    again = building.update_index(db, 'L', e, files, custom=())
    assert (again.embedded, again.kept, again.removed, again.books) == (0, 0, 0, len(BOOKS))
    db.set_field('tags', {ids[7]: ('Gardening', 'Vegetables')})   # its text changes: embedded again
    db.set_field('rating', {ids[8]: 8})                            # its time changes, not its text
    db.remove_books((ids[9],))
    changed = building.update_index(db, 'L', e, files, custom=())
    assert (changed.embedded, changed.kept, changed.removed, changed.books) == (1, 1, 1, len(BOOKS) - 1)
    index = files.read('L', model=e.key)
    assert index is not None and index.dim == EMBED_DIM and ids[9] not in index


def test_a_stop_keeps_what_was_embedded_and_the_next_run_goes_on(lib, e, files, monkeypatch):
    db, ids = lib
    monkeypatch.setattr(building, 'BATCH', 4)
    cancel = CancelToken()
    seen = []

    def progress(done, total):
        seen.append((done, total))
        if done >= 4:
            cancel.cancel()
    stopped = building.update_index(db, 'L', e, files, cancel, progress, custom=())
    assert stopped.stopped and stopped.embedded == 4 and seen == [(4, len(BOOKS))]
    assert len(files.read('L', model=e.key)) == 4  # kept on Stop
    rest = building.update_index(db, 'L', e, files, custom=())
    assert rest.embedded == len(BOOKS) - 4 and rest.books == len(BOOKS) and not rest.started_again


def test_words_find_the_book_they_paraphrase_with_why(lib, e, files):
    db, ids = lib
    building.update_index(db, 'L', e, files, custom=())
    index = files.read('L', model=e.key)
    for words, i in QUERIES:
        found = finding.search(db, 'L', index, e, words, k=3)
        assert found[0].book_id == ids[i], (words, found)
        assert found[0].why and found[0].why in (BOOKS[i][4], f'Title: {BOOKS[i][0]}',
                                                 f'Tags: {", ".join(BOOKS[i][2])}'), found[0]
        assert found[0].score > found[1].score


def test_calibres_search_restricts_what_is_found(lib, e, files):
    db, ids = lib
    building.update_index(db, 'L', e, files, custom=())
    index = files.read('L', model=e.key)
    allowed = sorted(db.search('tags:"=Sea"'))
    assert set(allowed) == {ids[0], ids[5], ids[6]}
    found = finding.search(db, 'L', index, e, QUERIES[1][0], k=10, allowed=allowed)
    assert {f.book_id for f in found} == set(allowed)


def test_more_like_this_finds_the_nearest_and_says_what_they_share(lib, e, files):
    db, ids = lib
    building.update_index(db, 'L', e, files, custom=())
    index = files.read('L', model=e.key)
    found = finding.more_like(db, index, [ids[0]], k=3)
    assert ids[0] not in {f.book_id for f in found}
    assert found[0].book_id == ids[5], found  # the same author, series and tag, the same lighthouse
    assert 'Ada Brine' in found[0].why and 'Vesterholm' in found[0].why and 'Sea' in found[0].why
    assert finding.more_like(db, index, [10 ** 6]) == []  # a book not in the index: nothing


def test_a_model_that_changed_length_starts_the_index_again(lib, e, files):
    db, ids = lib
    from calibre_plugins.bookai.library_search.vectors import BookVectors, Stamp
    old = BookVectors(3, e.key)
    old.put(ids[0], [1, 0, 0], Stamp(1.0, ''))
    files.write('L', old)
    built = building.update_index(db, 'L', e, files, custom=())
    assert built.started_again and built.embedded == len(BOOKS)
    assert files.read('L', model=e.key).dim == EMBED_DIM


def test_chapter_summaries_kept_join_the_entry_and_embed_it_again(lib, e, files, tmp_path, embed):
    """What the reader has read, summarized, is searched too: a summary made since the book was
    embedded embeds it again; its citations are left out; nothing of the book's text goes but that
    (the book has no file here at all, and the summaries end at the reader's place by making)."""
    import time

    from calibre_plugins.bookai.conversation.summaries import BookKey, Summary, SummaryCache
    from calibre_plugins.bookai.library_search import read_so_far
    from helpers.peers import RecordingProxy
    db, ids = lib
    cache = SummaryCache(str(tmp_path / 'summaries'))
    building.update_index(db, 'L', e, files, custom=())
    words = 'A submarine crew repairs a leaking hull beneath the polar ice.'
    before = finding.search(db, 'L', files.read('L', model=e.key), e, words, k=1)
    assert before[0].book_id != ids[8]
    time.sleep(0.01)
    cache.write(BookKey('L', ids[8], 'EPUB'), [Summary(
        'm/x', 0, 'Chapter 1', 1, 4, True, 100, 'd' * 32,
        'The clockmaker joins a submarine crew [2]; they mend the hull under the Arctic ice [3, 4].', time.time())])
    kept = read_so_far.kept_summaries(cache, 'L')
    assert list(kept) == [ids[8]]
    text = read_so_far.summaries_text(cache, 'L', ids[8], kept[ids[8]][0])
    assert text == 'The clockmaker joins a submarine crew; they mend the hull under the Arctic ice.'
    with RecordingProxy(embed.base_url) as proxy:
        provider = get_provider('openai_compatible', settings={'base_url': proxy.base_url + '/v1'})
        proxied = building.embedder(provider, embed.model)
        from unittest import mock
        with mock.patch.object(building, 'SummaryCache', lambda: cache):
            again = building.update_index(db, 'L', proxied, files, custom=())
            assert again.embedded == 1, again
            after = finding.search(db, 'L', files.read('L', model=e.key), e, words, k=1)
    sent = b''.join(body for _m, _p, body in proxy.received)
    assert b'submarine crew; they mend' in sent and b'[2]' not in sent
    assert after[0].book_id == ids[8] and 'submarine' in after[0].why


def test_a_library_of_thousands_embeds_only_the_ten_changed(tmp_path, e):
    """A real calibre library of 3,000 books made through calibre's API (bench/library_50k.py makes
    one of 50,000 on calibre 6.13: 192 s, too long for every host here), its index as an update
    keeps it (deterministic vectors, calibre's own times and the entries' digests), then ten books
    changed in calibre: the update embeds those ten with the real model and nothing else, and the
    search finds among all 3,000, restricted by calibre's search."""
    from calibre_plugins.bookai.library_search.vectors import BookVectors, Stamp
    from helpers.meaning_library import filler_books, make_library
    path, ids = make_library(tmp_path, filler_books(3000))
    db = open_library(path)
    try:
        files = VectorFiles(str(tmp_path / 'vectors'))
        stamps = building.book_stamps(db, 'L')
        index = BookVectors(EMBED_DIM, e.key)
        for n, entry in enumerate(building.entries_of(db, 'L', ids, custom=())):
            index.put(entry.book_id, [((n * 7 + d * 13) % 17) - 8 for d in range(EMBED_DIM)],
                      Stamp(stamps[entry.book_id], entry.digest))
        files.write('L', index)
        assert building.plan(db, 'L', e, files).todo == []
        changed = ids[::300]
        db.set_field('tags', {b: ('Changed',) for b in changed})
        built = building.update_index(db, 'L', e, files, custom=())
        assert (built.embedded, built.kept, built.removed, built.books) == (10, 0, 0, 3000)
        index = files.read('L', model=e.key)
        found = finding.search(db, 'L', index, e, 'a guide to brewing beer at home', k=10,
                               allowed=sorted(db.search('tags:"=Changed"')))
        assert {f.book_id for f in found} == set(changed)
    finally:
        db.close()


def test_the_index_of_a_library_gone_is_removed_not_one_on_a_drive_not_mounted(tmp_path, prefs):
    from calibre_plugins.bookai.library_search.vectors import BookVectors
    files = VectorFiles(str(tmp_path / 'vectors'))
    removed, unmounted, here = tmp_path / 'removed', tmp_path / 'drive' / 'library', tmp_path / 'here'
    for folder in (removed, here):
        folder.mkdir()
        (folder / 'metadata.db').write_bytes(b'')
    for library_id, folder in (('R', removed), ('U', unmounted), ('H', here)):
        files.write(library_id, BookVectors(3, 'p/m'))
        building.remember_place(library_id, str(folder))
    (removed / 'metadata.db').unlink()
    assert building.remove_gone(files) == ['R']
    assert [files.read(i) is not None for i in 'RUH'] == [False, True, True]
