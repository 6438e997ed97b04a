# License: GPLv3 Copyright: the Book AI developers
"""A real calibre library made through calibre's own API, of books with descriptions (metadata only):
what the library's search by meaning, "More like this" and what to read next are tested on. Five
of its books each have a paraphrase that shares none of their description's content words
(QUERIES): a search by words cannot find them, a search by meaning should."""

from pathlib import Path

# title, authors, tags, series, description
BOOKS = (
    ('The Keeper of Vesterholm', ('Ada Brine',), ('Sea', 'Literary fiction'), 'Vesterholm',
     'A lighthouse keeper lives alone on a rocky island and tends the lamp every night.'),
    ('Snowbound at Harrow Hall', ('Hal Ferrow',), ('Mystery',), '',
     'A detective investigates a murder in a snowbound country house.'),
    ('Weeknight Greens', ('Ivo Marsh',), ('Cookery',), '',
     'Quick vegetarian recipes for busy families on weeknights.'),
    ('From Augustus to the Fall', ('Livia Strand',), ('History',), '',
     'A history of the Roman Empire from Augustus to its fall.'),
    ('The Vineyard Sisters', ('Nora Quill',), ('Family', 'Literary fiction'), '',
     'Two sisters inherit a failing vineyard in France and learn to make wine.'),
    ('Return to Vesterholm', ('Ada Brine',), ('Sea',), 'Vesterholm',
     'The keeper of the island light takes an apprentice, and a storm tests them both.'),
    ('Tides and Charts', ('Tomas Reef',), ('Sea', 'Travel'), '',
     'A sailor maps the coastlines of the northern seas in a small boat.'),
    ('Gardening for Beginners', ('Rosa Thorn',), ('Gardening',), '',
     'How to grow tomatoes, beans and herbs in a small back garden.'),
    ('The Clockmaker', ('Felix Brass',), ('Fantasy',), '',
     'A clockmaker builds a machine that can turn back time by one hour.'),
    ('Patterns of Code', ('Ada Lace',), ('Computing',), '',
     'A guide to writing clear software with tested design patterns.'),
    ('The Orchard Year', ('Bart Quill',), ('Gardening', 'Nature'), '',
     'Twelve months in an old quince orchard above a river.'),
    ('Mountains of Ice', ('Sven Holt',), ('Travel', 'Adventure'), '',
     'An expedition crosses the glaciers of Greenland on skis.'),
)
QUERIES = (  # (words sharing no content word with a book's description, the book's index in BOOKS)
    ('The man who looks after the beacon on a remote rock spends his evenings in solitude keeping it burning.', 0),
    ('An inspector tries to find out who killed a guest at a manor cut off by a blizzard.', 1),
    ('Fast meat-free dishes for parents short on time after work.', 2),
    ("The story of Rome's imperial age, from its first emperor to the collapse.", 3),
    ('A pair of siblings are left a struggling wine estate in Burgundy and discover how grapes become a vintage.', 4),
)


def make_meaning_library(root: Path, name: str = 'meaning', books: tuple = BOOKS) -> tuple[Path, list[int]]:
    """A library at root/name of books (metadata only, no files), made through calibre's API; its
    path and the books' ids in the order of books."""
    from calibre.ebooks.metadata.book.base import Metadata
    from calibre.library import db
    lib = root / name
    lib.mkdir(parents=True, exist_ok=True)
    cache = db(str(lib)).new_api  # made, empty, when the folder has none
    ids = []
    try:
        for title, authors, tags, series, about in books:
            mi = Metadata(title, list(authors))
            mi.tags = list(tags)
            mi.comments = f'<p>{about}</p>'
            if series:
                mi.series, mi.series_index = series, 1.0
            ids.append(cache.create_book_entry(mi))
    finally:
        cache.close()
    return lib, ids
