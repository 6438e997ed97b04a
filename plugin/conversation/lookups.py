# License: GPLv3 Copyright: the Book AI developers
"""The model looks things up: what a lookup is (Lookup), what runs one (a Toolbox: the book's tools,
grounding/book_tools.py, or the library's, grounding/library_tools.py), and the one loop that sends
a question with tools, runs the calls the model makes, sends their results back and ends with the
answer or at a bound (answer_with_lookups). The windows, the viewer and the command line all come
here through conversation/exchange.py, so the same settings make the same requests from each.

Every passage a tool sends is numbered on from the passages sent with the question, so the answer
cites it as it cites them, and the turn keeps its Place for the citation's link.
"""

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.messages import (
    CHARS_PER_TOKEN, MAX_TOOL_ARGUMENTS_CHARS, Chunk, Done, Failed, Message, Role, TextDelta, Tool, ToolCall, Usage,
)
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.grounding.book_tools import ToolResult
from calibre_plugins.bookai.grounding.scopes import Place
from calibre_plugins.bookai.providers import tool_support
from calibre_plugins.bookai.providers.pricing import total_cost
from calibre_plugins.bookai.providers.tool_support import tools_refused

if TYPE_CHECKING:
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

__all__ = ('ToolResult', 'Toolbox', 'Lookup', 'LookedUp', 'LookupNotice', 'Bounds', 'answer_with_lookups',
           'tools_refused')


class Toolbox(Protocol):
    """The tools of one question, clamped to what the reader may see."""

    def tools(self) -> tuple[Tool, ...]:
        """What the model is offered."""
        ...

    def run(self, call: ToolCall, first_number: int) -> ToolResult:
        """call run, its passages numbered from first_number. Never raises for the call's own faults
        (an unknown tool, arguments that are not JSON or of the wrong type, a place past the reader's):
        those come back as a refused result in words."""
        ...

    def description(self) -> str:
        """What the model can see through these tools, in a sentence for What will be sent."""
        ...


MOST_NUMBERS_SHOWN = 20  # passage numbers on one lookup's line


@dataclass(frozen=True)
class Lookup:
    """One lookup the model made while answering, as the reader sees it and the History keeps it."""
    tool: str                        # the tool's name
    arguments: str                   # as the model wrote them (bounded: core.messages.ToolCall)
    summary: str                     # ToolResult.summary
    first: int = 0                   # the number of its first passage (0 for none)
    places: tuple[Place, ...] = ()   # its passages, numbered from first
    refused: bool = False
    text: str = ''                   # what was sent back to the model, for the follow-up questions

    def shown_numbers(self) -> tuple[list[int], bool]:
        """Its passages' numbers as its line shows them (the windows', the command line's): at most
        MOST_NUMBERS_SHOWN, and whether there were more."""
        numbers = [self.first + k for k in range(min(len(self.places), MOST_NUMBERS_SHOWN)) if self.first + k > 0]
        return numbers, len(self.places) > MOST_NUMBERS_SHOWN

    def as_list(self) -> list:
        return [self.tool, self.arguments, self.summary, self.first,
                [[p.chapter, p.position, p.cfi, p.book_id, p.fmt] for p in self.places], self.refused, self.text]


@dataclass(frozen=True)
class LookedUp:
    """What Exchange.chunks() yields, between a provider's chunks, when a lookup has been made: the
    windows show it as it comes (under the answer), the command line prints it, --json carries it."""
    lookup: Lookup


@dataclass(frozen=True)
class LookupNotice:
    """What Exchange.chunks() yields when the reader is to be told how the answer was looked up (the
    service refused tools: the passages ranked before the question went instead)."""
    text: str


@dataclass(frozen=True)
class Bounds:
    """How far one answer may look things up: calls (the reader's "lookup_calls"), the tokens of one
    result and of all of them together."""
    calls: int = 8
    result_tokens: int = 2000
    total_tokens: int = 8000


MOST_CALLS = 32


def lookup_calls(value: object) -> int:
    """The reader's "lookup_calls" as a count of calls: from 1 to MOST_CALLS, 8 for anything else."""
    return max(1, min(MOST_CALLS, value)) if isinstance(value, int) and not isinstance(value, bool) else 8


REFUSED_NOTICE = _('The model could not look things up (its service refused tools): the passages that best '
                   'match the question went with it instead.')
# the last request, once no more lookups are allowed: the question as it was sent, then what was looked up
# as plain text, so that it holds no call of a tool (a model shown its own calls writes more of them, and
# a service may refuse tool calls in a request that offers no tools)
LOOKED_UP = '\n\nWhat you looked up for this question:\n\n{found}'
NO_MORE_LAST = ('\n\nNo more lookups are allowed: answer the question now, in words, from the passages above, '
                'citing them as [n]. Do not call any tool.')
AS_TEXT = ('You wrote a tool\'s call as text. To look something up, call the tool itself; otherwise answer the '
           'question in words.')
# a reply offered tools is held until it is known to be an answer: its first HELD_CHARS characters (a
# "let me look" before a call is not shown), and while it may still be calls written as text (it
# begins as they do), up to MOST_WRITTEN_CALL characters
HELD_CHARS = 400
CALL_STARTS = ('{', '[', '<tool_call>', '`')


def answer_with_lookups(provider: 'AIProviderPlugin', messages: Sequence[Message], toolbox: Toolbox, *,
                        use_model: str = '', cancel: CancelToken | None = None, bounds: Bounds = Bounds(),
                        first_number: int = 1, max_tokens: int | None = None) -> Iterator[Chunk | LookedUp | LookupNotice]:
    """The answer to messages, the model offered toolbox's tools: the chunks of the final answer as
    they come, a LookedUp for each call run (before the answer), and one Done (its usage that of every
    request added up) or one Failed. Never raises for what the model or the service does. Tool calls
    are counted against bounds; when a bound is reached the last request goes without tools, the model
    told to answer from what it has. Stop (cancel) ends it at once with a cancelled Done. When the
    first request is refused for its tools, it is sent once more without them (a LookupNotice says so)."""
    cancel = cancel or CancelToken()
    sent = list(messages)
    offered = tuple(toolbox.tools())
    tools = offered
    names = offered_names(offered)
    usages: list[Usage] = []
    found: list[Lookup] = []  # what the lookups gave, for the last request
    seen: dict[tuple[str, str], int] = {}
    calls = used = 0
    number = first_number
    first, told, spent = True, False, False
    while True:
        held: list[Chunk] = []
        holding = bool(tools) or bool(found)  # the last request's reply too: it may still be calls
        done: Done | None = None
        for chunk in provider.text_chat(sent, use_model=use_model, cancel=cancel, max_tokens=max_tokens,
                                        tools=tools):
            if isinstance(chunk, Failed):
                if first and tools and not cancel.cancelled and tools_refused(chunk.error):
                    done = None
                    break
                yield chunk
                return
            if isinstance(chunk, Done):
                done = chunk
                break
            if holding:
                held.append(chunk)
                so_far = ''.join(c.text for c in held if isinstance(c, TextDelta))
                if len(so_far) > HELD_CHARS and not may_be_calls(so_far):
                    yield from held
                    held, holding = [], False
            else:
                yield chunk
        if done is None:  # the first request refused tools: kept, so that the next question does not
            # offer them (provider.takes_tools()), then once more without them
            tool_support.remember_refusal(provider, use_model or provider.config.option('model') or '')
            first, tools = False, ()
            yield LookupNotice(REFUSED_NOTICE)
            continue
        first = False
        usages.append(done.usage)
        text = ''.join(c.text for c in held if isinstance(c, TextDelta))
        if done.finish_reason == 'cancelled' or cancel.cancelled:
            yield from held
            yield replace(done, usage=added(usages), tool_calls=(), finish_reason='cancelled')
            return
        made = done.tool_calls if tools else ()  # a call made when none was offered is not run
        if not made and holding and tools:  # a small local model's call written as text: read as the call
            made = calls_written(text, names, len(seen) + calls)
            text = '' if made else text
        if not made and not tools and found and holding and calls_written(text, offered_names(offered)):
            # the last reply is only more calls, as text: not shown as the answer, which it is not
            held = [TextDelta(no_answer(len(found)))]
        if not made:  # the answer: the end
            done = replace(done, tool_calls=(), finish_reason='stop' if done.tool_calls else done.finish_reason)
            if holding and tools and not told and written_call(text, names):
                told = True
                calls += 1
                sent += [Message(Role.ASSISTANT, text), Message(Role.USER, AS_TEXT)]
                if calls >= bounds.calls:
                    tools = ()
                continue
            yield from held
            yield replace(done, usage=added(usages))
            return
        results: list[Message] = []
        for call in made:
            if cancel.cancelled:
                yield Done(model=done.model, finish_reason='cancelled', usage=added(usages))
                return
            key = (call.name, normalized(call.arguments))
            calls += 1
            if calls > bounds.calls or not tools:
                result = ToolResult('Not run: the most lookups allowed for this question were made.',
                                    _('not looked up: the most lookups were made'), refused=True)
            elif key in seen:
                result = ToolResult(f'Already looked up: the result is above (call {seen[key]}).',
                                    _('already looked up'), refused=True)
            else:
                seen[key] = calls
                try:
                    result = toolbox.run(call, number)
                except Exception as e:  # a toolbox's own fault: the model is told, the answer goes on
                    result = ToolResult(f'The lookup failed: {type(e).__name__}.', _('a lookup failed'), refused=True)
                left = bounds.total_tokens - used
                if left < bounds.result_tokens and len(result.text) > left * CHARS_PER_TOKEN:
                    spent = True  # held to what is left of all the results' bound: no more lookups
                result = bounded(result, bounds.result_tokens, left)
                used += len(result.text) // CHARS_PER_TOKEN + 1
            lookup = Lookup(call.name, call.arguments, result.summary, number if result.places else 0,
                            result.places, result.refused, result.text)
            number += len(result.places)
            yield LookedUp(lookup)
            found.append(lookup)
            results.append(Message(Role.TOOL, result.text, tool_call_id=call.id, tool_name=call.name))
        if calls >= bounds.calls or used >= bounds.total_tokens or spent:
            tools = ()
        if not tools:  # the last request: the question, then what was looked up, as text
            sent = final_messages(messages, found)
            continue
        sent += [Message(Role.ASSISTANT, text, tool_calls=made), *results]


def no_answer(n: int) -> str:
    """What the reader is told when the last reply, told to answer, is only more calls."""
    return ngettext('The model did not answer in words: after {n} lookup it asked to look up more, and no more '
                    'are allowed for one answer. Asking again, or another model, may do better.',
                    'The model did not answer in words: after {n} lookups it asked to look up more, and no more '
                    'are allowed for one answer. Asking again, or another model, may do better.', n).format(n=n)


def offered_names(offered: Sequence[Tool]) -> set[str]:
    return {t.name for t in offered}


def final_messages(messages: Sequence[Message], found: Sequence[Lookup]) -> list[Message]:
    """The messages of the last request, when no more lookups are allowed: messages as they were
    sent, their last (the question) followed by what the lookups found, numbered as they were
    (lookups_text), and the instruction to answer now."""
    *before, question = messages
    looked = lookups_text(found)
    tail = (LOOKED_UP.format(found=looked) if looked else '') + NO_MORE_LAST
    return [*before, replace(question, text=question.text + tail)]


def added(usages: Sequence[Usage]) -> Usage:
    """The usage of every request of one answer, added up (a count unknown as soon as one is)."""
    def total(name: str) -> int | None:
        values = [getattr(u, name) for u in usages]
        return None if not values or any(v is None for v in values) else sum(values)
    if len(usages) == 1:
        return usages[0]
    return Usage(total('input_tokens'), total('output_tokens'), total('reasoning_tokens'), total('cached_tokens'),
                 total_cost(u.cost for u in usages), total('cache_write_tokens'))


def normalized(arguments: str) -> str:
    """A call's arguments as the same call would write them (JSON re-written, keys in order); longer
    than a call's arguments may be (core.messages.ToolCall), as they are."""
    if len(arguments) > MAX_TOOL_ARGUMENTS_CHARS:
        return arguments
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except (ValueError, RecursionError):
        return arguments.strip()


MOST_WRITTEN_CALL = 8000  # characters: a longer reply is an answer, whatever it begins with


def written_call(text: str, names: set[str]) -> bool:
    """Whether an answer is only a tool's call written as text: `search_book(...)`, or JSON naming a tool."""
    if len(text) > MOST_WRITTEN_CALL:
        return False
    t = text.strip().strip('`').strip()
    if t.startswith('json'):
        t = t[4:].strip()
    for name in names:
        if t.startswith(name) and t[len(name):].lstrip()[:1] in ('(', '{', ''):
            return True
    if t.startswith('{') and t.endswith('}'):
        try:
            value = json.loads(t)
        except (ValueError, RecursionError):
            return False
        return isinstance(value, dict) and any(isinstance(value.get(k), str) and value[k] in names
                                               for k in ('name', 'tool'))
    return False


MOST_WRITTEN_CALLS = 4  # distinct calls read from one reply written as text


def may_be_calls(text: str) -> bool:
    """Whether a reply that has begun so may still be calls written as text (calls_written())."""
    t = text.lstrip()
    if len(text) > MOST_WRITTEN_CALL:
        return False
    return not t or any(t.startswith(s) or s.startswith(t) for s in CALL_STARTS)


def calls_written(text: str, names: set[str], already: int = 0) -> tuple[ToolCall, ...]:
    """The calls of offered tools a reply holds when it is nothing but them, written as text as small
    local models write them when their server does not read them (Qwen2.5's Hermes form,
    {"name": "search_book", "arguments": {...}}: one, a list, or one after another, bare, in
    <tool_call> tags or in a code fence), the same call written again counted once, at most
    MOST_WRITTEN_CALLS; a last one cut off (the reply ran out of tokens) is left out. () for any other
    reply, which is an answer. already: the calls made before, for the ids."""
    if len(text) > MOST_WRITTEN_CALL or not may_be_calls(text):
        return ()
    t = re.sub(r'</?tool_call>|```(?:json)?', '\n', text).strip()
    values: list = []
    decoder = json.JSONDecoder()
    at = 0
    while at < len(t):
        try:
            value, end = decoder.raw_decode(t, at)
        except (ValueError, RecursionError):
            if not values or t[at] not in '{[':
                return ()
            break  # a last call cut off
        values += value if isinstance(value, list) else [value]
        at = end
        while at < len(t) and t[at] in ' \t\r\n,':
            at += 1
    calls: list[ToolCall] = []
    seen: set[tuple[str, str]] = set()
    for value in values:
        if not isinstance(value, dict) or set(value) - {'name', 'arguments'} or not isinstance(value.get('name'), str) \
                or value['name'] not in names:
            return ()
        arguments = value.get('arguments', {})
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments, ensure_ascii=False)
        elif not isinstance(arguments, str):
            return ()
        if (value['name'], arguments) not in seen and len(calls) < MOST_WRITTEN_CALLS:
            seen.add((value['name'], arguments))
            calls.append(ToolCall(f'written_{already + len(calls) + 1}', value['name'], arguments))
    return tuple(calls)


def bounded(result: ToolResult, most_tokens: int, left_tokens: int) -> ToolResult:
    """result held to most_tokens, and to the left_tokens of all results: cut at a passage's end
    where it can be, its Places kept only for the passages still in it."""
    most = max(0, min(most_tokens, left_tokens)) * CHARS_PER_TOKEN
    if len(result.text) <= most:
        return result
    if most < 200:
        return ToolResult('Not sent: the lookups\' results reached their bound.', _('not sent: the bound was reached'),
                          refused=True)
    cut = result.text[:most]
    end = cut.rfind('\n\n[')
    cut = (cut[:end] if end > 0 else cut) + '\n(cut)'
    kept = set(int(n) for n in re.findall(r'^\[(\d+)\]', cut, re.MULTILINE))
    numbers = [int(n) for n in re.findall(r'^\[(\d+)\]', result.text, re.MULTILINE)]
    places = tuple(p for n, p in zip(numbers, result.places) if n in kept) if len(numbers) == len(result.places) \
        else result.places[:len(kept)]
    return replace(result, text=cut, places=places)


def lookups_text(lookups: Sequence[Lookup]) -> str:
    """An earlier turn's lookups as plain text after its question, numbered as they were, so that a
    follow-up question needs no tool messages: every provider takes it."""
    parts = [f'(Looked up while answering: {lookup.tool} {one_line(lookup.arguments)[:200]})\n{lookup.text}'
             for lookup in lookups if lookup.text and not lookup.refused]
    return '\n\n'.join(parts)
