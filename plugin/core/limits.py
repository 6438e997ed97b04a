# License: GPLv3 Copyright: the Book AI developers
"""The bounds on what a peer (a provider's server) may send, in one place, and the
one JSON loader for peer data.

Every byte from outside is hostile until bounded: each limit below is named,
with its default and why. When one is reached, the request stops with a
sentence (built by the providers, see providers/streaming.py) and what already came
is kept. The limits are read as `limits.NAME` when used, so a test can lower
one.

load_json() is the only way peer JSON is parsed: it refuses JSON nested deeper
than MAX_JSON_DEPTH, checked in linear time before parsing, so a hostile
document can never reach Python's recursion limit.

No Qt, no calibre, no translations here: this module is also loaded on its own
by the benchmarks.
"""

import json
import re
from itertools import accumulate
from typing import Any

# The size of one streamed answer, counted in bytes as they come off the wire
# (text, reasoning and the format's overhead). A very long answer (100,000
# tokens) with one event per token is about 30 MB on the wire; an endless
# stream from a broken or hostile server would otherwise fill the memory.
MAX_ANSWER_BYTES = 64 * 1024 * 1024

# The length of one line of a stream (one SSE field or one NDJSON value), in
# characters. The largest a real service sends is the final event of OpenAI's
# Responses API, which repeats the whole answer: a few MB at most.
MAX_LINE_CHARS = 16 * 1024 * 1024

# The size of a JSON body that is read whole (a model list, an embeddings
# answer). OpenRouter's list of a few hundred models is about 1.5 MB; 64
# vectors of 4,096 numbers are about 6 MB. Parsed, JSON can take ten times its
# size in memory, so this also bounds the memory a hostile list can take.
MAX_JSON_BYTES = 16 * 1024 * 1024

# The size of an error body kept (what the service said with an error status):
# the rest is not read.
MAX_ERROR_BODY = 256 * 1024

# How deep JSON may nest (objects and arrays). Real answers nest fewer than 10
# levels; Python's parser recurses once per level.
MAX_JSON_DEPTH = 128

# The number of models kept from a model list, and the length of a model's id
# and name: a longer one is not a model anyone can choose.
MAX_MODELS = 5000
MAX_MODEL_ID_CHARS = 256
# What a model list may say about one model besides its id: a description (OpenRouter's are a
# few hundred characters, their longest about 2,000), its prices (a dozen kinds) and what it
# takes in and gives out (text, image, audio, file, video). More is cut.
MAX_MODEL_DESCRIPTION_CHARS = 4000
MAX_MODEL_PRICES = 16
MAX_MODEL_MODALITIES = 8

# The size of the cached model list on disk. MAX_MODELS models of the longest
# ids and names fit well within it; a bigger file was not written by Book AI
# and is set aside unread.
MAX_MODELS_CACHE_BYTES = 8 * 1024 * 1024

# The longest one answer may stream, in seconds, however steadily it comes. Slow
# models on a local CPU legitimately take many minutes; a server that trickles
# forever does not get to hold the request for ever. (The longest silence, the
# read timeout, is a setting of each provider.)
ANSWER_SECONDS = 60 * 60

# One image a service sends (a cover it made): its size once decoded, and the size of the JSON
# body that carries it as base64 (a third larger, plus the words around it). A 1536x1024 PNG
# from OpenAI's images API is 2 to 4 MB; a 4K image from Imagen is about 20 MB. Its width and
# height: no cover needs more than 8,192 pixels a side, and a decoder given a larger one
# would take memory in proportion to its area.
MAX_IMAGE_BYTES = 32 * 1024 * 1024
MAX_IMAGE_JSON_BYTES = MAX_IMAGE_BYTES * 4 // 3 + 1024 * 1024
MAX_IMAGE_SIDE = 8192

# The web pages one answer says it used (web search), as kept with the answer and
# shown under it (core/web_links.py): how many, the longest address, the longest
# title. A real answer names a few dozen pages at most, with addresses of a few
# hundred characters; more pages than this are left out (and counted), a longer
# address is no page anyone can open, a longer title is cut.
MAX_WEB_LINKS = 50
MAX_WEB_LINK_URL_CHARS = 2048
MAX_WEB_LINK_TITLE_CHARS = 300


class TooDeep(ValueError):
    """JSON nested deeper than the limit: not parsed."""

    def __init__(self, depth: int) -> None:
        super().__init__(f'JSON nested deeper than {depth} levels')
        self.depth = depth


class LineTooLong(ValueError):
    """A line of a stream longer than the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f'a line longer than {limit} characters')
        self.limit = limit


STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
BSTRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
NOT_BRACKET = re.compile(r'[^\[\]{}]+')
BNOT_BRACKET = re.compile(rb'[^\[\]{}]+')
STEP = [0] * 256
STEP[ord('[')] = STEP[ord('{')] = 1
STEP[ord(']')] = STEP[ord('}')] = -1


def json_depth_over(text: str | bytes, limit: int) -> bool:
    """Whether the JSON text nests deeper than limit, in time linear in its length. Brackets
    inside strings do not count."""
    if isinstance(text, str):
        if text.count('[') + text.count('{') <= limit:  # the common case, at C speed
            return False
        brackets = NOT_BRACKET.sub('', STRING.sub('', text)).encode('ascii')
    else:
        if text.count(b'[') + text.count(b'{') <= limit:
            return False
        brackets = BNOT_BRACKET.sub(b'', BSTRING.sub(b'', text))
    if brackets.count(b'[') + brackets.count(b'{') <= limit:
        return False
    return max(accumulate(map(STEP.__getitem__, brackets))) > limit


def load_json(text: str | bytes, max_depth: int | None = None) -> Any:
    """The value of a JSON document from a peer. Raises ValueError when it is not JSON, and
    TooDeep (a ValueError) when it nests deeper than max_depth (default: MAX_JSON_DEPTH)."""
    limit = MAX_JSON_DEPTH if max_depth is None else max_depth
    if json_depth_over(text, limit):
        raise TooDeep(limit)
    try:
        return json.loads(text)
    except RecursionError:  # cannot happen within the depth limit; never let it out anyway
        raise TooDeep(limit) from None
