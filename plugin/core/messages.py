# License: GPLv3 Copyright: the Book AI developers
"""What a conversation is made of, and what a provider's answer stream carries.

A provider's text_chat() yields chunks: TextDelta and ReasoningDelta while the
answer streams, then exactly one of Done or Failed. Given tools (Tool), a model may ask
for some of them to be run instead of answering: the Done then holds its ToolCalls
(finish_reason 'tool_calls'); their results go back as TOOL messages
(conversation/lookups.py runs that loop). Errors travel in the
stream as Failed, never as exceptions, so a window only ever has to read chunks.

Usage is where the numbers a service (or a History file) tells of an answer come in, so it
holds only what can be true: token counts are whole numbers from 0 below MOST_TOKENS, the
tokens read from and written to the service's prompt cache a part of the prompt's (none of
them without a prompt count, and together never more than it), and a cost is kept only when
its amount is money (money(): finite, from 0 to MOST_MONEY US dollars or so, of a three-letter
currency); anything else is unknown (None), never shown, never added to a total.
"""

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import cast

from calibre_plugins.bookai.core.printable import one_line


class Role(str, Enum):
    SYSTEM = 'system'
    DEVELOPER = 'developer'
    USER = 'user'
    ASSISTANT = 'assistant'
    TOOL = 'tool'  # the result of a tool the model called (Message.tool_call_id says which call)


MAX_TOOL_CALLS = 16               # in one answer: more are the service's mistake, and dropped
MAX_TOOL_ARGUMENTS_CHARS = 8000   # of one call's arguments: longer ones are cut (ToolCall.cut)
MAX_TOOL_NAME_CHARS = 64          # OpenAI's and Anthropic's own bound on a function's name


@dataclass(frozen=True)
class Tool:
    """A function the model may ask Book AI to run: its name, what it does (for the model), and
    its arguments as a JSON Schema object."""
    name: str
    description: str
    parameters: dict


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool, as a model asked for it: the service's id for the call (sent back with
    its result), the tool's name and its arguments as the JSON text the model wrote. Nothing in it
    is trusted: the name is one printable line of at most MAX_TOOL_NAME_CHARS, the arguments at most
    MAX_TOOL_ARGUMENTS_CHARS (cut: they were longer, and are not JSON any more)."""
    id: str
    name: str
    arguments: str = ''
    cut: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, 'id', one_line(self.id if isinstance(self.id, str) else '')[:200])
        object.__setattr__(self, 'name', one_line(self.name if isinstance(self.name, str) else '')[
            :MAX_TOOL_NAME_CHARS])
        arguments = self.arguments if isinstance(self.arguments, str) else ''
        if len(arguments) > MAX_TOOL_ARGUMENTS_CHARS:
            object.__setattr__(self, 'cut', True)
            arguments = arguments[:MAX_TOOL_ARGUMENTS_CHARS]
        object.__setattr__(self, 'arguments', arguments)


@dataclass(frozen=True)
class Message:
    role: Role
    text: str
    # what the model thought before answering, kept apart from the answer
    reasoning: str = ''
    # provider-specific data some APIs want sent back with the next turn
    # (Anthropic's signed thinking blocks, for instance)
    reasoning_details: tuple = ()
    # how many characters at the start of text are the book's text sent with a question (its
    # passages and the reminder to cite them): the same bytes for every question about the same
    # book and place, where a provider's prompt cache can end (providers/caching.py); 0 for none
    book_chars: int = 0
    # an ASSISTANT message's calls of tools (its text may be empty then)
    tool_calls: tuple['ToolCall', ...] = ()
    # a TOOL message: the call it answers, and that call's tool
    tool_call_id: str = ''
    tool_name: str = ''

    @property
    def book_text(self) -> str:
        """The book's text this message starts with ('' for none)."""
        return self.text[:self.book_chars] if 0 < self.book_chars <= len(self.text) else ''


@dataclass(frozen=True)
class WebLink:
    title: str
    url: str


@dataclass(frozen=True)
class Cost:
    amount: float
    currency: str = 'USD'
    # 'reported' by the service, or 'estimated' from the dated price table
    source: str = 'reported'
    price_date: str = ''


MOST_MONEY = 1_000_000.0  # no answer, image or price costs more: a larger figure is a service's mistake
MOST_TOKENS = 10 ** 12    # nor has any answer this many tokens
CURRENCY = re.compile(r'[A-Z]{3}')


def money(value: object, most: float = MOST_MONEY) -> float | None:
    """value as an amount of money: a finite number (not a bool) from 0 to most, as a float;
    None for anything else (NaN, infinity, a negative or absurd figure, text)."""
    if type(value) not in (int, float):
        return None
    try:
        amount = float(cast('int | float', value))
    except OverflowError:  # an int too large for a float
        return None
    return amount if math.isfinite(amount) and 0 <= amount <= most else None


def token_count(value: object) -> int | None:
    """value as a count of tokens: a whole number (not a bool) from 0 below MOST_TOKENS; else None."""
    return value if type(value) is int and 0 <= value < MOST_TOKENS else None


def known_cost(cost: object) -> 'Cost | None':
    """cost when it is a Cost of money (money()) in a currency code, its amount a float; else None."""
    if not isinstance(cost, Cost) or not isinstance(cost.currency, str) or not CURRENCY.fullmatch(cost.currency):
        return None
    amount = money(cost.amount)
    if amount is None or not isinstance(cost.source, str) or not isinstance(cost.price_date, str):
        return None
    return cost if type(cost.amount) is float else Cost(amount, cost.currency, cost.source, cost.price_date)


COUNTS = ('input_tokens', 'output_tokens', 'reasoning_tokens', 'cached_tokens', 'cache_write_tokens')


@dataclass(frozen=True)
class Usage:
    """Tokens and cost of an answer. Whatever it is given, it keeps only counts that are counts
    (token_count()), cache counts that are parts of the prompt's, and a cost that is money
    (known_cost()): the rest becomes None, unknown.

    input_tokens counts the whole prompt, read from the service's cache or not; cached_tokens
    are those of them read from its cache (billed at its cached rate), cache_write_tokens those
    written to it (Anthropic bills them above the input rate)."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    # None when nobody knows what the answer cost: unknown, never free
    cost: Cost | None = None
    cache_write_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in COUNTS:
            value = getattr(self, name)
            if value is not None and token_count(value) is None:
                object.__setattr__(self, name, None)
        prompt = self.input_tokens
        if self.cached_tokens is not None and (prompt is None or self.cached_tokens > prompt):
            object.__setattr__(self, 'cached_tokens', None)  # a part of a prompt it cannot be
        written = self.cache_write_tokens
        if written is not None and (prompt is None or written + (self.cached_tokens or 0) > prompt):
            object.__setattr__(self, 'cache_write_tokens', None)
        if self.cost is not None:
            object.__setattr__(self, 'cost', known_cost(self.cost))


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True)
class Done:
    model: str = ''
    # 'stop' (the model finished), 'length' (it hit the token limit), 'cancelled' (Stop)
    finish_reason: str = 'stop'
    usage: Usage = field(default_factory=Usage)
    web_links: tuple[WebLink, ...] = ()
    response_id: str = ''
    reasoning_details: tuple = ()
    # the tools the model asked to be run, in order ('tool_calls' is then the finish reason)
    tool_calls: tuple[ToolCall, ...] = ()

    def __post_init__(self) -> None:
        # the service's words: shown on one line, nothing in them obeyed (core/printable.py)
        for name in ('model', 'response_id'):
            object.__setattr__(self, name, one_line(getattr(self, name)))


@dataclass(frozen=True)
class Failed:
    error: Exception

    @property
    def message(self) -> str:
        return str(self.error)


# what text_chat() yields
Chunk = TextDelta | ReasoningDelta | Done | Failed
# a piece of the answer as a provider's read_stream() reads it
Delta = TextDelta | ReasoningDelta


class Answer:
    """Collects a stream of chunks into the finished answer."""

    def __init__(self) -> None:
        self.text_parts: list[str] = []
        self.reasoning_parts: list[str] = []
        self.done: Done | None = None
        self.failed: Failed | None = None

    def add(self, chunk: Chunk) -> Chunk:
        if isinstance(chunk, TextDelta):
            self.text_parts.append(chunk.text)
        elif isinstance(chunk, ReasoningDelta):
            self.reasoning_parts.append(chunk.text)
        elif isinstance(chunk, Done):
            self.done = chunk
        elif isinstance(chunk, Failed):
            self.failed = chunk
        return chunk

    @property
    def text(self) -> str:
        return ''.join(self.text_parts)

    @property
    def reasoning(self) -> str:
        return ''.join(self.reasoning_parts)

    def as_message(self) -> Message:
        return Message(Role.ASSISTANT, self.text, self.reasoning,
                       self.done.reasoning_details if self.done else (),
                       tool_calls=self.done.tool_calls if self.done else ())


CHARS_PER_TOKEN = 4  # a rough, provider-independent estimate


def estimated_tokens(messages: Iterable[Message]) -> int:
    """About how many tokens messages are (at least 1), by CHARS_PER_TOKEN."""
    return max(1, sum(len(m.text) for m in messages) // CHARS_PER_TOKEN)
