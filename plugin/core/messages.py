# License: GPLv3 Copyright: the Book AI developers
"""What a conversation is made of, and what a provider's answer stream carries.

A provider's text_chat() yields chunks: TextDelta and ReasoningDelta while the
answer streams, then exactly one of Done or Failed. Errors travel in the
stream as Failed, never as exceptions, so a window only ever has to read chunks.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum


class Role(str, Enum):
    SYSTEM = 'system'
    DEVELOPER = 'developer'
    USER = 'user'
    ASSISTANT = 'assistant'


@dataclass(frozen=True)
class Message:
    role: Role
    text: str
    # what the model thought before answering, kept apart from the answer
    reasoning: str = ''
    # provider-specific data some APIs want sent back with the next turn
    # (Anthropic's signed thinking blocks, for instance)
    reasoning_details: tuple = ()


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


@dataclass(frozen=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    # None when nobody knows what the answer cost: unknown, never free
    cost: Cost | None = None


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


@dataclass(frozen=True)
class Failed:
    error: Exception

    @property
    def message(self) -> str:
        return str(self.error)


# what text_chat() yields
Chunk = TextDelta | ReasoningDelta | Done | Failed


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
                       self.done.reasoning_details if self.done else ())


CHARS_PER_TOKEN = 4  # a rough, provider-independent estimate


def estimated_tokens(messages: Iterable[Message]) -> int:
    """About how many tokens messages are (at least 1), by CHARS_PER_TOKEN."""
    return max(1, sum(len(m.text) for m in messages) // CHARS_PER_TOKEN)
