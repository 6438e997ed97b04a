# License: GPLv3 Copyright: the Book AI developers
"""Reading a book for grounding: extracting and indexing a one-million-character EPUB
with Book AI, against converting the same book to TXT with calibre's ebook-convert
(the baseline), in the same run; then the time to find passages for one question;
then the text cache: the size on disk of a book's cache file (its Book, from which the
Index is rebuilt on load) relative to the book's text, and the time to load it against
reading the book anew, from the EPUB and from an AZW3 (calibre's conversion, in process).

The EPUB is made once from calibre's four Quick Start Guides (English, German,
French, Italian), repeated until the text passes a million characters.

Run with: sudo python3 bench/run.py grounding
Targets: at most half the baseline's time; retrieval median under 20 ms; the cache file
under the text's size, and loading it far faster than reading an AZW3.
"""

import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from calibre_plugins.bookai.grounding.cache import TextCache
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.grounding.formats import read_book
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
    naive = len(pickle.dumps((index.passages, index.terms), protocol=pickle.HIGHEST_PROTOCOL))
    cache_size, cached_length, loads, epub_reads, azw3_reads = cache_figures(folder, epub)
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f'book: {book.length:,} characters, {len(book.chapters)} chapters, {len(index.passages):,} passages')
    print(f'extract + index (Book AI): median {a:.2f} s of {ROUNDS}; ebook-convert to TXT: median {b:.2f} s')
    print(f'  Book AI / ebook-convert: {a / b:.2f} (target <= 0.50)')
    print(f'retrieval, {len(searches)} searches: median {statistics.median(searches) * 1000:.1f} ms, '
          f'longest {max(searches) * 1000:.1f} ms (target: median < 20 ms)')
    print(f'index size, pickled passages and term counts: {naive:,} bytes = {naive / book.length:.2f}x the text')
    print(f'index size on disk, the text cache\'s file: {cache_size:,} bytes = {cache_size / cached_length:.2f}x '
          f'the text (target < 1)')
    load, from_epub, from_azw3 = (statistics.median(t) for t in (loads, epub_reads, azw3_reads))
    print(f'cache load (Book unpickled, Index rebuilt): median {load * 1000:.0f} ms; reading anew: from the EPUB '
          f'{from_epub * 1000:.0f} ms ({load / from_epub:.2f}x), from an AZW3 {from_azw3:.2f} s '
          f'({load / from_azw3:.3f}x)')
    return 0


def cache_figures(folder, epub):
    """The cache file's size and its book's length, and times: loads from the cache, reads (with
    the Index) of the EPUB and of the same book as AZW3, converted by calibre in this process."""
    azw3 = folder / 'big.azw3'
    subprocess.run(['ebook-convert', str(epub), str(azw3)], check=True, capture_output=True)
    cache = TextCache(folder / 'cache')
    loads, epub_reads, azw3_reads = [], [], []
    for _r in range(ROUNDS):
        t0 = time.perf_counter()
        book = read_epub(epub)
        Index(passages(book))
        epub_reads.append(time.perf_counter() - t0)
    for _r in range(3):
        t0 = time.perf_counter()
        book = read_book(azw3, 'AZW3', folder)  # converted to folder/big.azw3.epub
        Index(passages(book))
        azw3_reads.append(time.perf_counter() - t0)
    cache.put('bench', 1, 'AZW3', azw3, book)
    for _r in range(ROUNDS):
        t0 = time.perf_counter()
        assert cache.get('bench', 1, 'AZW3', azw3) is not None
        loads.append(time.perf_counter() - t0)
    size = Path(cache.file_of('bench', 1, 'AZW3')).stat().st_size
    return size, book.length, loads, epub_reads, azw3_reads


if __name__ == '__main__':
    sys.exit(main())
