# License: GPLv3 Copyright: the Book AI developers
"""What the library's search by meaning finds that calibre's search by words does not (issue 30):
recall@10 of 20 planted books for 20 queries that paraphrase their descriptions without sharing
a content word with them, hidden among filler books, by meaning (library_search.building.
update_index, then finding.search, with the real embedding model: all-MiniLM-L6-v2 in llama-server)
against calibre's own search on the same words, in the same run.

The library is a real calibre library made through calibre's API (metadata only): the 20 planted
books (PLANTED: title, author, tags, description) and --fillers books of plausible, varied metadata
drawn from word lists (tests/helpers/meaning_library.py filler_books(): novels of people, deeds and
places, non-fiction about subjects; the same each run). Before anything runs, the bench checks that
no content word of a query (three letters or more, not a stop word) is a part of a word of its
book's description, or the other way round (calibre matches words as parts of words: "keep" finds
"keeper"): a search by words cannot find a planted book through its description. Its title, author
and tags may still share a word with the query, as a real book's may.

calibre's search, measured three ways (db.search(), what calibre's search box runs):
  - AND: the query's content words, each a term of its own, all of them required (what typing the
    words into calibre's search box does; its stop words left out, which only helps it);
  - OR: the same words joined by "or", the matches in calibre's default order (newest first);
  - OR ranked: the same matches ordered by how many of the words each book matches (one search per
    word), the newest first among equals: the fairest, a ranking calibre does not do itself.
The planted book counts as found if it is among the first 10 books shown. A control: calibre's AND
of the content words of each description itself, which should find its book.

Run with: sudo python3 bench/run.py library_quality [-- --fillers N]   (default 2,000)

Figures of one run (2026-12-06, bookworm host: calibre 6.13, Python 3.11, on this project's 2-core
machine, all-MiniLM-L6-v2 F16 in llama-server with 2 threads), 2,000 fillers:

    library: 2,020 books (20 planted, 2,000 fillers), made through calibre's API in 2.7 s
    index by meaning: 2,020 books embedded in 27.2 s (74.4 books/s), 0 left out
    rank of each planted book in the first 10 by meaning: 1 for 16 queries, 2 for two (the snowbound
      murder, the chess prodigy), 7 for one (the meat-free dishes), not in the first 10 for one
      (query 11, investing for retirement: the fillers' personal finance books come first)

    recall@10 of the 20 planted books:
      by meaning (finding.search):                       0.95
      calibre's search, words AND:                       0.00   (no query matched any book)
      calibre's search, words OR:                        0.00   (1 to 2,020 matches a query)
      calibre's search, words OR ranked:                 0.00
      control: calibre's AND of the description's words: 1.00
      by meaning against calibre's best: 19 against 0 (no ratio)

calibre finds none, by construction: no query shares a word with its description, and none happened
to share one with its book's title, author or tags. The control shows calibre's search does find
each planted book from its description's own words. The word "true" matches every book in calibre
(a search term, not a word: query 10's OR matches all 2,020).
"""

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path('tests').resolve()))
from helpers.meaning_library import filler_books, make_library  # noqa: E402
from helpers.peers import LlamaServer  # noqa: E402

from calibre_plugins.bookai.library_search import building, finding  # noqa: E402
from calibre_plugins.bookai.library_search.vectors import VectorFiles  # noqa: E402
from calibre_plugins.bookai.providers.registry import get_provider  # noqa: E402

K = 10
# (title, author, tags, description, a query that says the description in other words)
PLANTED = (
    ('The Keeper of Vesterholm', 'Ada Brine', ('Sea', 'Literary fiction'),
     'A lighthouse keeper lives alone on a rocky island and tends the lamp every night.',
     'The man who looks after the beacon on a remote crag spends his evenings in solitude keeping it burning.'),
    ('Snowbound at Harrow Hall', 'Hal Ferrow', ('Mystery',),
     'A detective investigates a murder in a snowbound country house.',
     'An inspector tries to find out who killed a guest at a manor cut off by a blizzard.'),
    ('Weeknight Greens', 'Ivo Marsh', ('Cookery',),
     'Quick vegetarian recipes for busy families on weeknights.',
     'Fast meat-free dishes for parents short on time after work.'),
    ('From Augustus to the Fall', 'Livia Strand', ('History',),
     'A history of the Roman Empire from Augustus to its fall.',
     "The tale of Rome's imperial age, from its first emperor to the collapse."),
    ('The Vineyard Sisters', 'Nora Quill', ('Family', 'Literary fiction'),
     'Two sisters inherit a failing vineyard in France and learn to make wine.',
     'A pair of siblings are left a struggling estate in Burgundy and discover how grapes become a vintage.'),
    ('The Silent Hives', 'Maud Fennel', ('Nature', 'Literary fiction'),
     'A beekeeper loses her hives to a mysterious sickness and fights to save the colonies.',
     'An apiarist whose honey-making insects are dying of an unknown illness struggles to rescue them.'),
    ('Spokes and Chains', 'Otto Wheelwright', ('Cycling', 'DIY'),
     'A practical guide to repairing old bicycles at home with simple tools.',
     'How to fix vintage two-wheelers yourself in the garage using basic equipment.'),
    ('Red Dust Harvest', 'Cass Orbit', ('Science fiction',),
     'An astronaut stranded on Mars grows potatoes to survive until rescue arrives.',
     'A spaceman left behind on the red planet farms tubers to stay alive while waiting to be saved.'),
    ('Emberwing', 'Pip Hollow', ('Fantasy', "Children's"),
     'A young girl befriends a dragon and together they protect their village from invaders.',
     'A little lass grows close to a winged fire-breathing beast, and the pair defend their hamlet against raiders.'),
    ('Second Wind', 'Rob Strider', ('Sport', 'Memoir'),
     'A memoir of running a marathon after recovering from a heart attack.',
     "The true account of finishing a 42-kilometre race once the author's cardiac arrest had healed."),
    ('Slow Money', 'Penny Ledger', ('Finance',),
     'An introduction to investing in stocks and bonds for people saving for retirement.',
     "A beginner's explanation of putting cash into shares and fixed-income securities to quit working "
     'comfortably later in life.'),
    ("The Widow's Cup", 'Arthur Gaslight', ('Mystery', 'Historical fiction'),
     'A detective in Victorian London hunts a poisoner who targets wealthy widows.',
     "An investigator in nineteenth-century England's capital tracks a killer using toxins against rich "
     'women whose husbands died.'),
    ('Wild Yeast', 'Bea Crumb', ('Cookery',),
     'A sourdough baking book with recipes for rustic loaves and starters.',
     'Making naturally leavened bread: country-style crusty breads, and how to keep your fermented culture alive.'),
    ('The Pawn from Ward Nine', 'Lev Gambit', ('Fiction',),
     'A chess prodigy from a poor neighbourhood rises to challenge the world champion.',
     'A gifted child from the slums climbs the ranks to face the title holder at the sixty-four-square board game.'),
    ('Birds of the North', 'Wren Aldous', ('Nature', 'Reference'),
     'A field guide to the birds of northern Europe, with illustrations of every species.',
     'An identification handbook for feathered wildlife found across Scandinavia and the Baltic, each kind '
     'drawn in colour.'),
    ('Letters Across the Wire', 'Tom Sapper', ('Historical fiction', 'War'),
     'Two soldiers on opposite sides of the trenches exchange letters during the Great War.',
     "A pair of enemy infantrymen write to each other across no man's land in 1914-1918."),
    ('Quiet Voices', 'Jen Hark', ('Young adult',),
     "A teenager discovers she can hear other people's thoughts and must keep it secret at school.",
     'An adolescent girl finds out she reads minds, and hides this telepathic gift from her classmates.'),
    ('Good Dog, Easy Walks', 'Sam Kennel', ('Pets',),
     'A practical handbook for training puppies to walk on a lead and come when called.',
     'Teaching young dogs to stroll nicely on a leash and return on command.'),
    ('Tidewater City', 'Mara Flood', ('Science fiction',),
     'An architect designs a floating city to shelter refugees from rising seas.',
     'A planner of buildings draws up a town on pontoons to house people displaced by climbing ocean levels.'),
    ('The Bookshop Cat', 'Tilly Purr', ('Cozy', 'Animals'),
     'A cozy novel about a cat who runs a bookshop in a seaside village.',
     'A gentle tale of a feline that manages a store selling reading matter in a coastal hamlet.'),
)
STOP = frozenset('''a about after against all an and are as at be been before behind between but by can did do
does each for from had has have her his how in into is it its many more most not of off on once one or our
out over she so some such than that the their them then there these they this those through to too under
until up very was we were what when where which while who whom whose why will with would you your yourself
who's'''.split())
WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")


def content_words(text: str) -> list[str]:
    """The words of text that carry its meaning: three letters or more, not stop words, in order."""
    words = []
    for w in WORD.findall(text.lower()):
        for part in w.split('-'):
            part = part.removesuffix("'s").strip("'")
            if len(part) >= 3 and part not in STOP and part not in words:
                words.append(part)
    return words


def shared_words(query: str, about: str) -> list[tuple[str, str]]:
    """The pairs of a query's content word and a description's that are one a part of the other."""
    mine = content_words(query)
    theirs = content_words(about)
    return [(q, d) for q in mine for d in theirs if q in d or d in q]


def calibre_ranked(db, words: list[str], k: int) -> tuple[list[int], list[int], list[int]]:
    """calibre's first k books for words: all required (AND), any (OR) in its default order (newest
    first), and any ranked by how many of the words each matches."""
    def newest_first(ids):
        return sorted(ids, reverse=True)  # ids grow with the date added: calibre's default order
    both = newest_first(db.search(' and '.join(f'"{w}"' for w in words)))[:k]
    each = {w: db.search(f'"{w}"') for w in words}
    anyof = set().union(*each.values()) if each else set()
    ordered = newest_first(anyof)[:k]
    ranked = sorted(anyof, key=lambda b: (-sum(b in found for found in each.values()), -b))[:k]
    return both, ordered, ranked


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('--fillers', type=int, default=2000, help='filler books around the planted ones')
    a = ap.parse_args()

    clashes = {q: shared_words(q, about) for _t, _a, _g, about, q in PLANTED}
    clashes = {q: c for q, c in clashes.items() if c}
    if clashes:
        print('queries sharing words with their description:', clashes)
        return 1
    print(f'checked: none of the {len(PLANTED)} queries shares a content word (or a part of one) with its '
          'book\'s description')

    # the planted books among the fillers, spread through the library (every n-th book)
    fillers = filler_books(a.fillers)
    books: list[tuple] = []
    step = max(1, len(fillers) // len(PLANTED))
    at = {}
    for i, (title, author, tags, about, _q) in enumerate(PLANTED):
        books.extend(fillers[i * step:(i + 1) * step])
        at[i] = len(books)
        books.append((title, (author,), tags, '', about))
    books.extend(fillers[len(PLANTED) * step:])
    root = Path(tempfile.mkdtemp())
    t0 = time.perf_counter()
    path, ids = make_library(root, books)
    print(f'library: {len(books):,} books ({len(PLANTED)} planted, {len(books) - len(PLANTED):,} fillers), made '
          f'through calibre\'s API in {time.perf_counter() - t0:.1f} s')
    planted = [ids[at[i]] for i in range(len(PLANTED))]

    from calibre.library import db as open_db
    db = open_db(str(path)).new_api
    try:
        with LlamaServer('embed') as server:
            provider = get_provider('openai_compatible',
                                    settings={'base_url': server.base_url + '/v1', 'model': server.model})
            e = building.embedder(provider, server.model)
            files = VectorFiles(str(root / 'vectors'))
            t0 = time.perf_counter()
            built = building.update_index(db, 'bench', e, files, custom=())
            took = time.perf_counter() - t0
            print(f'index by meaning: {built.embedded:,} books embedded in {took:.1f} s '
                  f'({built.embedded / took:.1f} books/s), {len(built.left_out)} left out')
            index = files.read('bench', model=e.key)
            meaning_found, meaning_rank = 0, []
            calibre = {'AND': 0, 'OR': 0, 'OR ranked': 0}
            control = 0  # calibre's AND of the description's own words: what words do find
            print(f'\n{"query":>5}  {"meaning":>7}  {"AND":>9}  {"OR":>9}  {"OR ranked":>9}   (rank of the planted '
                  'book in the first 10; "-" not there; matches in brackets)')
            for i, (_t, _a, _g, _about, query) in enumerate(PLANTED):
                found = [f.book_id for f in finding.search(db, 'bench', index, e, query, k=K)]
                rank = found.index(planted[i]) + 1 if planted[i] in found else None
                meaning_found += rank is not None
                meaning_rank.append(rank)
                words = content_words(query)
                row = []
                for name, first in zip(calibre, calibre_ranked(db, words, K)):
                    r = first.index(planted[i]) + 1 if planted[i] in first else None
                    calibre[name] += r is not None
                    row.append(r)
                control += planted[i] in calibre_ranked(db, content_words(_about), K)[0]
                matches = (len(db.search(' and '.join(f'"{w}"' for w in words))),
                           len(db.search(' or '.join(f'"{w}"' for w in words))))
                print(f'{i + 1:>5}  {rank or "-":>7}  {str(row[0] or "-") + f" ({matches[0]})":>9}  '
                      f'{str(row[1] or "-") + f" ({matches[1]})":>9}  {row[2] or "-":>9}')
    finally:
        db.close()

    n = len(PLANTED)
    best = max(calibre.values())
    print(f'\nrecall@{K} of the {n} planted books:')
    print(f'  by meaning (finding.search):               {meaning_found / n:.2f}')
    for name, got in calibre.items():
        print(f'  calibre\'s search, words {name:<10}:         {got / n:.2f}')
    print(f'  control: calibre\'s AND of the words of the description itself: {control / n:.2f}')
    ratio = f'{meaning_found / best:.1f}x' if best else f'{meaning_found} against 0 (no ratio)'
    print(f'  by meaning against calibre\'s best ({max(calibre, key=calibre.get)}): {ratio}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
