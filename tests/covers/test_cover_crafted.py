# License: GPLv3 Copyright: the Book AI developers
"""Issue 26, findings 1 and 2, through the path the command line and the windows take (an image
decoded by Book AI in calibre's worker, core.images.decode_images, then covers.library.replace_cover),
in a real calibre library, with each crafted image: a PNG with damaged pixel data (89 bytes), a PNG
of 8192x8192, a 64x64 PNG carrying 28 GB of zeros (29 MB), progressive 8192x8192 JPEGs of 1,000,
10,000 and 100,000 scans, plain progressive 8192x8192 JPEGs in RGB and CMYK, and the ones within the
pixel bound that are still too costly (10,000 scans of 2048x2048, a CMYK progressive JPEG whose
coefficients take 175 MB). Each ends in a sentence, with the old cover's bytes where they were and
nothing left for Undo; Undo still works afterwards. The costly ones that are within every bound
are decoded, and what goes into the library is Book AI's own baseline JPEG."""

import os

import pytest

from helpers.images import jpeg_progressive, png, png_bomb, png_damaged, png_of_side
from helpers.memory import MB, peak_growth

REFUSED = {
    'damaged pixel data (89 bytes)': (png_damaged, 'is damaged (its pixel data cannot be unpacked)'),
    '8192x8192 PNG': (lambda: png_of_side(8192, 8192), 'has 8192x8192 pixels'),
    '28 GB of zeros in a 29 MB PNG': (png_bomb, 'holds far more data than its 64x64 pixels need'),
    '1,000 scans of 8192x8192': (lambda: jpeg_progressive(8192, 8192, 3, 1_000), 'has 8192x8192 pixels'),
    '10,000 scans of 8192x8192': (lambda: jpeg_progressive(8192, 8192, 3, 10_000), 'has 8192x8192 pixels'),
    '100,000 scans of 8192x8192': (lambda: jpeg_progressive(8192, 8192, 3, 100_000), 'has 8192x8192 pixels'),
    'progressive 8192x8192 RGB': (lambda: jpeg_progressive(8192, 8192, 3), 'has 8192x8192 pixels'),
    'progressive 8192x8192 CMYK': (lambda: jpeg_progressive(8192, 8192, 4), 'has 8192x8192 pixels'),
    '10,000 scans of 2048x2048': (lambda: jpeg_progressive(2048, 2048, 3, 10_000), 'is a JPEG of more than 100 scans'),
    'progressive 4800x4800 CMYK': (lambda: jpeg_progressive(4800, 4800, 4), 'would keep 175 MB while it reads it'),
}

ACCEPTED = {
    'progressive 4096x4096 CMYK': lambda: jpeg_progressive(4096, 4096, 4),
    '97 repeated scans of 4096x4096': lambda: jpeg_progressive(4096, 4096, 1, 97),
    '6000x4000 PNG': lambda: png_of_side(6000, 4000),
}


@pytest.fixture
def db(tmp_path):
    """A real calibre library of two books: 1 with a cover, 2 without."""
    from calibre.ebooks.metadata.book.base import Metadata
    from calibre.library import db as open_library
    from calibre.utils.img import save_cover_data_to
    cache = open_library(str(tmp_path / 'library')).new_api
    for i in (1, 2):
        cache.create_book_entry(Metadata(f'Book {i}', ['Ann Author']))
    cache.set_cover({1: save_cover_data_to(png(30, 40, 0x20))})
    yield cache
    cache.close()


@pytest.fixture
def undo(tmp_path):
    from calibre_plugins.bookai.covers.undo import CoverUndo
    return CoverUndo(str(tmp_path / 'undo'))


def cover_file(db, book_id: int) -> bytes | None:
    path = os.path.join(db.backend.library_path, db.field_for('path', book_id), 'cover.jpg')
    if not os.path.exists(path):
        return None
    with open(path, 'rb') as f:
        return f.read()


def apply(db, undo, book_id: int, data: bytes):
    """What cover --apply and the windows do: decoded by Book AI, then put on the book. The
    sentence when it cannot be, else None."""
    from calibre_plugins.bookai.core.images import decode_images
    from calibre_plugins.bookai.covers.library import NotReplaced, replace_cover
    (d,) = decode_images([data], ['The image Pictor sent'], cover=True)
    if not d.ok:
        return d.problem
    try:
        replace_cover(db, db.library_id, book_id, d, undo)
    except NotReplaced as e:
        return str(e)
    return None


@pytest.mark.parametrize('name', sorted(REFUSED))
def test_a_crafted_image_is_refused_in_words_and_nothing_is_lost(db, undo, name):
    from calibre_plugins.bookai.covers.library import undo_cover
    make, words = REFUSED[name]
    data = make()
    lib = db.library_id
    old, old_file = db.cover(1), cover_file(db, 1)
    assert old and old_file == old
    said, grew = peak_growth(lambda: apply(db, undo, 1, data))
    assert isinstance(said, str) and said.startswith('The image Pictor sent ') and words in said, said
    assert grew < 64 * MB  # this process: the image is refused before any decoder
    assert db.cover(1) == old and cover_file(db, 1) == old_file  # the old cover, byte for byte
    assert undo.books(lib) == []  # nothing was replaced: nothing to undo
    assert apply(db, undo, 2, data) == said and db.cover(2) is None and cover_file(db, 2) is None
    # Undo still works: a good cover, then Undo, and the old one is back
    assert apply(db, undo, 1, png(50, 70)) is None and db.cover(1) != old
    assert undo_cover(db, lib, 1, undo) and db.cover(1) == old == cover_file(db, 1)


@pytest.mark.parametrize('name', sorted(ACCEPTED))
def test_a_costly_image_within_every_bound_goes_in_as_book_ais_own(db, undo, name):
    from calibre_plugins.bookai.core.images import cover_box, structure
    from calibre_plugins.bookai.covers.library import undo_cover
    old = db.cover(1)
    assert apply(db, undo, 1, ACCEPTED[name]()) is None
    stored = db.cover(1)
    found = structure(stored, 'It')
    box = cover_box()
    assert found.mime == 'image/jpeg' and not found.progressive and found.scans == 1
    assert found.width <= box[0] and found.height <= box[1]
    assert undo_cover(db, db.library_id, 1, undo) and db.cover(1) == old
