# License: GPLv3 Copyright: the Book AI developers
"""Reading a streamed answer, the same for every provider: StreamState (what a stream
told besides the text), json_of() for the JSON an event carries, the errors for a stream
that is too large or too deep, progressing() for the answer's deadline, and
redacted_stream(), which keeps a provider's secrets out of every chunk it yields.
"""

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, cast

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import BadRequest, ProtocolError, Secrets, TooLarge
from calibre_plugins.bookai.core.messages import (
    MAX_TOOL_ARGUMENTS_CHARS, MAX_TOOL_CALLS, Chunk, Delta, Done, Failed, Message, ReasoningDelta, TextDelta, ToolCall,
    Usage, WebLink, token_count,
)
from calibre_plugins.bookai.core.streams import SSEEvent
from calibre_plugins.bookai.core.transport import Response

if TYPE_CHECKING:
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()


class ToolCallsRead:
    """The tool calls of a stream, read as they come: each call begins (begin()) under a key the
    wire format gives it (its index, or its id), then its arguments come in pieces (add()).
    Bounded: at most MAX_TOOL_CALLS calls (more are dropped) and MAX_TOOL_ARGUMENTS_CHARS of
    arguments each (past that, the call is cut, ToolCall.cut). A piece for a call that never
    began starts one with no name: the loop answers it as a tool that does not exist."""

    def __init__(self) -> None:
        self.calls: dict[object, list] = {}  # key -> [id, name, parts, length, cut]

    def begin(self, key: object, call_id: object = '', name: object = '') -> None:
        """A call begins (or is told again, as some servers do: what is new is kept)."""
        call = self.call(key)
        if call is None:
            return
        if isinstance(call_id, str) and call_id and not call[0]:
            call[0] = call_id
        if isinstance(name, str) and name:
            call[1] = name if not call[1] else call[1]

    def add(self, key: object, piece: object) -> None:
        """A piece of a call's arguments (a JSON object given whole is written as JSON)."""
        call = self.call(key)
        if call is None:
            return
        if isinstance(piece, (dict, list)):
            piece = json.dumps(piece, ensure_ascii=False)
        if not isinstance(piece, str) or not piece or call[4]:
            return
        room = MAX_TOOL_ARGUMENTS_CHARS - call[3]
        if len(piece) > room:
            piece, call[4] = piece[:room], True
        call[2].append(piece)
        call[3] += len(piece)

    def whole(self, key: object, arguments: object) -> None:
        """A call's arguments given whole at its end (as some formats repeat them): kept only
        when no piece of them came before."""
        call = self.call(key)
        if call is not None and not call[3]:
            self.add(key, arguments)

    def call(self, key: object) -> list | None:
        if not isinstance(key, (str, int)) or isinstance(key, bool):
            key = repr(type(key))
        if key not in self.calls:
            if len(self.calls) >= MAX_TOOL_CALLS:
                return None
            self.calls[key] = ['', '', [], 0, False]
        return self.calls[key]

    def finished(self) -> tuple[ToolCall, ...]:
        """The calls, in the order they began; a call with no id gets one of its place."""
        return tuple(ToolCall(c[0] or f'call_{i}', c[1], ''.join(c[2]) + ('…' if c[4] else ''), c[4])
                     for i, c in enumerate(self.calls.values()))

    def __bool__(self) -> bool:
        return bool(self.calls)


@dataclass
class StreamState:
    """What a provider learns while reading a stream, besides the text."""
    model: str = ''
    finish_reason: str = ''
    usage: Usage = Usage()      # immutable: replaced, never changed
    web_links: list[WebLink] = field(default_factory=list)
    response_id: str = ''
    reasoning_details: list[dict] = field(default_factory=list)
    finished: bool = False      # the service said the answer is complete
    tool_calls: ToolCallsRead = field(default_factory=ToolCallsRead)
    # the request offered tools: a tool the model uses is a call (Anthropic's structured answer
    # is a tool's input too, and is the answer's text when no tools were offered)
    tools_offered: bool = False

    def checked(self) -> None:
        """Drop what a broken stream put here with the wrong type: a count that is not a
        whole number, a model that is not a name, a link that is not text."""
        if not isinstance(self.model, str):
            self.model = ''
        if not isinstance(self.response_id, str):
            self.response_id = ''
        if not isinstance(self.finish_reason, str):
            self.finish_reason = 'stop'
        u = self.usage
        counts = [n if type(n) is int else None for n in (u.input_tokens, u.output_tokens, u.reasoning_tokens,
                                                           u.cached_tokens, u.cache_write_tokens)]
        cost = u.cost if u.cost is None or isinstance(u.cost.amount, float) else None
        self.usage = Usage(counts[0], counts[1], counts[2], counts[3], cost, counts[4])
        self.web_links = [w for w in self.web_links if isinstance(w.url, str) and isinstance(w.title, str)]


def count_at(data: object, *keys: str) -> int | None:
    """The count of tokens at data[keys[0]][keys[1]]...: a service's usage read whatever its shape,
    None where a level is not a JSON object or lacks the key, or what is there is no count
    (core.messages.token_count)."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return token_count(data)


def json_of(event: SSEEvent, provider: str) -> dict:
    """The JSON object an SSE event carries; ProtocolError (provider: its name) for anything else."""
    try:
        data = limits.load_json(event.data)
    except limits.TooComplex as e:
        raise too_complex(provider, e) from None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ProtocolError(_('{provider} sent something that is not a valid answer stream.').format(
            provider=provider), details=event.data[:500])
    return data


def too_large(provider: str, limit: int) -> TooLarge:
    """The error for a service that sent more than limit bytes for one answer."""
    return TooLarge(_('{provider} sent more than {megabytes:g} MB, the most Book AI accepts for one answer, '
                      'so it was stopped.').format(provider=provider, megabytes=limit / 2 ** 20))


def too_deep(provider: str) -> ProtocolError:
    """The error for JSON nested deeper than limits.MAX_JSON_DEPTH."""
    return ProtocolError(_('{provider} sent JSON nested deeper than {depth} levels, the most Book AI reads, '
                           'so it was not read.').format(provider=provider, depth=limits.MAX_JSON_DEPTH))


def too_complex(provider: str, error: limits.TooComplex) -> ProtocolError:
    """The error for JSON refused for its structure (limits.load_json): nested too deep, or holding
    more values than its size allows (limits.JSON_MEMORY_PER_BYTE, or the tighter bound it was read with)."""
    if not isinstance(error, limits.TooManyValues):
        return too_deep(provider)
    return ProtocolError(_('{provider} sent JSON holding more values than Book AI reads in a text of its size '
                           '(read, they would take more than {ratio:g} times its size in memory), so it was not '
                           'read.').format(provider=provider, ratio=error.per_byte))


def progressing(chunks: Iterator[Delta], response: Response) -> Iterator[Delta]:
    """chunks, with the response's deadline moved on by each one that carries answer text:
    keepalives, pings and empty deltas yield nothing here, so they do not count as the
    service answering (see transport.Deadline). Also after the reader took the chunk, so
    that a reader that was slow to take it is not counted as the service's silence."""
    deadline = response.deadline
    for chunk in chunks:
        if chunk.text:
            deadline.progress()
            yield chunk
            deadline.progress()
        else:
            yield chunk


def redacted_stream(chunks: Iterable[Chunk], secrets: Secrets) -> Iterator[Chunk]:
    """chunks, with every secret redacted from what they carry: the answer and the reasoning
    (a secret split across two pieces included), the model, the web links, an error. The
    shortest tail of a piece that could begin a secret waits for the next piece (or the end),
    so nothing is lost; with no secret, the chunks pass untouched, as soon as they come."""
    if not secrets:
        yield from chunks
        return
    held_kind: type[Delta] = TextDelta
    held = ''
    try:
        for chunk in chunks:
            if isinstance(chunk, (TextDelta, ReasoningDelta)):  # neither has subclasses: its type
                kind = type(chunk)
                if kind is not held_kind:
                    if held:
                        yield held_kind(held)
                    held_kind, held = kind, ''
                text = secrets.redact(held + chunk.text)
                cut = secrets.unfinished_start(text)
                held = text[cut:]
                if cut:
                    yield kind(text[:cut])
                continue
            if held:
                yield held_kind(held)
                held = ''
            yield redacted_chunk(chunk, secrets)
        if held:
            yield held_kind(held)
    finally:
        if hasattr(chunks, 'close'):
            chunks.close()  # a reader that stops early (Stop, a closed window) ends the request at once


def redacted_chunk(chunk: Chunk, secrets: Secrets) -> Chunk:
    """A Done or Failed with no secret in it: every string it holds through Secrets.redacted (the
    model, the finish reason, the response's id, the web links' titles and addresses, the usage),
    the error through redact_error; reasoning details holding one are dropped (they are signed:
    a changed one would be refused when sent back)."""
    if isinstance(chunk, Failed):
        secrets.redact_error(chunk.error)
        return chunk
    if isinstance(chunk, Done):
        kept = tuple(d for d in chunk.reasoning_details
                     if secrets.redact(json.dumps(d, ensure_ascii=False)) == json.dumps(d, ensure_ascii=False))
        return replace(cast(Done, secrets.redacted(replace(chunk, reasoning_details=()))), reasoning_details=kept)
    return chunk


@dataclass(frozen=True)
class WholeAnswer:
    """An answer read whole, for a caller that needs all of it before using any (a summary, an
    X-Ray's JSON, AI metadata): its text, up to the chars asked for and the piece that crossed
    them; how the stream ended (a Done, or the Failed it ended with); and whether reading stopped
    at the bound (the rest not read)."""
    text: str
    end: Done | Failed
    cut: bool = False


def whole_answer(stream: Iterable[Chunk], most_chars: int, model: str = '') -> WholeAnswer:
    """The text of stream (a provider's text_chat()), read to its end or until it is longer than
    most_chars, where reading stops; the stream is closed either way, so that a request left early
    ends at once. A stream that ended without a Done (cut at the bound) ends as Done(finish_reason
    'length') of model."""
    pieces: list[str] = []
    size, cut = 0, False
    end: Done | Failed | None = None
    try:
        for chunk in stream:
            if isinstance(chunk, TextDelta):
                pieces.append(chunk.text)
                size += len(chunk.text)
                if size > most_chars:
                    cut = True
                    break  # the rest is not read: the request ends
            elif isinstance(chunk, (Done, Failed)):
                end = chunk
    finally:
        close = getattr(stream, 'close', None)
        if close is not None:
            close()  # a stream left before its end: its connection closed now
    return WholeAnswer(''.join(pieces), end or Done(model=model, finish_reason='length'), cut)


def schema_answer(provider: 'AIProviderPlugin', messages: list[Message], model: str, cancel: CancelToken,
                  max_tokens: int, schema: dict | None, most_chars: int) -> tuple[WholeAnswer, bool]:
    """whole_answer() of a request that asks for JSON of schema (None: the prompt alone asks); a
    service that refuses the schema (BadRequest) is asked again without it. With whether to send
    the schema next time: the X-Ray and AI metadata ask many times, and a service that refused it
    once is not asked with it again."""
    read = whole_answer(provider.text_chat(messages, model, cancel, max_tokens, schema), most_chars, model)
    if schema is not None and isinstance(read.end, Failed) and isinstance(read.end.error, BadRequest):
        return whole_answer(provider.text_chat(messages, model, cancel, max_tokens, None), most_chars, model), False
    return read, schema is not None
