# License: GPLv3 Copyright: the Book AI developers
"""A library's index by meaning made and kept up to date, without Qt: the one path the calibre job,
the search box and the command line all call (update_index()).

Which provider embeds (embeddings_provider()): the one chosen for the library's search in the
settings ('library_embeddings_provider'), else the provider chosen for questions, when it makes
embeddings. One on this computer (connection.is_local, decided from its address) embeds without
asking; one on the internet gets the books' metadata only once the reader agreed, with the
estimate said first (needs_consent(), estimate()): the callers ask, this module does not.

An update is incremental. calibre's last-modified time of every book is read (one field), and
only the books added or whose time changed since (vectors.BookVectors.changed()) have their entry
made (entries.py); an entry whose text is the same as when its vector was made (its digest) keeps
its vector, and only its time is taken again. The books gone from the library are taken out. The
rest are embedded BATCH books at a time, Stop looked at between batches; the index is written
every SAVE_EVERY books embedded, and at the end or on Stop, so that a run stopped or failed
resumes where it was: what was embedded is kept, and the next run embeds only what is left.

What the service sends is hostile: a vector of another length than the others, with NaN or an
infinity in it, or a count other than asked, is refused (providers' Embedding, then
vectors.BadVector), in words. A text the service will not embed (a local server refuses inputs
over its model's length) is tried again shorter, then left out (the books left out are said, and
tried again next time); a service that fails MAX_FAILURES texts in a run stops the run with its
own error. A model that now makes vectors of another length than the index kept starts the index
again (the model's name is the same, the model is not).
"""

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.errors import ProtocolError, ProviderError
from calibre_plugins.bookai.core.messages import CHARS_PER_TOKEN
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.library_search.entries import (
    Entry, book_entry, custom_labels, library_values, modified_time,
)
from calibre_plugins.bookai.conversation.summaries import SummaryCache
from calibre_plugins.bookai.library_search.read_so_far import kept_summaries, summaries_text
from calibre_plugins.bookai.library_search.vectors import MAX_BOOKS, BadVector, BookVectors, Stamp, VectorFiles

if TYPE_CHECKING:
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

BATCH = 32              # books embedded in one call (the provider splits it into its own requests)
SAVE_EVERY = 512        # books embedded between two writes of the index
MAX_FAILURES = 50       # texts the service would not embed in one run before the run stops
SHORTER = 4             # a text the service refused is tried again cut to this part of its length
SAVE_SECONDS = 60.0     # and at least this often, on a slow service


class IndexNotKept(Exception):
    """The index could not be made or kept, in one sentence."""


@dataclass(frozen=True)
class Embedder:
    """What makes a library's vectors: a provider and its embedding model."""
    provider: 'AIProviderPlugin'
    model: str

    @property
    def key(self) -> str:
        """The model as the index keeps it: the provider's id and the model's."""
        return f'{self.provider.name}/{self.model}'

    @property
    def is_local(self) -> bool:
        return self.provider.connection.is_local

    def embed(self, texts: list[str], cancel: CancelToken | None = None) -> list[list[float]]:
        return self.provider.embed(texts, self.model, cancel)


@dataclass
class Built:
    """What an update did."""
    embedded: int = 0                 # books whose vector was made
    kept: int = 0                     # books changed in calibre whose text was the same: vector kept
    removed: int = 0                  # books gone from the library, taken out
    books: int = 0                    # books in the index at the end
    left_out: list[int] = field(default_factory=list)  # books the service would not embed
    stopped: bool = False             # Stop was asked: what was embedded is kept
    started_again: bool = False       # the index was made anew (none, damaged, or another model)
    set_aside: list[str] = field(default_factory=list)  # damaged files set aside, as renamed


@dataclass(frozen=True)
class Plan:
    """What an update will embed, said before it starts (and asked, for a provider online)."""
    todo: list[int]                   # books whose entry is to be made and perhaps embedded
    gone: list[int]                   # books to take out
    index: BookVectors | None         # the index as kept (None: made anew)
    set_aside: list[str]
    stamps: dict[int, float] = field(default_factory=dict)   # every book's time, as book_stamps() read it
    summaries: Mapping[int, tuple[list[str], float]] | None = None  # read_so_far.kept_summaries (None: not read)

    @property
    def books(self) -> int:
        return len(self.todo)


def embeddings_provider(name: str = '') -> 'AIProviderPlugin | None':
    """The provider that embeds the library (name: one given, as the command line's --provider):
    the one chosen for it in the settings, else the provider chosen for questions; None when that
    provider makes no embeddings or none is chosen."""
    from calibre_plugins.bookai.providers.capabilities import Capability
    from calibre_plugins.bookai.providers.registry import PROVIDERS, get_provider
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    prefs = plugin_prefs()
    name = name or prefs['library_embeddings_provider'] or prefs['provider']
    if name not in PROVIDERS:
        return None
    provider = get_provider(name)
    return provider if provider.capabilities & Capability.EMBEDDINGS else None


def embedder(provider: 'AIProviderPlugin', model: str = '', cancel: CancelToken | None = None) -> Embedder:
    """provider's Embedder: model, else the embedding model its settings give (which may ask the
    service for its model list: not on the GUI thread). ProviderError when it cannot be chosen."""
    return Embedder(provider, model or provider.embedding.model(cancel))


def needs_consent(e: Embedder) -> bool:
    """Whether the reader must agree before the library's metadata goes to e: a service online."""
    return not e.is_local


MOST_CONSENTS = 200  # libraries and services kept as agreed to, the newest


def consent_key(library_id: str, e: Embedder) -> str:
    return f'{library_id}|{e.key}'


def agreed(library_id: str, e: Embedder) -> bool:
    """Whether the library's metadata may go to e: a provider on this computer, or one the reader
    agreed to for this library (agree())."""
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    return not needs_consent(e) or consent_key(library_id, e) in plugin_prefs()['library_index_consent']


def agree(library_id: str, e: Embedder) -> None:
    """The reader agreed that the library's metadata goes to e. OSError when the settings cannot
    be written."""
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    prefs = plugin_prefs()
    key = consent_key(library_id, e)
    kept = [k for k in prefs['library_index_consent'] if k != key]
    prefs['library_index_consent'] = [*kept, key][-MOST_CONSENTS:]


MOST_PLACES = 500  # libraries whose folder is remembered, the newest


def remember_place(library_id: str, folder: str) -> None:
    """library_id is at folder (its index is removed once the folder is gone: remove_gone())."""
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    prefs = plugin_prefs()
    places = dict(prefs['library_index_places'])
    if places.get(library_id) == folder:
        return
    places.pop(library_id, None)
    places[library_id] = folder
    prefs['library_index_places'] = dict(list(places.items())[-MOST_PLACES:])


def remove_gone(files: VectorFiles) -> list[str]:
    """Remove the indexes of the libraries whose folder is gone (no metadata.db there any more, where
    the folder it was in is still there), and the consents given for them; their ids."""
    import os

    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    prefs = plugin_prefs()
    places = dict(prefs['library_index_places'])
    # a library whose folder's parent is missing too is on a drive not mounted now: its index is kept
    gone = [i for i, folder in places.items() if not os.path.isfile(os.path.join(folder, 'metadata.db'))
            and os.path.isdir(os.path.dirname(os.path.normpath(folder)))]
    if gone:
        for library_id in gone:
            files.remove(library_id)
            del places[library_id]
        prefs['library_index_places'] = places
        prefs['library_index_consent'] = [k for k in prefs['library_index_consent']
                                          if k.partition('|')[0] not in gone]
    return gone


def book_stamps(db: Any, library_id: str = '', summaries: SummaryCache | None = None,
                kept: Mapping[int, tuple[list[str], float]] | None = None) -> dict[int, float]:
    """The time of each book of the library (db: its new_api), at most vectors.MAX_BOOKS books (the
    lowest ids): calibre's last-modified time, or when its chapter summaries last changed, if
    later (kept: read_so_far.kept_summaries, listed here when not given; with library_id only)."""
    ids = sorted(db.all_book_ids())[:MAX_BOOKS]
    times = db.all_field_for('last_modified', ids, default_value=None)
    stamps = {b: modified_time(times.get(b)) for b in ids}
    if kept is None:
        kept = kept_summaries(summaries or SummaryCache(), library_id) if library_id else {}
    for b, (_fmts, changed) in kept.items():
        if b in stamps:
            stamps[b] = max(stamps[b], changed)
    return stamps


def plan(db: Any, library_id: str, e: Embedder, files: VectorFiles) -> Plan:
    """What an update of the library's index by e would embed (at most), from the kept index."""
    index = files.read(library_id, model=e.key)
    kept = kept_summaries(SummaryCache(), library_id)
    stamps = book_stamps(db, library_id, kept=kept)
    if index is None:
        return Plan(list(stamps), [], None, list(files.set_aside_as), stamps, kept)
    todo, gone = index.changed({b: Stamp(t) for b, t in stamps.items()})
    return Plan(todo, gone, index, list(files.set_aside_as), stamps, kept)


def allowed_custom(library_id: str) -> list[str]:
    """The custom fields the reader allows for the library (conversation/books.py allowed_fields())."""
    from calibre_plugins.bookai.conversation.books import allowed_fields
    return sorted(n for n in allowed_fields(library_id) if n.startswith('#'))


def entries_of(db: Any, library_id: str, book_ids: Sequence[int], custom: Sequence[str] | None = None,
               summaries: SummaryCache | None = None,
               kept: Mapping[int, tuple[list[str], float]] | None = None) -> list[Entry]:
    """The entries of book_ids, with the custom fields the reader allows for the library
    (allowed_custom(), when custom is None) and the chapter summaries kept (read_so_far.py; kept:
    the library's, listed here when not given)."""
    if custom is None:
        custom = allowed_custom(library_id)
    labels = custom_labels(db, custom)
    values = library_values(db, book_ids, custom)
    cache = summaries or SummaryCache()
    if kept is None:
        kept = kept_summaries(cache, library_id) if library_id else {}
    return [book_entry(b, values[b], custom, labels,
                       summaries_text(cache, library_id, b, kept[b][0]) if b in kept else '') for b in book_ids]


def estimate(db: Any, library_id: str, p: Plan, custom: Sequence[str] | None = None) -> tuple[int, int]:
    """(books, tokens) the plan would send at most: what needs_consent() says before a run online."""
    tokens = 0
    custom = allowed_custom(library_id) if custom is None else custom
    for start in range(0, len(p.todo), 1000):
        for entry in entries_of(db, library_id, p.todo[start:start + 1000], custom, kept=p.summaries):
            tokens += len(entry.text) // CHARS_PER_TOKEN + 1
    return len(p.todo), tokens


def update_index(db: Any, library_id: str, e: Embedder, files: VectorFiles | None = None,
                 cancel: CancelToken | None = None, progress: Callable[[int, int], None] | None = None,
                 custom: Sequence[str] | None = None, the_plan: Plan | None = None) -> Built:
    """Bring the library's index by e up to date (see the module's words) and keep it; progress(done,
    total) after each batch. Returns what was done (stopped=True on Stop: what was embedded is
    kept). Raises ProviderError when the service fails (what was embedded before is kept), and
    IndexNotKept when the index cannot be written."""
    files = files or VectorFiles()
    cancel = cancel or CancelToken()
    p = the_plan or plan(db, library_id, e, files)
    try:
        return Update(db, library_id, e, files, cancel, progress, custom).run(p)
    except ModelChanged:  # the same name, another model: every book again
        kept = p.summaries if p.summaries is not None else kept_summaries(SummaryCache(), library_id)
        stamps = p.stamps or book_stamps(db, library_id, kept=kept)
        return Update(db, library_id, e, files, cancel, progress, custom).run(
            Plan(sorted(stamps), [], None, p.set_aside, stamps, kept), started_again=True)


class ModelChanged(Exception):
    """The model makes vectors of another length than the index kept."""


class Update:
    """One run of update_index()."""

    def __init__(self, db: Any, library_id: str, e: Embedder, files: VectorFiles, cancel: CancelToken,
                 progress: Callable[[int, int], None] | None, custom: Sequence[str] | None) -> None:
        self.db, self.library_id, self.e, self.files = db, library_id, e, files
        self.cancel, self.progress = cancel, progress
        self.custom = list(custom) if custom is not None else allowed_custom(library_id)  # read once a run
        self.kept: Mapping[int, tuple[list[str], float]] = {}
        self.index: BookVectors | None = None
        self.unsaved, self.last_save = 0, time.monotonic()

    def run(self, p: Plan, started_again: bool = False) -> Built:
        built = Built(set_aside=list(p.set_aside), started_again=started_again or p.index is None)
        self.index = p.index
        if self.index is not None:
            for b in p.gone:
                built.removed += self.index.remove(b)
            self.unsaved += built.removed
        self.kept = p.summaries if p.summaries is not None else kept_summaries(SummaryCache(), self.library_id)
        stamps = p.stamps or (book_stamps(self.db, self.library_id, kept=self.kept) if p.todo else {})
        total = len(p.todo)
        try:
            for start in range(0, total, BATCH):
                if self.cancel.cancelled:
                    raise Cancelled()
                self.batch(p.todo[start:start + BATCH], stamps, built)
                if self.progress is not None:
                    self.progress(min(total, start + BATCH), total)
                if self.unsaved >= SAVE_EVERY or (self.unsaved and time.monotonic() - self.last_save > SAVE_SECONDS):
                    self.save()
        except Cancelled:
            built.stopped = True
        except ProviderError:
            if self.unsaved:
                self.save()
            raise
        if self.index is None:  # nothing embedded: an empty index, so that a search says so
            self.index = BookVectors(1, self.e.key)
        self.save()
        built.books = len(self.index)
        return built

    def batch(self, ids: list[int], stamps: dict[int, float], built: Built) -> None:
        """Embed the books of ids whose text changed; take the new times of the others."""
        todo: list[Entry] = []
        for entry in entries_of(self.db, self.library_id, ids, self.custom, kept=self.kept):
            stamp = Stamp(stamps.get(entry.book_id, 0.0), entry.digest)
            kept = self.index.stamp(entry.book_id) if self.index is not None else None
            if self.index is not None and kept is not None and kept.digest == entry.digest:
                self.index.restamp(entry.book_id, stamp)
                built.kept += 1
                self.unsaved += 1
            elif entry.text:
                todo.append(entry)
        vectors, refused = embedded(self.e, todo, self.cancel)
        built.left_out.extend(refused)
        if len(built.left_out) > MAX_FAILURES:
            raise ProviderError(_('{provider} would not embed {count} of the books.').format(
                provider=self.e.provider.display_name, count=len(built.left_out)))
        if len({len(v) for v in vectors.values()}) > 1:  # nothing of a batch like that is taken
            raise self.bad(BadVector(_('Its vectors are not all of the same length.')))
        for entry in todo:
            v = vectors.get(entry.book_id)
            if v is None:
                continue
            if self.index is None:
                try:
                    self.index = BookVectors(len(v), self.e.key)
                except BadVector as err:
                    raise self.bad(err) from None
            elif self.index.dim != len(v):
                if built.started_again:  # two lengths in one run: not a model to index with
                    raise self.bad(BadVector(_('Its vectors are not all of the same length.')))
                raise ModelChanged()
            try:
                self.index.put(entry.book_id, v, Stamp(stamps.get(entry.book_id, 0.0), entry.digest))
            except BadVector as err:
                raise self.bad(err) from None
            built.embedded += 1
            self.unsaved += 1

    def bad(self, err: BadVector) -> ProviderError:
        return ProtocolError(_('{provider} sent a vector Book AI cannot use: {why}').format(
            provider=self.e.provider.display_name, why=str(err)))

    def save(self) -> None:
        if self.index is not None:
            try:
                self.files.write(self.library_id, self.index)
            except OSError as err:
                raise IndexNotKept(_("The library's index by meaning could not be kept: {error}").format(
                    error=one_line(str(err))[:300])) from None
        self.unsaved, self.last_save = 0, time.monotonic()


def embedded(e: Embedder, entries: list[Entry], cancel: CancelToken) -> tuple[dict[int, list[float]], list[int]]:
    """The vectors of entries by book id, and the books the service would not embed: the batch
    first; when the service refuses it (not when it answers with what is not vectors), each text
    alone, then shorter (a local server refuses inputs over its model's length). Cancelled on Stop; the service's error when it fails every one."""
    if not entries:
        return {}, []
    try:
        got = e.embed([x.text for x in entries], cancel)
        return {x.book_id: v for x, v in zip(entries, got)}, []
    except ProtocolError:  # what it sent is no answer (NaN, another count): asking again is no better
        raise
    except ProviderError as err:
        if len(entries) == 1 and len(entries[0].text) < 64:
            raise
        first = err
    out: dict[int, list[float]] = {}
    refused = []
    for x in entries:
        for text in (x.text, x.text[:max(1, len(x.text) // SHORTER)]):
            if cancel.cancelled:
                raise Cancelled()
            try:
                out[x.book_id] = e.embed([text], cancel)[0]
                break
            except ProviderError:
                continue
        else:
            refused.append(x.book_id)
    if not out:
        raise first
    return out, refused
