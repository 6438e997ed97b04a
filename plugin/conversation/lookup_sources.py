# License: GPLv3 Copyright: the Book AI developers
"""What was made of a book before and kept, for the model's lookups (grounding/book_tools.py): the
chapter summaries (conversation/summaries.py) and the X-Ray (conversation/xray.py) kept for the book
and the model that answers. Read from their files only: nothing is made, nothing is sent, no service
is asked (without a model set, the X-Ray and summaries of "the model" cannot be told: none is read).
BookTools then shows of them only what comes before the reader's place."""

from calibre_plugins.bookai.conversation.summaries import BookKey, BookSummaries, SummaryCache, chapter_segments
from calibre_plugins.bookai.conversation.summaries import model_key as summary_model
from calibre_plugins.bookai.conversation.xray import XRay, XRayCache, XRayKey, cached_xray
from calibre_plugins.bookai.grounding.book_tools import Kept, KeptXRay
from calibre_plugins.bookai.grounding.extract import Book
from calibre_plugins.bookai.grounding.scopes import NoPlace
from calibre_plugins.bookai.grounding.so_far import read_until
from calibre_plugins.bookai.providers.base import AIProviderPlugin

MOST_ENTRY_CHARS = 1200  # of an X-Ray entry as a lookup gives it


def kept_for_lookups(provider: AIProviderPlugin, model: str, book: Book, position: float | None, key: BookKey,
                     xray_book: str, language: str = '', summaries: SummaryCache | None = None,
                     xrays: XRayCache | None = None) -> Kept:
    """The summaries and X-Ray kept for book (key: its summaries' key; xray_book: its X-Ray's, "library
    id:book id" or its file) by provider's model, up to position; Kept() when there is no model or
    place, or nothing is kept. A file that cannot be read is none (its own reader sets it aside)."""
    if not model or position is None:
        return Kept()
    until = read_until(book, position)
    found: dict[int, str] = {}
    kept = BookSummaries(summaries or SummaryCache(), key)
    name = summary_model(provider, model)
    for segment in chapter_segments(book, until, current=False):
        summary = kept.find(name, segment)
        if summary is not None:
            found[segment.chapter] = summary.text
    try:
        xray = cached_xray(book, position, XRayKey(xray_book, provider.name, model, language), xrays)
    except NoPlace:
        xray = None
    return Kept(found, tools_view(xray))


def tools_view(xray: XRay | None) -> KeptXRay | None:
    """The X-Ray as a lookup reads it: an entry for a name, in plain words; None for no X-Ray."""
    if xray is None or not xray.entities:
        return None
    x = xray  # not None, in the closure

    def entry(name: str) -> str | None:
        found = x.search(name)
        if not found:
            return None
        e = found[0]
        also = f' (also {", ".join(e.other_names)})' if e.other_names else ''
        return f'{e.name}{also}, a {e.kind}: {e.description}'[:MOST_ENTRY_CHARS]
    return KeptXRay(xray.until, entry)
