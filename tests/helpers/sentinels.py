# License: GPLv3 Copyright: the Book AI developers
"""The real novel with sentinel text after the reader's place: what no request a model receives may
hold, on any path that keeps to the place (summaries, the story so far, since an earlier place, a
series' earlier books).

with_sentinels() puts sentinel paragraphs into a Book read from the novel (right after the place,
in the chapter the reader is inside; at the start of the next chapter; at the end of the book);
epub_with_sentinel() writes a copy of the novel's EPUB with one right after the place, for the
command line. Each place is the end of a paragraph, so that the sentinel is the very next text."""

import json
import re
import shutil
import zipfile
from dataclasses import replace
from pathlib import Path

from helpers.novel import EPUB

SENTINELS = ('ZQX SENTINEL AFTER THE PLACE: the vicar eloped with the housekeeper.',
             'ZQX SENTINEL NEXT CHAPTER: a zeppelin landed at Longbourn.',
             'ZQX SENTINEL LAST PAGE: everyone moved to Patagonia.')
MARK = 'ZQX SENTINEL'


def paragraph_end_at(book, fraction: float) -> int:
    """The index of the paragraph ending nearest after fraction of book, not the last of its chapter,
    whose text is plain (letters, spaces and simple punctuation at its start: findable in the HTML)."""
    until = int(fraction * book.length)
    paras = book.paragraphs
    for k in range(len(paras) - 1):
        p, after = paras[k], paras[k + 1]
        if p.start + len(p.text) >= until and after.chapter == p.chapter and len(after.text) > 80 and re.fullmatch(
                r'[A-Za-z ,.;]{40}', after.text[:40]):
            return k
    raise ValueError('no paragraph fits')


def with_sentinels(book, fraction: float):
    """(a copy of book with the sentinels inserted, the place: a fraction of the new book at the end of
    the paragraph before the first sentinel). The sentinels: right after the place, at the start of the
    next chapter, at the end of the book."""
    from calibre_plugins.bookai.grounding.extract import Book, Paragraph
    k = paragraph_end_at(book, fraction)
    paras = list(book.paragraphs)
    chapter = paras[k].chapter
    nxt = next(i for i in range(k + 1, len(paras)) if paras[i].chapter != chapter)
    inserts = {k + 1: SENTINELS[0], nxt: SENTINELS[1], len(paras): SENTINELS[2]}
    out, shift = [], 0
    for i in range(len(paras) + 1):
        if i in inserts:
            like = paras[min(i, len(paras) - 1)]
            start = out[-1].start + len(out[-1].text) + 1
            out.append(Paragraph(like.chapter, start, inserts[i], like.path))
            shift += len(inserts[i]) + 1
        if i < len(paras):
            out.append(replace(paras[i], start=paras[i].start + shift))
    firsts = {}
    for p in out:
        firsts.setdefault(p.chapter, p.start)
    fixed = [replace(c, start=firsts.get(n, c.start)) for n, c in enumerate(book.chapters)]
    new = Book(fixed, out, list(book.skipped), dict(book.reasons))
    place = paras[k].start + len(paras[k].text)
    return new, place / new.length


def epub_with_sentinel(dest: Path, fraction: float) -> tuple[Path, str]:
    """A copy of the novel's EPUB at dest with SENTINELS[0] as a paragraph of its own right after the
    paragraph ending nearest after fraction; (its path, the start of the paragraph it comes before)."""
    from calibre_plugins.bookai.grounding.extract import read_epub
    book = read_epub(EPUB)
    k = paragraph_end_at(book, fraction)
    snippet = book.paragraphs[k + 1].text[:40]
    shutil.copy(EPUB, dest)
    with zipfile.ZipFile(EPUB) as src:
        members = [(i, src.read(i.filename)) for i in src.infolist()]
    done = False
    with zipfile.ZipFile(dest, 'w') as out:
        for info, data in members:
            if not done and info.filename.endswith(('.html', '.xhtml', '.htm')):
                text = data.decode('utf-8')
                at = text.find(snippet)
                if at >= 0:
                    p = text.rfind('<p', 0, at)
                    tag = re.match(r'<p[^>]*>', text[p:]).group()
                    text = text[:p] + f'{tag}{SENTINELS[0]}</p>\n' + text[p:]
                    data, done = text.encode('utf-8'), True
            out.writestr(info, data)
    assert done, snippet
    return dest, snippet


def place_before_sentinel(book) -> float:
    """The place (a fraction of book) at the end of the paragraph just before SENTINELS[0]."""
    i = next(i for i, p in enumerate(book.paragraphs) if p.text == SENTINELS[0])
    p = book.paragraphs[i - 1]
    return (p.start + len(p.text)) / book.length


def bodies_with_sentinels(received) -> list[str]:
    """The request bodies (a RecordingProxy's received, or bodies) that hold any sentinel text, whole or in
    part, in any encoding JSON may give it."""
    found = []
    for item in received:
        body = item[2] if isinstance(item, tuple) else item
        text = body.decode('utf-8', 'replace') if isinstance(body, bytes) else str(body)
        try:
            text += json.dumps(json.loads(text), ensure_ascii=False)
        except ValueError:
            pass
        if MARK in text or any(s[12:40] in text for s in SENTINELS):
            found.append(text[:300])
    return found
