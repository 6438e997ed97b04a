# License: GPLv3 Copyright: the Book AI developers
"""The model looks things up: what a lookup is (Lookup), what runs one (a Toolbox: the book's tools,
grounding/book_tools.py, or the library's, grounding/library_tools.py), and the one loop that sends
a question with tools, runs the calls the model makes, sends their results back and ends with the
answer or at a bound (answer_with_lookups). The windows, the viewer and the command line all come
here through conversation/exchange.py, so the same settings make the same requests from each.

Every passage a tool sends is numbered on from the passages sent with the question, so the answer
cites it as it cites them, and the turn keeps its Place for the citation's link.
"""

from dataclasses import dataclass
from typing import Protocol

from calibre_plugins.bookai.core.messages import Tool, ToolCall
from calibre_plugins.bookai.grounding.scopes import Place

load_translations()


@dataclass(frozen=True)
class ToolResult:
    """What running one call gave: the text that goes back to the model (numbered passages, or
    words saying why there are none), and what the reader is told of it."""
    text: str
    summary: str                     # for the reader, one line: "searched 'the keeper': 3 passages"
    places: tuple[Place, ...] = ()   # the passages the text holds, in their numbers' order
    refused: bool = False            # an error told in words: bad arguments, past the place, no such tool


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

    def as_list(self) -> list:
        return [self.tool, self.arguments, self.summary, self.first,
                [[p.chapter, p.position, p.cfi, p.book_id, p.fmt] for p in self.places], self.refused, self.text]


@dataclass(frozen=True)
class LookedUp:
    """What Exchange.chunks() yields, between a provider's chunks, when a lookup has been made: the
    windows show it as it comes (under the answer), the command line prints it, --json carries it."""
    lookup: Lookup
