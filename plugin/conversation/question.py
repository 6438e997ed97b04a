# License: GPLv3 Copyright: the Book AI developers
"""How a question is built: the one way the discussion window, the viewer's panel,
Ask my library and the command line make what is sent.

A question goes on its own (Question(text): the books' details are in the
conversation's context message), with passages of one book (book_question: as
the scope allows, up to the reader's place), or with passages found across the
library (library_question). Either way the result is a Question: the text asked,
the numbered passages sent with it and where each one is, whether it keeps to
the reader's place, and what the reader is to be told; its messages() in a
conversation are exactly what is sent.

Nothing here waits on a window: the callers read the book's text, rank by
meaning (meaning(), in a thread in the windows, when by_meaning() says so), ask
the reader's consent, and say in their own words why nothing was sent (NoPlace,
LibrarySearchError). The reader's "Book text per question, at most" is read here,
so the windows and the command line send the same passages for the same settings; and it is
held here to what the model in use has room for (book_text_room(), asked before the question
is built: in a thread in the windows), never more.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from calibre_plugins.bookai.conversation.library import library_toolbox
from calibre_plugins.bookai.conversation.lookups import Toolbox
from calibre_plugins.bookai.conversation.prompts import library_block, numbered_block, passages_block
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.core.messages import Message, estimated_tokens
from calibre_plugins.bookai.grounding.book_tools import BookTools, Kept
from calibre_plugins.bookai.grounding.cache import TextCache, default_folder
from calibre_plugins.bookai.grounding.embeddings import EmbeddingIndex, embed_question
from calibre_plugins.bookai.grounding.extract import Book, UnreadableBook
from calibre_plugins.bookai.grounding.index import Index
from calibre_plugins.bookai.grounding.library_passages import LibraryExcerpt, library_excerpt
from calibre_plugins.bookai.grounding.library_tools import begun_formats
from calibre_plugins.bookai.grounding.scopes import Excerpt, Place, check_place, excerpt
from calibre_plugins.bookai.grounding.so_far import passages_read, read_until, tokens_of
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre.db.cache import Cache

    from calibre_plugins.bookai.conversation.conversation import Conversation
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()


# added to a book's key ("library id:book id") for the reader's consent to send everything read so
# far (the so-far scope, the story so far), a larger send than passages: "don't ask again" for
# passages does not cover it
SO_FAR_CONSENT = '#so-far'
SO_FAR_SCOPES = ('so-far', 'recap')  # the Excerpt scopes that send it


@dataclass(frozen=True)
class Question:
    """What is sent for a question, and what the reader is told before it goes."""
    text: str                       # the question as asked, and as the conversation shows it
    passages: str = ''              # the numbered passages sent with it ('' for none)
    spoiler_safe: bool = False      # they all come before the reader's place, and the model is told so
    places: tuple[Place, ...] = ()  # where each passage is, for its citations
    notices: tuple[str, ...] = ()   # for the reader, in words, before it is sent
    excerpt: Excerpt | LibraryExcerpt | None = None  # the passages as data, for the answer's citations
    # what the model may look up in the book while it answers (conversation/lookups.py), clamped as
    # the passages are: None for a question without the book's text. Not part of a Question's
    # equality: the same question about the same place has the same tools
    tools: Toolbox | None = field(default=None, compare=False)
    # what to read next from the library: (book id, title) of the books offered, numbered from 1
    suggested: tuple[tuple[int, str], ...] = ()

    def messages(self, conv: 'Conversation') -> list[Message]:
        """The exact messages it sends in conv (what "What will be sent" shows)."""
        return conv.messages_for(self.text, self.passages, self.spoiler_safe)


def by_meaning(provider: 'AIProviderPlugin', scope: str) -> bool:
    """Whether passages are ranked by meaning too: as the settings say, for the scopes that rank,
    with a provider on this computer that embeds (an online one would get the whole book)."""
    return (scope in ('position', 'book') and plugin_prefs()['retrieval'] == 'embeddings'
            and provider.connection.is_local and bool(provider.capabilities & Capability.EMBEDDINGS))


def meaning(provider: 'AIProviderPlugin', index: Index, question: str, kept: EmbeddingIndex | None = None,
            cancel: CancelToken | None = None) -> tuple[EmbeddingIndex, list[float]]:
    """What book_question() ranks by meaning with: the book's passages embedded by provider (kept,
    when it was made for these passages) and the question's vector. Raises ProviderError, or
    Cancelled on Stop; the caller then ranks by words, and says so (MEANING_FAILED)."""
    ei = kept if kept is not None and kept.matches(index.passages) else EmbeddingIndex.build(
        provider, index.passages, cancel=cancel)
    return ei, embed_question(provider, ei, question, cancel)


def embedder(provider: 'AIProviderPlugin',
             embedding_index: EmbeddingIndex | None) -> Callable[[str], list[float]] | None:
    """What the book's search tool embeds its words with, to search by meaning too: the model that
    made embedding_index (a provider on this computer, as by_meaning() asks); None without one."""
    if embedding_index is None:
        return None
    ei = embedding_index  # not None, in the closure too
    return lambda words: embed_question(provider, ei, words)


# tokens kept for the answer in the model's window when it is known (a question asks for no
# most the answer may take): at most a quarter of a small window
ANSWER_ROOM = 2048

# the smallest window Book AI takes any model to have, without asking: llama.cpp's server used
# to default to it, and every cloud model reads more. A question whose book text, conversation
# and answer fit in it is sent without asking the service (book_text_room()).
ASSUMED_WINDOW = 4096


@dataclass(frozen=True)
class Room:
    """What the model in use has room for: its context window, and the tokens of book text left
    in it after the conversation so far, the question and the answer (0 or less: none). With why,
    the window is not known: the service was asked and could not say (why, in words)."""
    window: int
    tokens: int
    why: str = ''
    sent: tuple[str, ...] = ()  # the passages already in the conversation: sent again, they cost nothing
    model: str = ''             # the model it was learned for ('' when not said)


def room_in(window: int, messages: list[Message], sent: tuple[str, ...] = ()) -> Room:
    """The Room in a window of that many tokens, when messages (what the question sends without
    its passages) go with them, and the answer keeps ANSWER_ROOM (at most a quarter of the window)."""
    return Room(window, window - estimated_tokens(messages) - min(ANSWER_ROOM, window // 4), sent=sent)


def book_text_room(provider: 'AIProviderPlugin', conv: 'Conversation', question: str, use_model: str = '',
                   cancel: CancelToken | None = None, wanted: int | None = None, scope: str = '') -> Room | None:
    """The Room the model that will answer question in conv has (use_model, else the one the
    conversation pinned, else the provider's own: as exchange.Exchange sends it), from its context
    window (provider.context_window(), which may ask the service: not on the GUI thread); None when
    its window is unknown, or the model cannot be chosen (sending then says why); a Room with why
    when the service was asked and failed to say. Nothing is asked of a provider not set up yet (sending
    then says why). wanted is the most tokens of book text the question would send (default: the
    reader's "Book text per question, at most"): when they fit in ASSUMED_WINDOW with the rest,
    nothing is asked, and None comes back; for scope "so-far" (everything read) the service is
    always asked. Raises Cancelled on Stop."""
    if provider.config.missing_setup():
        return None
    if wanted is None:
        wanted = plugin_prefs()['book_text_budget']
    asking = conv.messages_for(question, ' ', spoiler_safe=True)
    if scope != 'so-far' and room_in(ASSUMED_WINDOW, asking).tokens >= wanted:
        return None
    try:
        model = use_model or conv.model or provider.choose_model(cancel=cancel)
        window = provider.context_window(model, cancel)
    except ProviderError:
        return None
    if window is None:
        return None
    if not window.tokens:
        return Room(0, 0, window.why, model=model)
    return replace(room_in(window.tokens, asking, tuple(t.passages for t in conv.turns if t.answered and t.passages)),
                   model=model)


MEANING_FAILED = _('Passages could not be ranked by meaning ({error}); they are ranked by their words.')


class SoFarFromSummaries(Protocol):
    """What "Everything up to where I am" falls back to when the text read does not fit in the model's
    room: the earlier chapters as the summaries kept for the book and the model, the chapter the
    reader is inside in full (conversation/recap.py SoFarSummaries, which builds it as the story so
    far does; a Protocol here, as recap.py builds on this module)."""

    def question(self, text: str, book: Book, position: float, room: Room) -> 'Question | str':
        """The Question, or why it cannot be made (a summary missing, too little room), in words."""


def book_question(text: str, scope: str, book: Book, index: Index | None = None, position: float | None = None,
                  selection: str = '', budget: int | None = None, embedding_index: EmbeddingIndex | None = None,
                  question_vector: list[float] | None = None, room: Room | None = None,
                  summaries: SoFarFromSummaries | None = None, kept: Kept | None = None,
                  embed: Callable[[str], list[float]] | None = None) -> Question:
    """text, with the passages of book that scope sends (grounding.scopes): position is the
    reader's place (a fraction of the book, or None), selection the text selected, budget the
    most tokens of them (default: the reader's "Book text per question, at most"), never more
    than room, what the model has room for (book_text_room(); None: unknown, the budget holds).
    With an embedding_index of the book's passages and the question's vector, they are ranked
    by meaning too. When none fits, only the book's details go, and the reader is told. summaries:
    for scope "so-far", the book's chapter summaries kept, sent when the text read does not fit.
    kept: the summaries and X-Ray made before, that the model's lookups may show (book_tools());
    embed: what embeds a search's words for them, by the model that made embedding_index (embedder()).
    Raises NoPlace when the scope keeps to the reader's place and none is known: nothing is sent."""
    if budget is None:
        budget = plugin_prefs()['book_text_budget']
    if scope == 'so-far':
        return so_far_question(text, book, index, position, budget, embedding_index, question_vector, room,
                               summaries, kept, embed)
    notices: tuple[str, ...] = ()
    if room is not None and room.why:
        notices = (_('Book AI could not learn how much the model reads at once ({why}); the passages keep to '
                     'the book text your settings allow per question.').format(why=room.why),)
    elif room is not None and room.tokens < budget:
        asked, budget = budget, max(0, room.tokens)
        notices = ((_('The conversation so far fills what the model reads at once ({window} tokens): no passage '
                      'of the book goes with this question. A new conversation has room for them.') if budget == 0
                    else _('The model reads {window} tokens at once: at most {tokens} tokens of the book go with '
                           'this question, fewer than the {budget} your settings allow.')).format(
            window=f'{room.window:,}', tokens=f'{budget:,}', budget=f'{asked:,}'),)
    ex = excerpt(book, scope, text, position, selection, budget, index, embedding_index, question_vector)
    tools = book_tools(book, position, scope, index, ex, kept, embedding_index, embed)
    if not ex.passages:
        return Question(text, notices=notices + (_('No passage of the book fits this question there; only the '
                                                   'book\'s details go with it.'),), excerpt=ex, tools=tools)
    return Question(text, passages_block(ex), ex.until is not None, ex.places, notices, excerpt=ex, tools=tools)


def book_tools(book: Book, position: float | None, scope: str, index: Index | None,
               ex: Excerpt | None, kept: Kept | None = None, embedding_index: EmbeddingIndex | None = None,
               embed: Callable[[str], list[float]] | None = None) -> BookTools | None:
    """The tools the model may look things up in book with, for a question whose passages are ex
    (numbered 1, 2... in it; None: the question numbers others): clamped to the reader's place as ex
    is, with the summaries and X-Ray kept (BookTools shows only what comes before the place), its
    search by meaning too with embedding_index and embed; None for a scope that sends none of the
    book's text."""
    if scope == 'metadata':
        return None
    kept = kept or Kept()
    return BookTools(book, position, scope, index, sent=ex.passages if ex is not None else (),
                     numbered=numbered_block, summaries=kept.summaries, xray=kept.xray,
                     embedding_index=embedding_index if embed is not None else None, embed=embed)


def so_far_question(text: str, book: Book, index: Index | None, position: float | None, budget: int,
                    embedding_index: EmbeddingIndex | None, question_vector: list[float] | None,
                    room: Room | None, summaries: SoFarFromSummaries | None = None,
                    kept: Kept | None = None, embed: Callable[[str], list[float]] | None = None) -> Question:
    """text, with everything read up to position (scope "so-far"), numbered as passages are, when
    the model has room for all of it (room: book_text_room() asked with that scope) or it already
    went with an earlier question of the conversation; when it has not, the summaries of the earlier
    chapters kept for the book and model, with the chapter the reader is inside in full (summaries,
    when every one of them is kept); else the passages that best match ("position" within budget and
    room), and the reader is told why. Raises NoPlace without a place."""
    check_place('so-far', position)
    read = passages_read(book, read_until(book, position))
    total = tokens_of(read)
    ex = excerpt(book, 'so-far', text, position, budget=total)
    q = so_far_asked(text, book, index, position, budget, embedding_index, question_vector, room, summaries, total,
                     ex, kept, embed)
    # its own passages (ranked instead) come with their tools; summaries' numbers are none of the tools'
    return q if q.tools is not None else replace(q, tools=book_tools(
        book, position, 'so-far', index, ex if q.excerpt is ex else None, kept, embedding_index, embed))


def so_far_asked(text: str, book: Book, index: Index | None, position: float | None, budget: int,
                 embedding_index: EmbeddingIndex | None, question_vector: list[float] | None,
                 room: Room | None, summaries: SoFarFromSummaries | None, total: int, ex: Excerpt,
                 kept: Kept | None = None, embed: Callable[[str], list[float]] | None = None) -> Question:
    """so_far_question()'s Question, before its tools."""
    block = passages_block(ex) if ex.passages else ''
    if not block:
        return Question(text, notices=(_('No passage of the book fits this question there; only the book\'s '
                                         'details go with it.'),), excerpt=ex)
    if room is not None and block in room.sent:
        return Question(text, block, True, ex.places, (_('Everything up to where you are went with an earlier '
                                                         'question of this conversation: it is not sent again.'),),
                        excerpt=ex)
    if room is not None and not room.why and total <= room.tokens:
        return Question(text, block, True, ex.places, (_('Everything up to where you are goes with this question: '
                                                         'about {tokens} tokens of the book.').format(
            tokens=f'{total:,}'),), excerpt=ex)
    if room is None or room.why:
        why = (_('Book AI does not know how much the model reads at once, so everything up to where you are '
                 '(about {tokens} tokens) cannot go; the passages that best match the question go instead.')
               if room is None else
               _('Book AI could not learn how much the model reads at once ({why}), so everything up to where '
                 'you are (about {tokens} tokens) cannot go; the passages that best match the question go '
                 'instead.')).format(tokens=f'{total:,}', why=room.why if room else '')
        ranked = book_question(text, 'position', book, index, position, '', budget, embedding_index,
                               question_vector, kept=kept, embed=embed)
    else:
        from_summaries = summaries.question(text, book, position, room) if summaries is not None and \
            position is not None else SUMMARIES_HINT
        if isinstance(from_summaries, Question):
            return from_summaries
        why = _('Everything up to where you are (about {tokens} tokens) is more than the model reads at once '
                '({window} tokens); the passages that best match the question go instead.').format(
            tokens=f'{total:,}', window=f'{room.window:,}') + ' ' + from_summaries
        ranked = book_question(text, 'position', book, index, position, '', budget, embedding_index,
                               question_vector, room, kept=kept, embed=embed)
    return replace(ranked, notices=(why, *ranked.notices))


SUMMARIES_HINT = _('Summaries of the earlier chapters would let all of it go: The story so far makes them, and so '
                   'does Make chapter summaries in the Book AI menu of calibre\'s library.')


def library_question(db: 'Cache', text: str, book_ids: Iterable[int] | None = None) -> Question:
    """text, with the passages of the library's books (db: its new_api; only those of book_ids
    when given) that calibre's full-text index finds for it, each at its book; with none
    when nothing matches. Raises LibrarySearchError, saying why in words, when the library
    cannot be searched."""
    found = library_excerpt(db, text, book_ids)
    begun = {b for b in found.book_ids if begun_formats(db, b)}
    notices: tuple[str, ...] = ()
    if begun:  # the index holds the whole book: where the reader is in it, it cannot tell
        kept = tuple(p for p in found.passages if p.book_id not in begun)
        notices = (ngettext('{n} passage of a book you have begun was left out, so that nothing after your place '
                            'in it goes.', '{n} passages of books you have begun were left out, so that nothing '
                            'after your place in them goes.', len(found.passages) - len(kept)).format(
            n=len(found.passages) - len(kept)),)
        found = replace(found, passages=kept)
    places = tuple(Place(p.title, 0.0, '', p.book_id, p.format) for p in found.passages)
    return Question(text, library_block(found), False, places, notices, excerpt=found,
                    tools=library_toolbox(db, book_ids))


def library_book_text(db: 'Cache', book_id: int, fmt: str) -> tuple[Book, Index]:
    """The text of a library book's fmt file, from the text cache, else read (and converted by
    calibre first) now, in this thread; the cache forgets the library's books that are gone.
    Raises UnreadableBook."""
    path = db.format_abspath(book_id, fmt)
    if not path:
        raise UnreadableBook(_('The {fmt} file of book {id} is missing from the library folder.').format(
            fmt=fmt, id=book_id))
    cache = TextCache(default_folder())
    try:
        return cache.text_of(db.library_id, book_id, fmt, path)
    finally:
        cache.prune(db.library_id, db.all_book_ids())
