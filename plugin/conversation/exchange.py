# License: GPLv3 Copyright: the Book AI developers
"""One question sent and answered: the one way the discussion window, Ask my library, the
viewer's panel and the command line send a Question (conversation/question.py), read its
answer's stream, finish the conversation's turn with it and keep the conversation in the
History. So the same question with the same settings sends the same request from each.

Nothing here waits on a window: the windows read chunks() in a thread and hand each chunk
to take() on the GUI thread (gui/worker.stream_in_thread); the command line does both in
its own thread. Stop is the exchange's CancelToken: the stream then ends with a cancelled
Done, and what came is kept as a stopped turn.

Where the reader lets the model look things up (the "lookups" setting), the question has the
book's tools and the provider takes tools, the answer comes through conversation/lookups.py's
loop: chunks() then yields a LookedUp for each lookup before the answer, and take() keeps it with
the turn (its passages' places after the question's, numbered on from them, so that [n] links).
"""

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from calibre_plugins.bookai.conversation.lookups import (
    Bounds, LookedUp, LookupNotice, Toolbox, answer_with_lookups, lookup_calls,
)
from calibre_plugins.bookai.conversation.question import ANSWER_ROOM
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import ContextTooLong
from calibre_plugins.bookai.core.messages import Answer, Chunk, Done, Failed, Message, estimated_tokens
from calibre_plugins.bookai.providers.context import refused
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre_plugins.bookai.conversation.conversation import Conversation, Turn
    from calibre_plugins.bookai.conversation.question import Question
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

LEAST_ROOM = 500  # tokens left in the model's window for the lookups' results, or none is offered

NOT_KEPT = _('The conversation could not be kept in the History: {error}')


def lookup_toolbox(provider: 'AIProviderPlugin', question: 'Question', use_model: str = '',
                   wanted: bool | None = None) -> 'Toolbox | None':
    """The tools the model may look things up with while it answers question: None when the reader
    turned lookups off (wanted: None for the "lookups" setting, False for one question without them),
    the question has none (no book text), or the provider cannot offer the model tools. What
    Exchange uses, and what What will be sent and the reader's consent tell of."""
    if question.tools is None or not (plugin_prefs()['lookups'] if wanted is None else wanted):
        return None
    model = use_model or provider.config.option('model') or ''
    try:
        takes = provider.takes_tools(model)
    except Exception:  # a provider's setting read wrong: no tools, as for one that has none
        takes = False
    return question.tools if takes else None


def most_lookups() -> int:
    """How many lookups one answer may make at most, as the reader set it ("lookup_calls")."""
    return lookup_calls(plugin_prefs()['lookup_calls'])


class Exchange:
    """question asked in conv of provider: the turn it starts, the messages that go (exactly
    what "What will be sent" shows), the answer as it comes, and how the turn ends. use_model:
    the model asked for on the command line; by default the one the conversation's first answer
    pinned (or the provider's own)."""

    def __init__(self, conv: 'Conversation', provider: 'AIProviderPlugin', question: 'Question',
                 use_model: str = '', lookups: bool | None = None) -> None:
        self.conv, self.provider = conv, provider
        self.replaces_failed = conv.retry_question() != ''  # a failed last turn is asked again: it goes
        self.messages: list[Message] = conv.ask(question.text, question.passages, question.spoiler_safe,
                                                question.places, question.suggested)
        self.use_model = use_model or conv.model
        self.answer = Answer()
        self.cancel = CancelToken()
        self.first_number = len(question.places) + 1
        self.notices: list[str] = []  # what the reader is told of how the answer was looked up
        # lookups: None for the reader's setting ("lookups"); False for one question without them
        self.toolbox: Toolbox | None = lookup_toolbox(provider, question, self.use_model, lookups)
        if self.toolbox is not None and self.bounds().total_tokens < LEAST_ROOM:
            self.toolbox = None  # the model has no room left for what a lookup finds


    @property
    def index(self) -> int:
        """The turn's place in the conversation."""
        return len(self.conv.turns) - 1

    @property
    def turn(self) -> 'Turn':
        return self.conv.turns[self.index]

    def chunks(self) -> 'Iterator[Chunk | LookedUp | LookupNotice]':
        """The answer's stream, ending with a Done or a Failed (it never raises: errors come as a
        Failed chunk); Stop (self.cancel) ends it with a cancelled Done. With lookups, each one
        made comes as a LookedUp before the answer's text."""
        if self.toolbox is None:
            return self.provider.text_chat(self.messages, use_model=self.use_model, cancel=self.cancel)
        return answer_with_lookups(self.provider, self.messages, self.toolbox, use_model=self.use_model,
                                   cancel=self.cancel, first_number=self.first_number,
                                   bounds=self.bounds())

    def bounds(self) -> Bounds:
        """How far the answer may look things up: the reader's most lookups, and all their results
        held to the room the model has left after the question and the answer, when its window was
        learned (book_text_room(), for the same provider): a result past it would be refused as longer
        than the model reads."""
        bounds = Bounds(calls=most_lookups())
        model = self.use_model or self.provider.config.option('model') or ''
        window = getattr(self.provider, 'context_windows', {}).get(model)
        if window is None or window.tokens <= 0:
            return bounds
        room = window.tokens - estimated_tokens(self.messages) - min(ANSWER_ROOM, window.tokens // 4)
        return replace(bounds, total_tokens=max(0, min(bounds.total_tokens, room)),
                       result_tokens=max(0, min(bounds.result_tokens, room)))

    def take(self, chunk: 'Chunk | LookedUp | LookupNotice') -> bool:
        """Add chunk to the answer (a lookup to the turn, a notice to notices); whether it was the
        last one. A request the service refused as longer than the model reads teaches how much it
        does read (providers.context.refused()): the next question's book text is held below it."""
        if isinstance(chunk, LookedUp):
            turn = self.turn
            turn.lookups = (*turn.lookups, chunk.lookup)
            turn.places = (*turn.places, *chunk.lookup.places)
            return False
        if isinstance(chunk, LookupNotice):
            self.notices.append(chunk.text)
            return False
        self.answer.add(chunk)
        if isinstance(chunk, Failed) and isinstance(chunk.error, ContextTooLong):
            model = self.use_model or self.provider.config.option('model') or ''
            refused(self.provider.name, self.provider.config.base_url, model, estimated_tokens(self.messages))
        return isinstance(chunk, (Done, Failed))

    def stopped_here(self) -> None:
        """Stop when the stream cannot end on its own any more (its window closes): the answer ends
        as Stop ends it, with a cancelled Done."""
        self.cancel.cancel()
        self.take(Done(model=self.conv.model, finish_reason='cancelled'))

    def finish(self, keep: 'Callable[[Conversation], object] | None') -> str:
        """The turn finished with the answer, then the conversation kept by keep (the History's
        save, which raises OSError). '' when kept, else why not, in a sentence (NOT_KEPT)."""
        self.conv.finish(self.answer, self.provider.name)
        if keep is None:
            return ''
        try:
            keep(self.conv)
        except OSError as e:
            return NOT_KEPT.format(error=e)
        return ''
