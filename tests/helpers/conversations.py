# License: GPLv3 Copyright: the Book AI developers
"""Conversations as the windows keep them, for the tests of the History: one question, answered."""

from collections.abc import Iterable

from calibre_plugins.bookai.conversation.books import BookInfo
from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.core.messages import Answer, Done, TextDelta, WebLink
from calibre_plugins.bookai.grounding.scopes import Place


def answered(book: BookInfo, library_id: str, question: str, answer: str, asked: float, created: float,
             conv_id: str = '', places: Iterable[Place] = (), passages: str = '', links: Iterable[WebLink] = (),
             model: str = 'gpt-5-mini', provider: str = 'openai') -> Conversation:
    """A conversation about book, begun at created, whose one question (with passages, and the
    places they are at) was asked at asked and answered by model of provider, with the web pages
    links."""
    conv = Conversation([book], library_id, conversation_id=conv_id, created=created)
    conv.ask(question, passages, places=places)
    reply = Answer()
    reply.add(TextDelta(answer))
    reply.add(Done(model=model, web_links=tuple(links)))
    conv.finish(reply, provider)
    conv.turns[-1].asked = asked
    return conv
