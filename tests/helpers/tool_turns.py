# License: GPLv3 Copyright: the Book AI developers
"""A stand-in provider for the lookups' loop (conversation/lookups.py): each request it gets is
answered by the next scripted turn (its text, then a Done, with tool calls or not; or a Failed),
and every request's messages and tools are kept, to check what the model was sent.

    provider = ToolTurns([calls(('search_book', {'query': 'keeper'})), answer('It is Bill [2].')])
    for chunk in answer_with_lookups(provider, messages, toolbox): ...
    provider.requests   # [(messages, tools), ...]

A turn may be a callable: it is given the messages sent and returns the turn (to answer from them).
No wire format is involved: the formats' own tests (providers/) read tool calls from real streams.
"""

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.messages import Done, Failed, TextDelta, ToolCall, Usage


@dataclass
class Turn:
    text: str = ''
    calls: tuple[ToolCall, ...] = ()
    error: Exception | None = None
    usage: Usage = field(default_factory=lambda: Usage(10, 5))
    cancel_after: bool = False  # Stop pressed while this turn streams


def calls(*wanted: tuple[str, object], text: str = '') -> Turn:
    """A turn calling tools: (name, arguments: a dict written as JSON, or the text as it is)."""
    return Turn(text, tuple(ToolCall(f'call_{name}_{i}', name, a if isinstance(a, str) else json.dumps(a))
                            for i, (name, a) in enumerate(wanted)))


def answer(text: str) -> Turn:
    return Turn(text)


class Config:
    base_url = 'http://stand-in.invalid'

    def option(self, name: str) -> str:
        return 'stand-in-model' if name == 'model' else ''


class ToolTurns:
    """The stand-in provider. takes: what takes_tools() answers. After its turns: an answer 'done.'."""
    name = 'stand_in'

    def __init__(self, turns: Sequence['Turn | Callable[[list], Turn]'], takes: bool = True) -> None:
        self.turns = list(turns)
        self.takes = takes
        self.config = Config()
        self.requests: list[tuple[list, tuple]] = []

    def takes_tools(self, model: str) -> bool:
        return self.takes

    def text_chat(self, messages, use_model: str = '', cancel: CancelToken | None = None, max_tokens=None,
                  schema=None, tools=()):
        messages = list(messages)
        self.requests.append((messages, tuple(tools)))
        turn = self.turns.pop(0) if self.turns else answer('done.')
        if callable(turn):
            turn = turn(messages)
        if turn.error is not None:
            yield Failed(turn.error)
            return
        for word in turn.text.split(' ') if turn.text else ():
            yield TextDelta(word + ' ')
            if turn.cancel_after and cancel is not None:
                cancel.cancel()
        if cancel is not None and cancel.cancelled:
            yield Done(model='stand-in-model', finish_reason='cancelled', usage=turn.usage)
            return
        yield Done(model='stand-in-model', finish_reason='tool_calls' if turn.calls else 'stop', usage=turn.usage,
                   tool_calls=turn.calls)

    def sent_text(self) -> str:
        """Every message's text of every request, with each call's arguments, as one string."""
        return '\n'.join(m.text + ''.join(c.arguments for c in m.tool_calls)
                         for messages, _tools in self.requests for m in messages)
