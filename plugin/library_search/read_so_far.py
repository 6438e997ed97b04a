# License: GPLv3 Copyright: the Book AI developers
"""What a book's entry adds from its chapter summaries (conversation/summaries.py): the chapters
the reader has read, summarized, so that the library is searched by what the books hold as well
as by their metadata. Summaries are made only of what was read, up to the reader's place, so
nothing after it reaches the embedding model. A book's opening is not added: for a book not yet
begun it is past the reader's place too.

The summaries folder of a library is listed once (kept_summaries(): the books that have any, and
when their file last changed, which an update takes as the book's time: a summary made since
the book was embedded embeds it again); a book's summaries are read as every kept file is
(SummaryCache.read: bounded, damaged ones set aside), in the order of its chapters, their
citations ([3]) taken out.
"""

import os
import re
from collections.abc import Iterable

from calibre_plugins.bookai.conversation.summaries import SUFFIX, BookKey, SummaryCache

MAX_FILES = 200_000      # summaries files of a library looked at, at most
MAX_CHARS = 1200         # of a book's summaries in its entry, at most
FILE_NAME = re.compile(r'(\d{1,18})\.([A-Z0-9_]{1,20})' + re.escape(SUFFIX))
CITATION = re.compile(r'\s*\[\d+(?:\s*[,-]\s*\d+)*\]')


def kept_summaries(cache: SummaryCache, library_id: str) -> dict[int, tuple[list[str], float]]:
    """The books of the library with summaries kept: for each, its formats' names and the time
    its newest summaries file changed (seconds since 1970). Only regular files named as
    SummaryCache names them count."""
    out: dict[int, tuple[list[str], float]] = {}
    try:
        with os.scandir(cache.library_folder(library_id)) as entries:
            for n, entry in enumerate(entries):
                if n >= MAX_FILES:
                    break
                m = FILE_NAME.fullmatch(entry.name)
                if m is None or not entry.is_file(follow_symlinks=False):
                    continue
                book_id, fmt = int(m.group(1)), m.group(2)
                mtime = entry.stat(follow_symlinks=False).st_mtime
                fmts, newest = out.get(book_id, ([], 0.0))
                out[book_id] = ([*fmts, fmt], max(newest, mtime))
    except OSError:  # no summaries kept for the library, or a folder that cannot be read
        return {}
    return out


def summaries_text(cache: SummaryCache, library_id: str, book_id: int, fmts: Iterable[str]) -> str:
    """The book's chapter summaries as one text, in the order of its chapters (one model's: the one
    with the most chapters summarized), without citations, at most MAX_CHARS."""
    by_model: dict[str, dict[tuple[int, int], str]] = {}
    for fmt in fmts:
        for s in cache.read(BookKey(library_id, book_id, fmt)):
            by_model.setdefault(s.model, {})[(s.chapter, s.first)] = s.text
    if not by_model:
        return ''
    chosen = max(by_model.values(), key=len)
    text = ' '.join(' '.join(CITATION.sub('', chosen[k]).split()) for k in sorted(chosen))
    return text[:MAX_CHARS]
