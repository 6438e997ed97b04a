# License: GPLv3 Copyright: the Book AI developers
"""A library holding a four-book series, made with calibre's db API: for "Previously in the series"."""

from pathlib import Path

SAGA = [  # (title, series index, a chapter's text): the windows are about the third
    ('The First Voyage', 1.0, 'Captain Odile Marchetti sailed the Albatross out of Port Varne at dawn.'),
    ('The Second Voyage', 2.0, 'The navigator Brannoc Tull charted the Silver Shoals by starlight.'),
    ('The Third Voyage', 3.0, 'ZQX SENTINEL OF THE CURRENT BOOK: the cook was a spy.'),
    ('The Fourth Voyage', 4.0, 'ZQX SENTINEL OF A LATER BOOK: the captain retires to a lighthouse.'),
]


def saga_library(sandbox, tmp_path: Path):
    """(calibre's Cache of the library, its folder): books 1 to 4 of SAGA, in the series The Saga."""
    from calibre.ebooks.metadata.book.base import Metadata
    from calibre.library import db

    from helpers.books import make_epub
    paths = [make_epub(tmp_path / f'{index}.epub', [f'<h2>Chapter {n}</h2><p>{text}</p><p>{text} The gulls cried.</p>'
                                                    for n in (1, 2)]) for _title, index, text in SAGA]
    lib = sandbox.make_library(paths[0])
    cache = db(str(lib)).new_api
    for (title, _index, _text), path in zip(SAGA[1:], paths[1:]):
        cache.add_books([(Metadata(title, ['Ann Sailor']), {'EPUB': str(path)})])
    ids = sorted(cache.all_book_ids())
    cache.set_field('title', {i: title for i, (title, _index, _text) in zip(ids, SAGA)})
    cache.set_field('series', {i: 'The Saga' for i in ids})
    cache.set_field('series_index', {i: index for i, (_title, index, _text) in zip(ids, SAGA)})
    return cache, lib
