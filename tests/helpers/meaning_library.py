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


# Fillers: books of plausible, varied metadata made from word lists, the same for the same seed,
# among which the benchmarks hide the books their queries are about (bench/library_quality.py).
FIRST = ('Anna', 'Boris', 'Clara', 'Dmitri', 'Elena', 'Farid', 'Greta', 'Hugo', 'Ines', 'Jonas', 'Keiko', 'Luca',
         'Maren', 'Nils', 'Olga', 'Pavel', 'Rania', 'Simon', 'Talia', 'Umar', 'Vera', 'Wim', 'Yara', 'Zeno')
LAST = ('Abbott', 'Berg', 'Castell', 'Dorn', 'Ekland', 'Falk', 'Gray', 'Hollis', 'Ivers', 'Jansen', 'Kerr', 'Lind',
        'Morrow', 'Nash', 'Okafor', 'Pryce', 'Quint', 'Rowe', 'Sato', 'Tarrant', 'Ulm', 'Vance', 'Wolfe', 'Young')
PEOPLE = ('a retired schoolteacher', 'a young apprentice', 'an estranged brother', 'a disgraced surgeon',
          'a village baker', 'an ambitious journalist', 'a widowed farmer', 'a street musician', 'a shy librarian',
          'a former soldier', 'a travelling salesman', 'an elderly botanist', 'a stubborn mayor', "a ship's cook",
          'a night-shift nurse', 'a failed painter', 'an old fisherman', 'a runaway heiress', 'a country vet',
          'a jazz pianist', 'a lonely widower', 'a forger of old maps', 'a museum guard', 'a tailor')
DEEDS = ('searches for a missing letter', 'opens a small bookshop', 'uncovers a family secret',
         'restores an abandoned theatre', 'trains for a swimming race', 'falls in love with a rival',
         'investigates a string of thefts', 'writes a memoir of the war years', 'builds a wooden boat',
         'runs for local office', 'inherits a crumbling house', 'loses everything in a fire',
         'sets out to walk across the country', 'cares for a dying parent', 'starts a choir',
         'is wrongly accused of a crime', 'tries to save the family shop', 'learns to fly a plane',
         'hides a fugitive in the attic', 'competes in a baking contest', 'reopens an old mine')
PLACES = ('in a mining town in Wales', 'on the outskirts of Lisbon', 'during a long summer in Maine',
          'in nineteenth-century Vienna', 'in a crowded Tokyo suburb', 'on a fishing island off Norway',
          'in a small town in the American Midwest', 'in wartime Naples', 'in a border village in the Pyrenees',
          'in present-day Glasgow', 'in the Australian outback', 'in a Quebec logging camp',
          'in a Berlin tenement in the 1920s', 'in a hill station in India', 'in a Dutch polder village')
TONES = ('A warm story about second chances.', 'Told with humour and tenderness.',
         'A tense and surprising page-turner.', 'A quiet novel about grief and friendship.',
         'Funny, sad and wise.', 'A sweeping saga over three generations.', 'A debut of rare confidence.',
         'A story of courage against the odds.', 'Full of unforgettable characters.', '')
SUBJECTS = (('the history of the printing press', 'History'), ('personal finance', 'Finance'),
            ('urban gardening', 'Gardening'), ('Italian cooking', 'Cookery'), ('the French Revolution', 'History'),
            ('learning to draw', 'Art'), ('the philosophy of the Stoics', 'Philosophy'),
            ('writing fiction', 'Writing'), ('the chemistry of everyday life', 'Science'),
            ('the geology of volcanoes', 'Science'), ('woodworking', 'Crafts'), ('photography', 'Art'),
            ('public speaking', 'Self-help'), ('the Cold War', 'History'), ('statistics', 'Mathematics'),
            ('home brewing', 'Cookery'), ('the human brain', 'Science'), ('knitting', 'Crafts'),
            ('the Silk Road', 'History'), ('running a small business', 'Business'))
MANNERS = ('A practical guide to {s} for beginners.', 'An accessible introduction to {s}.',
           'Everything you need to know about {s}, with worked examples.', 'Essays on {s} and why it matters.',
           'A lively history of {s}.', 'The complete handbook of {s}, revised and updated.')
GENRES = ('Literary fiction', 'Mystery', 'Historical fiction', 'Romance', 'Family', 'Thriller', 'Humour')
NOUNS = ('Harbour', 'Letter', 'Garden', 'Winter', 'House', 'River', 'Orchard', 'Bridge', 'Lantern', 'Choir',
         'Map', 'Island', 'Kitchen', 'Mill', 'Station', 'Tailor', 'Secret', 'Summer', 'Road', 'Violin')
ADJECTIVES = ('Last', 'Silent', 'Little', 'Forgotten', 'Golden', 'Long', 'Hidden', 'Broken', 'Northern', 'Quiet')
PUBLISHERS = ('Harbour Press', 'Greyfield', 'Northlight Books', 'Pelham & Rowe', 'Small Hours', 'Atlas House')


def filler_books(count: int, seed: int = 30) -> list[tuple]:
    """count books (title, authors, tags, series, description) of plausible metadata drawn from the
    word lists above: two in three novels, the rest non-fiction; the same for the same seed."""
    import random
    rng = random.Random(seed)
    out = []
    for n in range(count):
        author = (f'{rng.choice(FIRST)} {rng.choice(LAST)}',)
        if rng.random() < 2 / 3:
            title = rng.choice((f'The {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}',
                                f'The {rng.choice(NOUNS)} of {rng.choice(PLACES).split()[-1]}',
                                f'{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}s'))
            person = rng.choice(PEOPLE)
            about = f'{person[0].upper()}{person[1:]} {rng.choice(DEEDS)} {rng.choice(PLACES)}. {rng.choice(TONES)}'
            tags = tuple(dict.fromkeys(rng.sample(GENRES, rng.randint(1, 2))))
        else:
            subject, tag = rng.choice(SUBJECTS)
            title = rng.choice((f'{subject[0].upper()}{subject[1:]}', f'A Short Book of {subject.title()}',
                                f'Understanding {subject.title()}'))
            about = rng.choice(MANNERS).format(s=subject)
            tags = (tag, 'Non-fiction')
        series = f'{rng.choice(NOUNS)} Chronicles' if rng.random() < 0.05 else ''
        out.append((f'{title} ({n + 1})' if rng.random() < 0.5 else title, author, tags, series, about.strip()))
    return out


def make_library(root: Path, books: list[tuple] | tuple, name: str = 'library', one_transaction: bool = True,
                 publishers: bool = True) -> tuple[Path, list[int]]:
    """Like make_meaning_library(), for many books: in one SQLite transaction when one_transaction
    (calibre's create_book_entry() for each, as calibre's add does, without a commit per book), a
    publisher for each when publishers. Its path and the books' ids in the order of books."""
    from calibre.ebooks.metadata.book.base import Metadata
    from calibre.library import db
    lib = root / name
    lib.mkdir(parents=True, exist_ok=True)
    cache = db(str(lib)).new_api
    ids = []

    def add_all() -> None:
        for n, (title, authors, tags, series, about) in enumerate(books):
            mi = Metadata(title, list(authors))
            mi.tags = list(tags)
            if about:
                mi.comments = f'<p>{about}</p>'
            if series:
                mi.series, mi.series_index = series, float(n % 9 + 1)
            if publishers:
                mi.publisher = PUBLISHERS[n % len(PUBLISHERS)]
            ids.append(cache.create_book_entry(mi))
    try:
        if one_transaction:
            with cache.backend.conn:  # apsw: one savepoint, committed at the end
                add_all()
        else:
            add_all()
    finally:
        cache.close()
    return lib, ids
