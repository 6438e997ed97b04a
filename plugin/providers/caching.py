# License: GPLv3 Copyright: the Book AI developers
"""The services' prompt caches: what a request says so that the second question about a book
costs little, the same for every wire format that needs it.

A conversation's messages keep the same bytes turn after turn, and the book's text sent with a
question comes first in its message (conversation.prompts.book_part; Message.book_chars says
where it ends): every service that caches prompts by their prefix (OpenAI, Gemini, llama.cpp's
server) then reads the book's text from its cache for a later question about the same book and
place. What a request adds:

- Anthropic (and, through OpenRouter, Claude and Gemini): a cache breakpoint (cache_control) on
  the block that ends the book's text of the question, and on the block that ends the request,
  so that a follow-up reads the whole conversation so far (cached_blocks(); at most
  MOST_BREAKPOINTS, of the 4 Anthropic allows);
- OpenAI's own service: prompt_cache_key (prompt_cache_key()), the same for every question about
  the same book and place, so that OpenAI sends them to the machine that holds its cache: a hash
  of the book's text, which tells nothing of the book;
- llama.cpp's llama-server: cache_prompt, only to a server known to be one (is_llama_cpp_props(),
  or an answer that carried its timings: llama_cpp_seen()), another server may refuse what it does
  not know.

How many tokens came from the cache is read from each service's usage (core.messages.Usage),
priced at the cached rate (providers.pricing.CACHE_PRICES) and shown
(conversation.conversation.cache_text).
"""

import hashlib
import threading
from typing import Any
from urllib.parse import urlsplit

from calibre_plugins.bookai.core.messages import Message, Role

EPHEMERAL = {'type': 'ephemeral'}  # Anthropic's cache, kept five minutes from its last use
MOST_BREAKPOINTS = 2  # the book's text, and the end of the request
OPENAI_HOSTS = ('api.openai.com',)


def text_blocks(m: Message) -> list[dict[str, Any]]:
    """m's text as content blocks: the book's text it starts with (Message.book_chars) a block
    of its own, so that a cache breakpoint can end there; the rest, if any, another."""
    book = m.book_text
    if book and len(book) < len(m.text):
        return [{'type': 'text', 'text': book}, {'type': 'text', 'text': m.text[len(book):]}]
    return [{'type': 'text', 'text': m.text}]


def cached_blocks(messages: list[Message], wire: list[dict[str, Any]], book_only: bool = False) -> list[dict[str, Any]]:
    """wire (the user and assistant messages of messages, in their order, as {'role', 'content'}
    dicts) with cache breakpoints: every user message that starts with the book's text split
    after it into content blocks (text_blocks(): the same blocks in every turn, so that the
    prefix cached for one question is found again by the next), a breakpoint on the book's text
    of the last question, and one on the last block of the request (not with book_only:
    OpenRouter's Gemini reads one breakpoint, the last). Other messages keep their content as it
    is (text as a string reads as the same tokens as one text block), but the last question's."""
    said = [m for m in messages if m.role in (Role.USER, Role.ASSISTANT)]
    out = []
    for i, (m, w) in enumerate(zip(said, wire)):
        if m.role is Role.USER and isinstance(w.get('content'), str) and (m.book_text or i == len(said) - 1):
            w = dict(w, content=text_blocks(m))
        out.append(w)
    if not out or len(out) != len(said) or said[-1].role is not Role.USER or not isinstance(out[-1]['content'], list):
        return out
    last = dict(out[-1], content=[dict(b) for b in out[-1]['content']])
    blocks = last['content']
    if said[-1].book_text:
        blocks[0]['cache_control'] = dict(EPHEMERAL)
    if not book_only:
        blocks[-1]['cache_control'] = dict(EPHEMERAL)
    out[-1] = last
    return out


def prompt_cache_key(messages: list[Message]) -> str:
    """The key OpenAI routes requests of the same prefix by: a hash of the first book's text the
    conversation sent (else of its system message), the same for every question about the same
    book and place, and nothing of the book in it."""
    first = next((m.book_text for m in messages if m.role is Role.USER and m.book_text), '')
    if not first:
        first = '\n\n'.join(m.text for m in messages if m.role in (Role.SYSTEM, Role.DEVELOPER))
    return 'bookai-' + hashlib.sha256(first.encode('utf-8')).hexdigest()[:32]


def is_openai_service(url: str) -> bool:
    """Whether url is OpenAI's own API (not a server that copies its wire format)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme == 'https' and (parts.hostname or '') in OPENAI_HOSTS


def is_llama_cpp_props(data: object) -> bool:
    """Whether an answer to GET /props is llama.cpp's server's: its generation settings and its slots."""
    return isinstance(data, dict) and isinstance(data.get('default_generation_settings'), dict) and (
        type(data.get('total_slots')) is int)


def llama_cpp_timings(data: object) -> bool:
    """Whether a chunk of a chat stream carries llama.cpp's server's timings of the prompt's cache."""
    timings = data.get('timings') if isinstance(data, dict) else None
    return isinstance(timings, dict) and 'cache_n' in timings


# the addresses of the servers known to be llama.cpp's, in this calibre's life
MOST_SERVERS_KEPT = 64
_llama_cpp: set[str] = set()
_llama_cpp_lock = threading.Lock()


def llama_cpp_seen(address: str) -> None:
    """Remember that the server at address is llama.cpp's (MOST_SERVERS_KEPT at most)."""
    with _llama_cpp_lock:
        if address in _llama_cpp or len(_llama_cpp) < MOST_SERVERS_KEPT:
            _llama_cpp.add(address)


def is_llama_cpp(address: str) -> bool:
    """Whether the server at address is known to be llama.cpp's."""
    with _llama_cpp_lock:
        return address in _llama_cpp
