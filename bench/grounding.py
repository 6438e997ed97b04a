# License: GPLv3 Copyright: the Book AI developers
"""Reading a book for grounding: extracting and indexing a one-million-character EPUB
with Book AI, against converting the same book to TXT with calibre's ebook-convert
(the baseline), in the same run; then the time to find passages for one question,
and the size of the index relative to the book's text.

The EPUB is made once from calibre's four Quick Start Guides (English, German,
French, Italian), repeated until the text passes a million characters.

Run with: sudo python3 bench/run.py grounding
Targets: at most half the baseline's time; retrieval median under 20 ms.
"""

import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.grounding.index import Index, passages

GUIDES = [Path(f'/usr/share/calibre/quick_start/{lang}.epub') for lang in ('eng', 'deu', 'fra', 'ita')]
TARGET_CHARS = 1_000_000
ROUNDS = 5
QUESTIONS = ('How do I convert a book to another format?', 'Where are the news downloads scheduled?',
             'How can I edit the metadata of many books at once?', 'What is the content server?',
             'How do I send books to my e-reader device?')


def make_book(folder):
    parts, size = [], 0
    texts = []
    for g in GUIDES:
        if g.exists():
            book = read_epub(g)
            texts.append('\n\n'.join(p.text for p in book.paragraphs))
    copy = 0
    while size < TARGET_CHARS:
        for t in texts:
            copy += 1
            chunk = f'# Chapter {copy}\n\n' + t
            parts.append(chunk)
            size += len(chunk)
    txt = folder / 'big.txt'
    txt.write_text('\n\n'.join(parts), encoding='utf-8')
    epub = folder / 'big.epub'
    subprocess.run(['ebook-convert', str(txt), str(epub), '--chapter', '//h:h1', '--formatting-type', 'markdown',
                    '--paragraph-type', 'block'], check=True, capture_output=True)
    return epub


def main():
    folder = Path(tempfile.mkdtemp())
    epub = make_book(folder)
    ours, theirs = [], []
    for _r in range(ROUNDS):
        t0 = time.perf_counter()
        subprocess.run(['ebook-convert', str(epub), str(folder / 'out.txt')], check=True, capture_output=True)
        theirs.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        book = read_epub(epub)
        index = Index(passages(book))
        ours.append(time.perf_counter() - t0)
    searches = []
    for _r in range(20):
        for q in QUESTIONS:
            t0 = time.perf_counter()
            index.search(q, k=8, until=book.length // 2)
            searches.append(time.perf_counter() - t0)
    size = len(pickle.dumps((index.passages, index.terms), protocol=pickle.HIGHEST_PROTOCOL))
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f'book: {book.length:,} characters, {len(book.chapters)} chapters, {len(index.passages):,} passages')
    print(f'extract + index (Book AI): median {a:.2f} s of {ROUNDS}; ebook-convert to TXT: median {b:.2f} s')
    print(f'  Book AI / ebook-convert: {a / b:.2f} (target <= 0.50)')
    print(f'retrieval, {len(searches)} searches: median {statistics.median(searches) * 1000:.1f} ms, '
          f'longest {max(searches) * 1000:.1f} ms (target: median < 20 ms)')
    print(f'index size (pickled passages and term counts): {size:,} bytes = {size / book.length:.2f}x the text')
    return 0


if __name__ == '__main__':
    sys.exit(main())
