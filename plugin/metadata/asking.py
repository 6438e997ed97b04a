# License: GPLv3 Copyright: the Book AI developers
"""AI metadata asked of a model: one book (ask_book()), and many, a few requests at once
(ask_books()), without Qt; the calibre job and `metadata` both run these.

A book goes as what was read of it when the job began (BookRead: its details as text, the
fields' values then, and, only with the reader's consent, the opening of its text). The answer
is asked for in the fields' JSON Schema where the service takes one (providers.base.structured();
a service that refuses the schema is asked again without it, and not sent it again in that run),
read whole and bounded (providers.streaming.schema_answer, MAX_ANSWER_CHARS), parsed bounded
(core.limits.json_in, whatever a chatty model wrote around the JSON) and each field checked
(metadata.fields.checked). Only values that differ from the book's become Proposals; nothing is
written here (metadata/changes.py).
"""

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from calibre_plugins.bookai.conversation.prompts import metadata_field_request, metadata_messages
from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.core.messages import Failed, Message, Usage
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.metadata.changes import Proposal, comparable
from calibre_plugins.bookai.metadata.fields import Checked, Field, answer_schema, checked, language_note
from calibre_plugins.bookai.providers.streaming import schema_answer

if TYPE_CHECKING:
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

MAX_ANSWER_CHARS = 40_000   # an answer longer than this is not read further
ANSWER_TOKENS = 1500
MOST_AT_ONCE = 8            # requests at once, whatever the setting says
MAX_DETAILS_CHARS = 6000    # a book's details as sent
MAX_TEXT_CHARS = 8000       # the opening of its text, when it goes
MAX_KNOWN_TAGS = 150        # the library's tags named to the model (the most used)


@dataclass(frozen=True)
class BookRead:
    """One book as the job read it when it began: its library and id, its title (for the reader),
    its details as text for the model, the fields' values then (by calibre lookup name), and the
    opening of its text ('' when the reader did not let it go)."""
    library_id: str
    book_id: int
    title: str
    details: str
    values: Mapping[str, Any]
    text: str = ''


@dataclass(frozen=True)
class BookAnswer:
    """What the model gave for one book: the proposals (the values that differ from the book's), the
    fields' words for the reader (what was refused or cut, tags new to the library), a problem with
    the whole answer or the request, in words, and what the request used."""
    book: BookRead
    proposals: tuple[Proposal, ...] = ()
    notes: tuple[str, ...] = ()
    error: str = ''
    usage: Usage = field(default_factory=Usage)


@dataclass
class Asking:
    """One run's provider, model, fields and the library's vocabularies (tags), and whether the
    service still takes the schema (shared by the run's requests)."""
    provider: 'AIProviderPlugin'
    model: str
    fields: Sequence[Field]
    vocabularies: Mapping[str, Sequence[str]] = field(default_factory=dict)
    language: str = ''
    structured: bool = True


def fields_for(book: BookRead, fields: Sequence[Field]) -> list[Field]:
    """The fields asked of book: a description only where it has none."""
    return [f for f in fields if not (f.key == 'comments' and comparable(book.values.get('comments')) is not None)]


def messages_for(run: Asking, book: BookRead, fields: Sequence[Field]) -> list[Message]:
    details = book.details[:MAX_DETAILS_CHARS]  # the title among them
    if book.text:
        details += '\n\nThe opening of the book:\n' + book.text[:MAX_TEXT_CHARS]
    asked = [(f.name, metadata_field_request(f.key, f.label, f.datatype, f.multiple, f.values, f.instruction))
             for f in fields]
    known = list(run.vocabularies.get('tags', ()))[:MAX_KNOWN_TAGS] if any(f.key == 'tags' for f in fields) else []
    return metadata_messages(details, asked, known, run.language)


def parsed_answer(text: object, fields: Sequence[Field],
                  vocabularies: Mapping[str, Sequence[str]] | None = None) -> tuple[dict[str, Checked], str]:
    """The fields' values in a model's answer, each checked (by calibre lookup name), and a problem
    with the whole answer in words ('' for none). Read bounded: at most MAX_ANSWER_CHARS, then
    core.limits.json_in: the outermost object, whatever was written around it."""
    if not isinstance(text, str):
        return {}, _('The model did not answer with text.')
    if len(text) > MAX_ANSWER_CHARS:
        return {}, _('The model answered at too great a length: its answer was not read.')
    value = limits.json_in(text)
    if not isinstance(value, dict):
        return {}, _('The model did not answer with the JSON object asked for.')
    known = vocabularies or {}
    return {f.key: checked(f, value.get(f.name), known.get(f.key, ())) for f in fields}, ''


def ask_book(run: Asking, book: BookRead, cancel: CancelToken | None = None) -> BookAnswer:
    """book's metadata asked of run's model (see the module's doc). Raises Cancelled on Stop; a
    request that fails is the BookAnswer's error, in words."""
    cancel = cancel or CancelToken()
    fields = fields_for(book, run.fields)
    if not fields:
        return BookAnswer(book, notes=(_('Nothing to fill: the book has a description already.'),))
    messages = messages_for(run, book, fields)
    read, run.structured = schema_answer(run.provider, messages, run.model, cancel, ANSWER_TOKENS,
                                         answer_schema(fields) if run.structured else None, MAX_ANSWER_CHARS)
    if isinstance(read.end, Failed):
        error = read.end.error
        return BookAnswer(book, error=str(error) if isinstance(error, ProviderError) else one_line(read.end.message))
    if read.end.finish_reason == 'cancelled':
        raise Cancelled()
    usage = read.end.usage
    found, problem = parsed_answer(read.text, fields, run.vocabularies)
    if problem:
        return BookAnswer(book, error=problem, usage=usage)
    proposals: list[Proposal] = []
    notes: list[str] = []
    for f in fields:
        got = found[f.key]
        if said := language_note(f, got.value, run.language):
            got = replace(got, notes=(*got.notes, said))
        notes += got.notes
        if got.new:
            notes.append(_('{field}: new to the library: {values}').format(field=f.label, values=', '.join(got.new)))
        old = book.values.get(f.key)
        if got.value is not None and comparable(got.value) != comparable(old):
            proposals.append(Proposal(book.library_id, book.book_id, f.key, f.label, old, got.value, got.new,
                                      got.notes))
    return BookAnswer(book, tuple(proposals), tuple(notes), usage=usage)


def ask_books(run: Asking, books: Sequence[BookRead], at_once: int, cancel: CancelToken | None = None,
              progress: Callable[[int, int], None] | None = None) -> Iterator[BookAnswer]:
    """Each of books asked (ask_book()), at_once requests at a time (at most MOST_AT_ONCE), yielded
    as they end, not in order. Stop (cancel) ends the requests under way at once and asks no more;
    the answers yielded by then stand. progress(done, total) as each ends. Each request has a
    CancelToken of its own (a token stops one request's socket), cancelled with the run's."""
    cancel = cancel or CancelToken()
    at_once = max(1, min(int(at_once), MOST_AT_ONCE))
    pending = iter(books)
    running: dict[Future, tuple[BookRead, CancelToken]] = {}
    done = 0
    with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix='bookai-metadata') as pool:
        try:
            while True:
                while len(running) < at_once and not cancel.cancelled:
                    book = next(pending, None)
                    if book is None:
                        break
                    own = CancelToken()
                    running[pool.submit(ask_book, run, book, own)] = (book, own)
                if not running:
                    return
                finished, _unfinished = wait(running, timeout=0.25, return_when=FIRST_COMPLETED)
                if cancel.cancelled:
                    for _book, own in running.values():
                        own.cancel()
                for future in finished:
                    book, _own = running.pop(future)
                    try:
                        answer = future.result()
                    except Cancelled:
                        continue
                    except Exception as e:  # Book AI's own fault with one book: said, the others go on
                        answer = BookAnswer(book, error=_('This book could not be asked: {error}').format(
                            error=one_line(f'{type(e).__name__}: {e}')[:300]))
                    done += 1
                    if progress is not None:
                        progress(done, len(books))
                    yield answer
        finally:  # stopped, or the caller stopped reading: the requests under way end now
            for _book, own in running.values():
                own.cancel()
