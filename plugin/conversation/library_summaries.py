# License: GPLv3 Copyright: the Book AI developers
"""Chapter summaries of a library's books, made ahead, up to each reader's place: the one way
Make chapter summaries (a calibre job in the library, main_window/summary_actions.py) and
`summaries` on the command line make them.

For each book: its text, read as the discussion window reads it (question.library_book_text,
from the text cache), the reader's place saved by the E-book viewer (or given), and the chapters
read to their end before it (summaries.chapter_segments: the chapter the reader is inside is sent
in full by "Everything up to where I am" and the story so far, so it is not summarized). A book
with no known place gets nothing: nothing of it is sent, and the log says why. What is kept
already for the model is not made again (summaries.summarize); Stop keeps what was made.

plan_books() (reads the books: not on the GUI thread), then estimate_books() (what will be sent
and cost, for the reader's consent when the provider is online), then make_summaries().
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from calibre_plugins.bookai.conversation.question import SO_FAR_CONSENT, library_book_text
from calibre_plugins.bookai.conversation.summaries import (
    BookKey, BookSummaries, Estimate, Segment, SummaryCache, SummaryRun, chapter_segments, estimate_summaries,
    model_key, part_tokens, parts_of, summarize,
)
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.core.messages import Cost
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.grounding.extract import UnreadableBook
from calibre_plugins.bookai.grounding.formats import choose_format
from calibre_plugins.bookai.grounding.reading_position import saved_position
from calibre_plugins.bookai.grounding.so_far import read_until
from calibre_plugins.bookai.providers.pricing import cost_text, total_cost

if TYPE_CHECKING:
    from calibre.db.cache import Cache

    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

Log = Callable[[str], None]
Progress = Callable[[float, str], None]  # (fraction done of the whole run, what is done now, in words)


@dataclass
class BookPlan:
    """One book's part of a run: the chapters to summarize (missing: those not kept yet), or why none."""
    book_id: int
    title: str
    key: BookKey | None = None
    about: str = ''                 # "Emma by Jane Austen", as a summary request names the book
    position: float | None = None   # the reader's place, a fraction of the book
    segments: tuple[Segment, ...] = ()
    missing: tuple[Segment, ...] = ()
    why: str = ''                   # why nothing of it is summarized, in words ('' when something may be)

    @property
    def consent(self) -> str:
        """The book as the reader's consent to send its text read so far names it."""
        return self.key.consent + SO_FAR_CONSENT if self.key is not None else ''


@dataclass
class Plans:
    """The books of a run, the model that summarizes and how much of a book one request holds."""
    books: list[BookPlan]
    model: str
    part_tokens: int

    @property
    def consent_keys(self) -> tuple[str, ...]:
        return tuple(b.consent for b in self.books if b.missing)

    @property
    def requests(self) -> int:
        return sum(len(parts_of(s.passages, self.part_tokens)) for b in self.books for s in b.missing)


def plan_book(db: 'Cache', book_id: int, provider: 'AIProviderPlugin', model: str, cache: SummaryCache,
              position: float | None = None) -> BookPlan:
    """What a run does for book_id: its text read (Unreadable: said), its place (position, else the
    viewer's saved one; none: nothing), its chapters read to their end, those kept found."""
    title = db.field_for('title', book_id) or str(book_id)
    authors = ' & '.join(db.field_for('authors', book_id) or ())
    plan = BookPlan(book_id, title, about=f'{title} by {authors}' if authors else title)
    fmt = choose_format(db.formats(book_id) or ())
    if fmt is None:
        plan.why = _('it has no file with text that can be read.')
        return plan
    try:
        book, _index = library_book_text(db, book_id, fmt)
    except UnreadableBook as e:
        plan.why = str(e)
        return plan
    plan.key = BookKey(db.library_id, book_id, fmt)
    if position is None:
        path = db.format_abspath(book_id, fmt)
        position = saved_position(path, book) if path else None
    if position is None:
        plan.why = _('Book AI does not know where you are in it (open it in the E-book viewer, which saves your '
                     'place): nothing of it was sent.')
        return plan
    plan.position = position
    plan.segments = tuple(chapter_segments(book, read_until(book, position), current=False))
    if not plan.segments:
        plan.why = _('no chapter of it has been read to its end yet.')
        return plan
    kept = BookSummaries(cache, plan.key)
    name = model_key(provider, model)
    plan.missing = tuple(s for s in plan.segments if kept.find(name, s) is None)
    return plan


def plan_books(db: 'Cache', book_ids: Sequence[int], provider: 'AIProviderPlugin', model: str = '',
               cancel: CancelToken | None = None, cache: SummaryCache | None = None,
               position: float | None = None) -> Plans:
    """plan_book() for each of book_ids, with model (default: the provider's choice, which may ask
    the service) and the parts its window holds. Raises ProviderError, Cancelled."""
    cache = cache or SummaryCache()
    model = model or provider.choose_model(cancel=cancel)
    try:
        window = provider.context_window(model, cancel)
    except ProviderError:
        window = None
    most = part_tokens(window.tokens if window is not None and window.tokens else None)
    books = []
    for book_id in book_ids:
        if cancel is not None and cancel.cancelled:
            raise Cancelled()
        books.append(plan_book(db, book_id, provider, model, cache, position))
    return Plans(books, model, most)


def estimate_books(plans: Plans, provider: 'AIProviderPlugin') -> Estimate:
    """What making the summaries missing will send and cost, before any of it is sent."""
    total = Estimate(0, 0, 0, None, provider.connection.is_local)
    for b in plans.books:
        if b.missing:
            total = total + estimate_summaries(provider, plans.model, b.missing, plans.part_tokens, b.about)
    return total


def described(plans: Plans, estimate: Estimate) -> str:
    """What a run will do, in words, with its estimate."""
    chapters = sum(len(b.missing) for b in plans.books)
    books = sum(1 for b in plans.books if b.missing)
    return ngettext('{chapters} chapter to summarize', '{chapters} chapters to summarize', chapters).format(
        chapters=chapters) + ' ' + ngettext('in {books} book: {estimate}.', 'in {books} books: {estimate}.',
                                            books).format(books=books, estimate=estimate.said())


@dataclass
class BooksRun:
    """What make_summaries() did."""
    made: int = 0        # summaries made
    found: int = 0       # summaries kept already
    books: int = 0       # books whose chapters read all have a summary now
    skipped: list[str] = field(default_factory=list)   # books nothing was done for, and why, in words
    failed: list[str] = field(default_factory=list)    # what could not be made, in words
    runs: list[SummaryRun] = field(default_factory=list)
    stopped: bool = False
    error: str = ''      # the service failed: the run ended there, in words
    local: bool = False

    @property
    def cost(self) -> Cost | None:
        return total_cost(r.cost for r in self.runs if r.usage) if any(r.usage for r in self.runs) else None

    def said(self) -> str:
        """The run's outcome, in words."""
        parts = [ngettext('{count} chapter summary made', '{count} chapter summaries made', self.made).format(
            count=self.made)]
        if self.found:
            parts.append(ngettext('{count} kept already', '{count} kept already', self.found).format(count=self.found))
        text = ', '.join(parts) + ' (' + cost_text(self.cost, self.local) + ').'
        if self.stopped:
            text = _('Stopped: the summaries made so far are kept.') + ' ' + text
        if self.error:
            text += ' ' + self.error
        if self.failed:
            text += ' ' + ' '.join(self.failed)
        if self.skipped:
            text += ' ' + ngettext('Nothing was done for {count} book.', 'Nothing was done for {count} books.',
                                   len(self.skipped)).format(count=len(self.skipped))
        return text


def make_summaries(plans: Plans, provider: 'AIProviderPlugin', cancel: CancelToken | None = None,
                   progress: Progress | None = None, log: Log | None = None,
                   cache: SummaryCache | None = None) -> BooksRun:
    """The summaries of plans' chapters not kept yet, book after book (summaries.summarize: each kept as
    it is made). progress(fraction of the run, "Summarizing CHAPTER of TITLE"); log(a line) for each book.
    Stop (cancel) ends it, those made kept; a service's failure ends it, said."""
    cache = cache or SummaryCache()
    cancel = cancel or CancelToken()
    out = BooksRun(local=provider.connection.is_local)
    total = max(1, plans.requests)
    done_before = 0

    def tell(text: str) -> None:
        if log is not None:
            log(text)
    for b in plans.books:
        title = one_line(b.title)
        if b.why or b.key is None:
            out.skipped.append(f'{title}: {b.why}')
            tell(_('{title}: {why}').format(title=title, why=b.why))
            continue
        if not b.missing:
            out.found += len(b.segments)
            out.books += 1
            tell(ngettext('{title}: its chapter read has a summary already.',
                          '{title}: its {count} chapters read have a summary already.', len(b.segments)).format(
                title=title, count=len(b.segments)))
            continue
        base = done_before

        def step(done: int, count: int, chapter: str, base: int = base, title: str = title) -> None:
            if progress is not None and chapter:
                progress(min(1.0, (base + done) / total), _('Summarizing {chapter} of {title}').format(
                    chapter=one_line(chapter), title=title))
        try:
            run = summarize(provider, plans.model, b.missing, BookSummaries(cache, b.key), plans.part_tokens, b.about,
                            cancel, step)
        except Cancelled:
            out.stopped = True
            tell(_('{title}: stopped; the summaries made so far are kept.').format(title=title))
            break
        out.runs.append(run)
        out.made += run.made
        out.found += run.found + len(b.segments) - len(b.missing)
        out.failed += [f'{title}: {f}' for f in run.failed]
        done_before += sum(len(parts_of(s.passages, plans.part_tokens)) for s in b.missing)
        for notice in run.notices:
            tell(f'{title}: {notice}')
        tell(ngettext('{title}: {count} chapter summary made.', '{title}: {count} chapter summaries made.',
                      run.made).format(title=title, count=run.made))
        if run.error is not None:
            out.error = str(run.error)
            tell(f'{title}: {run.error}')
            break
        if not run.failed:
            out.books += 1
    if progress is not None:
        progress(1.0, _('Done'))
    return out
