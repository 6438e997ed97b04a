# License: GPLv3 Copyright: the Book AI developers
"""A conversation about one or more books: its turns, the provider and model it is
pinned to once the first answer came, and what it cost.

A turn is a question and what came back: an answer, or an error in words. A
failed turn keeps its question and everything before it; asking again (Retry)
replaces it. What is sent for a question is exactly messages_for(question): the
context message about the books, every answered turn in its roles, then the
question. That is also what the "What will be sent" preview shows.
"""

import time
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from calibre_plugins.bookai.conversation.books import BookInfo, answer_language
from calibre_plugins.bookai.conversation.lookups import Lookup, lookups_text
from calibre_plugins.bookai.conversation.prompts import (
    book_part, context_prompt, grounding_instructions, reading_prompt, with_passages, with_passages_above,
)
from calibre_plugins.bookai.core.messages import (
    MAX_TOOL_ARGUMENTS_CHARS, Answer, Cost, Done, Message, Role, Usage, WebLink,
)
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.core.web_links import kept_links
from calibre_plugins.bookai.grounding.scopes import Place
from calibre_plugins.bookai.providers.pricing import cost_text, total_cost

if TYPE_CHECKING:
    from calibre_plugins.bookai.conversation.library import BookLibrary

load_translations()

FORMAT = 1  # of the saved form


@dataclass
class Turn:
    question: str
    answer: str = ''
    reasoning: str = ''
    model: str = ''
    usage: Usage | None = None
    error: str = ''
    finish_reason: str = ''
    asked: float = field(default_factory=time.time)
    reasoning_details: tuple = ()
    passages: str = ''          # the book's text sent with the question (conversation.prompts.numbered_block)
    spoiler_safe: bool = False  # sent with "nothing after the reader's position"
    places: tuple[Place, ...] = ()  # where each passage sent is in the book, for citations
    web_links: tuple[WebLink, ...] = ()  # the web pages the answer used (core.web_links.kept_links)
    web_links_left_out: int = 0     # and how many more it named that are not kept
    # what the model looked up while answering, in order (conversation/lookups.py); their passages'
    # places follow the question's in places, numbered on from them
    lookups: tuple['Lookup', ...] = ()
    # what to read next from the library (library_search/read_next.py): (book id, title) of the books
    # the question offered, numbered from 1; only these numbers of the answer link to a book
    suggested: tuple[tuple[int, str], ...] = ()

    @property
    def answered(self) -> bool:
        return not self.error and self.finish_reason != '' and bool(self.answer or self.reasoning)


class Conversation:

    def __init__(self, books: Iterable[BookInfo], library_id: str = '', provider: str = '', model: str = '',
                 language: str = '', conversation_id: str = '', created: float = 0, selection: str = '') -> None:
        self.books = tuple(books)
        self.selection = selection  # the text selected while reading that it is about ('' in the library)
        self.library_id = library_id
        self.provider = provider    # pinned by the first answer
        self.model = model          # pinned by the first answer
        self.language = language    # the answer's language, in English ('' for no instruction)
        self.id = conversation_id or uuid.uuid4().hex
        self.created = created or time.time()
        self.turns: list[Turn] = []

    @classmethod
    def about(cls, library: 'BookLibrary', book_ids: Iterable[int]) -> 'Conversation':
        """A new conversation about books of a library (conversation.library.BookLibrary)."""
        books = library.books(book_ids)
        return cls(books, library.library_id, language=answer_language(books))

    @property
    def book_ids(self) -> tuple[int, ...]:
        return tuple(b.book_id for b in self.books)

    @property
    def title(self) -> str:
        if not self.books:
            return _('Your library') if self.library_id else ''
        if len(self.books) == 1:
            return self.books[0].title
        return f'{self.books[0].title} (+{len(self.books) - 1})'

    @property
    def updated(self) -> float:
        return self.turns[-1].asked if self.turns else self.created

    def context(self, grounded: bool = False, spoiler_safe: bool = False) -> Message:
        """The system message: about the books (or the book being read), and, when passages of
        the book are sent, how to treat and cite them."""
        if self.selection:
            text = reading_prompt(self.books[0] if self.books else None, True, self.language)
        else:
            text = context_prompt(self.books, self.language, grounded)
        if grounded:
            text += ' ' + grounding_instructions(spoiler_safe)
        return Message(Role.SYSTEM, text)

    def messages_for(self, question: str, passages: str = '', spoiler_safe: bool = False) -> list[Message]:
        """The exact messages a question sends: the context, the answered turns, the question
        (with the passages of the book sent with it, if any)."""
        answered = [t for t in self.turns if t.answered]
        grounded = bool(passages) or any(t.passages or t.lookups for t in answered)
        spoiler_safe = spoiler_safe or any(t.spoiler_safe for t in answered)
        messages = [self.context(grounded, spoiler_safe)]
        sent: set[str] = set()  # passages sent once are not sent again: the same block, the same numbers

        def asked(text: str, block: str) -> Message:
            if block and block in sent:
                return Message(Role.USER, with_passages_above(text))
            sent.add(block)
            return question_message(text, block)
        for turn in answered:
            # what the model looked up then goes as text after the question, numbered as it was:
            # no tool message is needed, and every provider takes it
            message = asked(turn.question, turn.passages)
            if looked_up := lookups_text(turn.lookups):
                message = replace(message, text=f'{message.text}\n\n{looked_up}')
            messages.append(message)
            messages.append(Message(Role.ASSISTANT, turn.answer, turn.reasoning, turn.reasoning_details))
        messages.append(asked(question, passages))
        return messages

    def ask(self, question: str, passages: str = '', spoiler_safe: bool = False,
            places: Iterable[Place] = (), suggested: Iterable[tuple[int, str]] = ()) -> list[Message]:
        """Start a turn; the messages to send for it. A last turn that failed is replaced.
        suggested: the books a question about what to read next offered (Turn.suggested)."""
        if self.turns and not self.turns[-1].answered:
            self.turns.pop()
        messages = self.messages_for(question, passages, spoiler_safe)
        self.turns.append(Turn(question, passages=passages, spoiler_safe=spoiler_safe, places=tuple(places),
                               suggested=tuple(suggested)))
        return messages

    def finish(self, answer: Answer, provider: str = '') -> Turn:
        """The last turn's outcome, from an Answer (core.messages) whose stream ended."""
        turn = self.turns[-1]
        turn.answer, turn.reasoning = answer.text, answer.reasoning
        if answer.failed is not None:
            turn.error = answer.failed.message
            return turn
        done = cast(Done, answer.done)  # a stream ends with Done or Failed
        turn.model, turn.usage, turn.finish_reason = done.model, done.usage, done.finish_reason
        turn.reasoning_details = done.reasoning_details
        turn.web_links, turn.web_links_left_out = kept_links(done.web_links)
        if turn.answered and not self.model:  # the first answer pins provider and model for follow-ups
            self.provider, self.model = provider or self.provider, done.model
        return turn

    def retry_question(self) -> str:
        """The question of a last turn that did not get an answer, else ''."""
        return self.turns[-1].question if self.turns and not self.turns[-1].answered else ''

    def total_usage(self) -> Usage:
        """Tokens of every answered turn; the cost as providers.pricing.total_cost() adds costs up
        (unknown as soon as one turn's is)."""
        used = [t.usage for t in self.turns if t.usage is not None]
        if not used:
            return Usage()

        def total(name):
            values = [getattr(u, name) for u in used]
            return None if any(v is None for v in values) else sum(values)
        return Usage(total('input_tokens'), total('output_tokens'), total('reasoning_tokens'),
                     total('cached_tokens'), total_cost(u.cost for u in used), total('cache_write_tokens'))

    # saved form {{{

    def as_dict(self) -> dict[str, Any]:
        return {
            'format': FORMAT, 'id': self.id, 'created': self.created, 'library_id': self.library_id,
            'provider': self.provider, 'model': self.model, 'language': self.language, 'selection': self.selection,
            'books': [asdict(b) for b in self.books],
            'turns': [turn_as_dict(t) for t in self.turns],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> 'Conversation':
        """Raises ValueError for something that is not a saved conversation."""
        try:
            if d.get('format', FORMAT) != FORMAT:
                raise ValueError(f'a format Book AI does not write ({str(d["format"])[:20]})')
            library_id, provider, model, language = (text_field(d, k) for k in (
                'library_id', 'provider', 'model', 'language'))
            conv = cls([book_from_dict(b) for b in d['books']], library_id, one_line(provider), one_line(model),
                       language, str(d['id']), float(d.get('created') or 0), str(d.get('selection') or ''))
            conv.turns = [turn_from_dict(t) for t in d.get('turns', ())]
        except (KeyError, TypeError, AttributeError, ValueError, OverflowError, IndexError) as e:  # any shape
            raise ValueError(f'not a saved conversation: {e}') from None
        return conv

    # }}}


def question_message(question: str, passages: str) -> Message:
    """A question as it is sent, after the passages of the book sent with it: the book's part
    marked (Message.book_chars), where a service's prompt cache may end."""
    return Message(Role.USER, with_passages(question, passages), book_chars=len(book_part(passages)))


def book_from_dict(d: dict[str, Any]) -> BookInfo:
    return BookInfo(int(d['book_id']), str(d['title']), texts_field(d, 'authors'), d.get('series', ''),
                    d.get('series_index'), texts_field(d, 'tags'),
                    cast('tuple[tuple[str, str], ...]', tuple(tuple(f) for f in d.get('fields', ()))),
                    texts_field(d, 'notes'), texts_field(d, 'languages'))


def turn_as_dict(t: Turn) -> dict[str, Any]:
    return {'question': t.question, 'answer': t.answer, 'reasoning': t.reasoning, 'model': t.model,
            'error': t.error, 'finish_reason': t.finish_reason, 'asked': t.asked, 'passages': t.passages,
            'spoiler_safe': t.spoiler_safe, 'places': [[p.chapter, p.position, p.cfi, p.book_id, p.fmt] for p in t.places],
            'usage': None if t.usage is None else asdict(t.usage),
            'web_links': [[w.title, w.url] for w in t.web_links], 'web_links_left_out': t.web_links_left_out,
            'lookups': [lookup.as_list() for lookup in t.lookups],
            'suggested': [[b, title] for b, title in t.suggested]}


def turn_from_dict(d: dict[str, Any]) -> Turn:
    u = d.get('usage')
    usage = None
    if u is not None:
        c = u.get('cost')
        counts = [count_field(u, k) for k in ('input_tokens', 'output_tokens', 'reasoning_tokens', 'cached_tokens',
                                              'cache_write_tokens')]
        usage = Usage(counts[0], counts[1], counts[2], counts[3], None if c is None else Cost(
                          float(c['amount']), c.get('currency', 'USD'), c.get('source', 'reported'),
                          c.get('price_date', '')), counts[4])
    answer, reasoning, model, error, finish_reason = (text_field(d, k) for k in (
        'answer', 'reasoning', 'model', 'error', 'finish_reason'))
    links, left_out = kept_links(WebLink(*pair) for pair in web_link_pairs(d))
    return Turn(str(d['question']), answer, reasoning, one_line(model), usage, error, finish_reason,
                float(d.get('asked') or 0), passages=str(d.get('passages') or ''),
                spoiler_safe=bool(d.get('spoiler_safe')),
                places=tuple(place_from_list(p) for p in d.get('places') or ()), web_links=links,
                web_links_left_out=left_out + max(0, count_field(d, 'web_links_left_out') or 0),
                lookups=tuple(lookup_from_list(x) for x in (d.get('lookups') or ())[:MOST_LOOKUPS_KEPT]),
                suggested=suggested_from_list(d.get('suggested') or ()))


MOST_LOOKUPS_KEPT = 64  # of a turn, read from a saved conversation
MOST_SUGGESTED_KEPT = 50  # books a turn offered, read from a saved conversation


def suggested_from_list(x: object) -> tuple[tuple[int, str], ...]:
    """A turn's books offered from their saved form ([[id, title], ...]); TypeError for another shape."""
    if not isinstance(x, (list, tuple)):
        raise TypeError('suggested is not a list')
    out = []
    for pair in x[:MOST_SUGGESTED_KEPT]:
        if (not isinstance(pair, list) or len(pair) != 2 or type(pair[0]) is not int or pair[0] <= 0
                or not isinstance(pair[1], str)):
            raise TypeError('suggested is not a list of [book id, title] pairs')
        out.append((pair[0], one_line(pair[1])[:500]))
    return tuple(out)


def lookup_from_list(x: list) -> 'Lookup':
    """A Lookup from its saved form (Lookup.as_list); ValueError, TypeError... for another shape."""
    tool, arguments, summary, first, places, refused, text = x
    return Lookup(one_line(str(tool))[:64], str(arguments)[:MAX_TOOL_ARGUMENTS_CHARS], one_line(str(summary))[:500],
                  max(0, int(first)), tuple(place_from_list(p) for p in places), bool(refused), str(text))


def text_field(d: dict[str, Any], key: str) -> str:
    """d[key] ('' when missing), which must be text: in a saved file, anything else is damage."""
    value = d.get(key, '')
    if not isinstance(value, str):
        raise TypeError(f'{key} is a {type(value).__name__}, not text')
    return value


def texts_field(d: dict[str, Any], key: str) -> tuple[str, ...]:
    """d[key] (none when missing), which must be a list of texts (a book's authors, tags): shown and
    searched as text, anything else in a saved file is damage."""
    values = d.get(key) or ()
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise TypeError(f'{key} is not a list of texts')
    return tuple(values)


def count_field(d: dict[str, Any], key: str) -> int | None:
    """d[key], a count of tokens: a whole number or None."""
    value = d.get(key)
    if value is not None and type(value) is not int:
        raise TypeError(f'{key} is a {type(value).__name__}, not a count')
    return value


def web_link_pairs(d: dict[str, Any]) -> list[tuple[str, str]]:
    """The [title, address] pairs of a saved turn's web pages (none when missing), which must be text."""
    pairs = d.get('web_links') or []
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 and all(
            isinstance(v, str) for v in p) for p in pairs):
        raise TypeError('web_links is not a list of [title, address] pairs')
    return [(p[0], p[1]) for p in pairs]


def place_from_list(p: list) -> Place:
    if len(p) > 4:
        return Place(str(p[0]), float(p[1]), str(p[2] or ''), int(p[3]), str(p[4]))
    return Place(str(p[0]), float(p[1]), str(p[2] or ''))


def usage_text(usage: Usage, local: bool = False) -> str:
    """Tokens and cost in words: '1,234 tokens in, 56 out · about $0.0012'. Cost that is not
    known is said to be unknown, never shown as free, unless the model runs on this computer."""
    parts = []
    if usage.input_tokens is not None or usage.output_tokens is not None:
        parts.append(_('{input} tokens in, {output} out').format(
            input=f'{usage.input_tokens or 0:,}', output=f'{usage.output_tokens or 0:,}'))
    if usage.cost is not None or parts:  # the cost as every cost is said (providers.pricing.cost_text)
        parts.append(cost_text(usage.cost, local))
    return ' · '.join(parts)


def cache_text(usage: Usage) -> str:
    """The tokens of an answer's prompt the service read from its prompt cache, in words: '13,200 of
    14,100 tokens read from the provider's cache'; '' when it read none (or did not say)."""
    if not usage.cached_tokens or not usage.input_tokens:  # Usage holds them to a part of the prompt
        return ''
    return _("{cached} of {prompt} tokens read from the provider's cache").format(
        cached=f'{usage.cached_tokens:,}', prompt=f'{usage.input_tokens:,}')
