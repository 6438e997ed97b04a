# License: GPLv3 Copyright: the Book AI developers
"""A real calibre library of three made-up books and calibre's Quick Start Guide (English,
German), with calibre's full-text index made by calibre itself: what Ask my library is
tested on, in process and in its window. Each made-up book has sentences no other holds."""

from pathlib import Path

from helpers.books import quick_start_epub
from helpers.sandbox import Sandbox

LIGHTHOUSE = '''The Keeper of the Lighthouse

Chapter One

Marguerite Falkenrath kept the lighthouse on the island of Vesterholm for thirty years. Every night she climbed
the one hundred and twelve steps to light the great brass lamp.

The brass lamp burned whale oil until the winter of the great storm, when the supply ship never came and
Marguerite burned driftwood instead.

Chapter Two

In spring a young cartographer named Tobias Wendelin arrived to map the treacherous reefs around Vesterholm. He
stayed in the keeper's cottage and drew the reefs by lantern light.
'''

ORCHARD = '''The Quince Orchard

Old Bartholomew Quillfeather grew forty varieties of quince in his orchard above the river Saskel. He pruned the
trees every February with a silver knife his grandmother had given him.

The quince jelly he made each autumn won the county prize nine times, and the recipe, written in green ink, was
hidden inside a hollow apple tree.
'''

FILLER = ('The committee met again on the following morning and discussed the drainage of the lower fields, the '
          'price of seed, the repair of the chapel roof and the state of the northern road. ')
# one paragraph of about 12,000 characters with one distinctive sentence in its middle
ALMANAC = 'The Parish Almanac\n\n' + FILLER * 40 + ('Nobody expected the zeppelin that landed in the turnip field '
                                                  'that spring. ') + FILLER * 40 + '\n'

BOOKS = (  # file name, title, author, text
    ('lighthouse.txt', 'The Keeper of the Lighthouse', 'Ada Brine', LIGHTHOUSE),
    ('orchard.txt', 'The Quince Orchard: A "Tale"', 'Hal Ferrow', ORCHARD),
    ('almanac.txt', 'The Parish Almanac', 'Ivo Marsh', ALMANAC),
)
LIGHTHOUSE_ID, ORCHARD_ID, ALMANAC_ID, GUIDE_ID, KURZ_ID = 1, 2, 3, 4, 5


def make_library(sandbox: Sandbox, name: str = 'library', fts: bool = True, more: tuple[Path, ...] = ()) -> Path:
    """A real library of the books above and calibre's Quick Start Guide (English, German), then the
    book files of more (ids 6, 7...), with calibre's full-text index made by calibre itself when fts."""
    lib = sandbox.root / name
    for file_name, title, author, text in BOOKS:
        path = sandbox.root / file_name
        path.write_text(text, encoding='utf-8')
        r = sandbox.run(['calibredb', '--with-library', lib, 'add', '--title', title, '--authors', author, path])
        assert r.returncode == 0, r
    r = sandbox.run(['calibredb', '--with-library', lib, 'add', quick_start_epub('eng'), quick_start_epub('deu')])
    assert r.returncode == 0 and 'Added book ids: 4, 5' in r.stdout, r
    if more:
        r = sandbox.run(['calibredb', '--with-library', lib, 'add', *more])
        assert r.returncode == 0, r
    if fts:
        r = sandbox.run(['calibredb', '--with-library', lib, 'fts_index', 'enable', '--wait-for-completion',
                         '--indexing-speed', 'fast'])
        assert r.returncode == 0 and 'All books indexed' in r.stdout, r
    return lib
