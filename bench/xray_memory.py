# License: GPLv3 Copyright: the Book AI developers
"""Memory while making the X-Ray of a 5 MB book (issue 28: under 300 MB resident), with a scripted
model on loopback behind Book AI's real OpenAI-compatible provider (helpers.scripted_model), which
answers every request at once: the most entities each answer may hold (one per capitalised word
the passages sent hold, up to 200, each with a description of two sentences and eight passages), so that the
X-Ray holds as many entities as it keeps (2,000).

The book is the tests' novel, Pride and Prejudice, eight times over (its chapters numbered on,
each copy's names its own), read from its EPUB once. The baseline, measured in the same run, is
what every question about a book already costs: its passages and their index (grounding.index),
made from the same Book. Then: the X-Ray made at the middle of the book and at its end (every
chapter sent, in parts), and shown again from its cache at the end (nothing sent). Peak resident
memory from the kernel's high-water mark (helpers.peak), growth over the process before each step.

Run with: sudo python3 bench/run.py xray_memory
Target: the process under 300 MB resident at its peak.
"""

import dataclasses
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path('tests').resolve()))
from helpers.novel import EPUB  # noqa: E402
from helpers.peak import MB, peak_growth, status  # noqa: E402
from helpers.scripted_model import ScriptedModel, passages_of  # noqa: E402

from calibre_plugins.bookai.conversation import xray as xr  # noqa: E402
from calibre_plugins.bookai.grounding.extract import Book, Chapter, read_epub  # noqa: E402
from calibre_plugins.bookai.grounding.index import Index, passages  # noqa: E402
from calibre_plugins.bookai.providers.registry import get_provider  # noqa: E402

COPIES = 8
SUFFIXES = ('', 'ton', 'ham', 'ley', 'wick', 'ford', 'by', 'worth')
CAPITALISED = re.compile(r'\b[A-Z][a-z]{3,}\b')
NAME = re.compile(r'\b[A-Z][a-z]{3,}(?: [A-Z][a-z]{3,})?\b')


def five_mb_book() -> Book:
    """The novel COPIES times, its chapters numbered on and each copy's names its own (Bennet,
    Bennetton, Bennetham...), so that the X-Ray meets more entities than it keeps."""
    novel = read_epub(EPUB)
    chapters: list[Chapter] = []
    paragraphs = []
    offset = 0
    for copy, suffix in enumerate(SUFFIXES[:COPIES]):
        first = len(chapters)
        for p in novel.paragraphs:
            if p.chapter + first >= len(chapters):
                chapters.append(Chapter(f'{novel.chapters[p.chapter].title} ({copy + 1})', offset))
            text = CAPITALISED.sub(lambda m: m.group() + suffix, p.text)
            paragraphs.append(dataclasses.replace(p, start=offset, chapter=p.chapter + first, text=text))
            offset += len(text) + 1
    return Book(chapters, paragraphs)


def answer(request: dict) -> str:
    """As many entities as an answer may hold: each capitalised name the passages sent hold."""
    sent = passages_of(request)
    found = list(dict.fromkeys(m.group() for _n, _label, text in sent for m in NAME.finditer(text)))
    return json.dumps({'entities': [
        {'name': name, 'kind': 'character', 'other_names': [name.split()[0]],
         'description': f'{name}, as a model would describe {name} in a sentence or two. ' * 2,
         'passages': [n for n, _label, _text in sent][:8]}
        for name in found[:xr.MAX_ENTITIES_PER_ANSWER]]})


def main() -> int:
    book = five_mb_book()
    base = status('VmRSS')
    index, grew_index = peak_growth(lambda: Index(passages(book)))
    del index
    print(f'book: {book.length:,} characters, {len(book.chapters)} chapters; the process holds it in '
          f'{base / MB:.0f} MB resident')
    print(f'baseline: its passages and their index: peak growth {grew_index / MB:.0f} MB')
    cache = xr.XRayCache(tempfile.mkdtemp())
    with ScriptedModel(answer, n_ctx=32768) as model:
        provider = get_provider('openai_compatible', settings={'base_url': model.url + '/v1', 'model': 'tiny'})
        key = xr.XRayKey('bench:1', 'openai_compatible', 'tiny')
        rows = []
        for label, position in (('to the middle', 0.5), ('on to the end', 1.0)):
            before = status('VmRSS')
            t0 = time.perf_counter()
            made, grew = peak_growth(lambda: xr.build_xray(book, position, provider, key, cache))
            seconds = time.perf_counter() - t0
            if isinstance(made, Exception):
                raise made
            rows.append((label, made, grew, before, seconds))
        before = status('VmRSS')
        shown, grew_shown = peak_growth(lambda: xr.cached_xray(book, 1.0, key, cache))
        requests = len(model.requests)
    size = Path(cache.file_of(key)).stat().st_size
    for label, made, grew, before_step, seconds in rows:
        print(f'X-Ray {label}: {made.requests} requests, {len(made.entities):,} entities, {seconds:.1f} s; '
              f'peak growth {grew / MB:.0f} MB ({grew / max(grew_index, 1):.2f}x the baseline), the process '
              f'at most {(before_step + grew) / MB:.0f} MB resident')
    print(f'X-Ray shown from its cache ({size / MB:.1f} MB on disk): {len(shown.entities):,} entities, peak growth '
          f'{grew_shown / MB:.0f} MB ({grew_shown / max(grew_index, 1):.2f}x the baseline), the process at most '
          f'{(before + grew_shown) / MB:.0f} MB resident')
    highest = status('VmHWM')
    print(f'{requests} requests in all; the process\'s high-water mark since the last step: {highest / MB:.0f} MB '
          f'(target: under 300 MB)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
