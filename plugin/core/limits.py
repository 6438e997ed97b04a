# License: GPLv3 Copyright: the Book AI developers
"""The bounds on what a peer (a provider's server) may send, in one place, and the
one JSON loader for peer data.

Every byte from outside is hostile until bounded: each limit below is named,
with its default and why. When one is reached, the request stops with a
sentence (built by the providers, see providers/streaming.py) and what already came
is kept. The limits are read as `limits.NAME` when used, so a test can lower
one.

load_json() is the only way JSON from a peer or a file is parsed: before parsing,
in time linear in its length and at C speed, it refuses JSON nested deeper than
MAX_JSON_DEPTH (TooDeep), so that a hostile document never reaches Python's
recursion limit, and JSON whose values would take more than JSON_MEMORY_PER_BYTE
times its size in memory (TooManyValues: its cost estimated from what it holds, by
the COST_OF_ figures), so that a few megabytes of empty objects cannot take
gigabytes.

No Qt, no calibre, no translations here: this module is also loaded on its own
by the benchmarks.
"""

import json
import re
from collections.abc import Callable
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
# vectors of 4,096 numbers are about 6 MB. Parsed, JSON may take no more than
# JSON_MEMORY_PER_BYTE (10) times its size in memory (load_json), so this also
# bounds the memory a hostile list can take: about 160 MB.
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

# The size of one conversation's file in the History (conversation/history.py), read whole. A
# long conversation of a hundred long answers is a few MB; a larger file was not written by
# Book AI and is not read (nor set aside: it is left as it is).
MAX_CONVERSATION_BYTES = 64 * 1024 * 1024

# The longest one answer may stream, in seconds, however steadily it comes. Slow
# models on a local CPU legitimately take many minutes; a server that trickles
# forever does not get to hold the request for ever. (The longest silence, the
# read timeout, is a setting of each provider.)
ANSWER_SECONDS = 60 * 60

# How long a question waits, at most, to learn the context window of the model from the service
# (llama.cpp's /props, Ollama's /api/show, LM Studio's model list): for the connection, then for
# each read. A server slower than that is taken not to say, and the window is unknown.
CONTEXT_LOOKUP_SECONDS = 15.0

# One image a service sends (a cover it made): its size once decoded, and the size of the JSON
# body that carries it as base64 (a third larger, plus the words around it). A 1536x1024 PNG
# from OpenAI's images API is 2 to 4 MB; a 4K image from Imagen is about 20 MB. Its width and
# height: no cover needs more than 8,192 pixels a side, and a decoder given a larger one
# would take memory in proportion to its area.
MAX_IMAGE_BYTES = 32 * 1024 * 1024
MAX_IMAGE_JSON_BYTES = MAX_IMAGE_BYTES * 4 // 3 + 1024 * 1024
MAX_IMAGE_SIDE = 8192
# What the JSON of an image answer may take in memory, times its size (as JSON_MEMORY_PER_BYTE,
# below, but tighter): such an answer is one long string of base64 and a few words (estimated at
# 2.6 times its size; measured 2x), and many covers are asked for at once (covers/bulk.py).
IMAGE_JSON_MEMORY_PER_BYTE = 4

# The web pages one answer says it used (web search), as kept with the answer and
# shown under it (core/web_links.py): how many, the longest address, the longest
# title. A real answer names a few dozen pages at most, with addresses of a few
# hundred characters; more pages than this are left out (and counted), a longer
# address is no page anyone can open, a longer title is cut.
MAX_WEB_LINKS = 50
MAX_WEB_LINK_URL_CHARS = 2048
MAX_WEB_LINK_TITLE_CHARS = 300


class TooComplex(ValueError):
    """JSON whose structure is beyond its bounds: nested too deep (TooDeep), or holding more
    values than its size allows (TooManyValues). Not parsed."""


class TooDeep(TooComplex):
    """JSON nested deeper than the limit: not parsed."""

    def __init__(self, depth: int) -> None:
        super().__init__(f'JSON nested deeper than {depth} levels')
        self.depth = depth


class TooManyValues(TooComplex):
    """JSON holding more values than its size allows: parsed, it would take more than per_byte
    (JSON_MEMORY_PER_BYTE unless said otherwise) times its size in memory. Not parsed."""

    def __init__(self, size: int, estimate: int, per_byte: float) -> None:
        super().__init__(f'JSON of {size} bytes holding values that would take about {estimate} bytes of memory, '
                         f'more than {per_byte:g} times its size')
        self.size = size
        self.estimate = estimate
        self.per_byte = per_byte


class LineTooLong(ValueError):
    """A line of a stream longer than the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f'a line longer than {limit} characters')
        self.limit = limit


# What a document of JSON will cost Python, estimated from what its text holds, in bytes: the
# most CPython 3.11, 3.13 and 3.14 were measured to take (tracemalloc's peak during json.loads,
# on some fifty shapes: empty and one-member objects, nested lists, short, distinct, escaped and
# wide strings, distinct keys of every width, numbers, literals) for each thing counted. A
# document that parses into Python objects takes far more memory than its text: the dict of
# `{}` takes 72 bytes (for 3 bytes of text with its comma), `{"a":0}` about 190, a float 32.
COST_OF_OBJECT = 184     # a dict, with the table of its first five members
COST_OF_ARRAY = 92       # a list, with room for its first items
COST_OF_ITEM = 36        # a value after a comma: its place in its list, and a number (floats and ints: 32)
COST_OF_MEMBER = 4       # a member of an object (after the room its dict had at first)
COST_OF_STRING = 52      # a string that is not a key: its header
COST_OF_KEY = 132        # a key not seen before in the document: its string, and json's memo of it
SAVED_BY_LITERAL = 28    # true, false and null are shared objects: no number to make
COST_OF_CHARACTER = 0.5  # every character of the text (numbers' digits, white space, the rest)
COST_OF_DECODING = 1.1   # bytes decoded to text first: per character, times its width (1, 2 or 4 bytes)
COST_OF_CONTENT = 1      # a character inside a string, times the widest character a string may hold
COST_OF_ESCAPES = 0.6    # the same again when strings hold escapes (json builds those in steps)
# the most one character can cost, whatever it is: a document shorter than JSON_MEMORY_FLOOR
# divided by this is read without counting
MOST_PER_CHARACTER = (COST_OF_CHARACTER + 4 * (COST_OF_DECODING + COST_OF_CONTENT + COST_OF_ESCAPES) +
                      max(COST_OF_OBJECT, COST_OF_ARRAY, COST_OF_ITEM, COST_OF_MEMBER + COST_OF_KEY, COST_OF_STRING))

# What parsed JSON from a peer or a file may take in memory: JSON_MEMORY_PER_BYTE times the size
# of its text, plus JSON_MEMORY_FLOOR (so that a small document of any shape is read: events of
# a stream are a few hundred bytes). load_json() refuses a document whose estimated cost (the
# COST_OF_ figures above, counted at C speed before parsing) is larger, so no accepted document
# takes more than about 10 times its size in memory. Real answers are estimated at: OpenRouter's
# model list 7.5x (measured 4.4x), Venice's 6x (4.1x), embeddings of 64 vectors of 4,096 numbers
# 3 to 4.5x (to 7x with 3-digit numbers), a 30 MB image in base64 2.6x (2x).
JSON_MEMORY_PER_BYTE = 10
JSON_MEMORY_FLOOR = 1024 * 1024

# The text of a string, as the checks below find it: to its closing quote, or to the end of the
# text when it has none, so that every quote starts a match and the search stays linear.
STRING = re.compile(r'"[^"\\]*(?:\\[\s\S][^"\\]*)*(?:"|\\?\Z)')
KEY = re.compile(r'"([^"\\]*(?:\\[\s\S][^"\\]*)*)(?:"|\\?\Z)(\s*:)?')
ASTRAL = re.compile('[\U00010000-\U0010ffff]')
WIDE = re.compile('[\u0100-\uffff]')
ESCAPED_ASTRAL = re.compile(r'\\u[dD][89abAB]')
ESCAPED_WIDE = re.compile(r'\\u(?!00)')
# What taking the strings out of a text takes, per quote (the list of the pieces between them)
COST_OF_STRIPPING = 40
BRACKETS_ONLY = bytes(c for c in range(256) if c not in b'[]{}')
STEP = [0] * 256
STEP[ord('[')] = STEP[ord('{')] = 1
STEP[ord(']')] = STEP[ord('}')] = -1
DEPTH_PIECE = 1 << 20  # brackets walked at a time, so that no one step holds Python's lock long
DEPTH_PREFIX = 1 << 16  # characters looked at to tell a deep document from a merely large one


def widest(text: str) -> int:
    """The bytes each character of text takes in Python's memory: 1, 2 or 4 (the widest it holds)."""
    if text.isascii():
        return 1
    if ASTRAL.search(text):
        return 4
    return 2 if WIDE.search(text) else 1


def json_text(text: str | bytes) -> str:
    """JSON as text, decoded as json.loads() decodes bytes (UTF-8, -16 or -32, by its first bytes).
    Raises ValueError (UnicodeDecodeError) when it is not in any of them."""
    if isinstance(text, str):
        return text
    return text.decode(json.detect_encoding(text), 'surrogatepass')


def json_cost(text: str, size: int | None = None, decoded: bool = False, outside: str | None = None,
              strings: int = 0, most: float | None = None, width: int | None = None) -> float:
    """What parsing the JSON text will take in memory, in bytes, at most (the COST_OF_ figures),
    counted in linear time at C speed. size: of the document as it came (its bytes); decoded:
    whether it came as bytes (json.loads decodes them first). Without outside, from the counts
    in the whole text, strings and all (never below the real figure); with outside (text with its
    `strings` strings taken out, STRING.subn), from what is outside them. most: the budget; the
    keys, which cost only the first time each is seen, are told apart only when it matters,
    counting no further than that. width: widest(text), when known."""
    size = len(text) if size is None else size
    chars = len(text)
    width = widest(text) if width is None else width
    content_width = width
    if '\\u' in text:
        content_width = 4 if ESCAPED_ASTRAL.search(text) else max(width, 2 if ESCAPED_WIDE.search(text) else 1)
    per_content = COST_OF_CONTENT + (COST_OF_ESCAPES if '\\' in text else 0)
    base = COST_OF_CHARACTER * size + (COST_OF_DECODING * chars * width if decoded else 0)
    if outside is None:
        objects, arrays, commas, colons, quotes = (text.count(c) for c in '{[,:"')
        return (base + per_content * chars * content_width + COST_OF_OBJECT * objects + COST_OF_ARRAY * arrays +
                COST_OF_ITEM * commas + (COST_OF_MEMBER + COST_OF_KEY) * colons + COST_OF_STRING * (quotes + 1) // 2)
    content = max(chars - len(outside) - 2 * strings, 0)
    objects, arrays, commas, colons = (outside.count(c) for c in '{[,:')
    estimate = (base + per_content * content * content_width + COST_OF_OBJECT * objects + COST_OF_ARRAY * arrays +
                COST_OF_ITEM * commas + COST_OF_MEMBER * colons + COST_OF_STRING * max(strings - colons, 0))
    if most is not None and estimate + COST_OF_KEY * colons <= most:
        return estimate + COST_OF_KEY * colons
    literals = min(outside.count('true') + outside.count('false') + outside.count('null'),
                   objects + arrays + commas + colons)  # outside strings, only values can spell them
    estimate -= SAVED_BY_LITERAL * literals
    if most is None or estimate + COST_OF_KEY * colons <= most or estimate > most:
        return estimate + COST_OF_KEY * colons
    return estimate + COST_OF_KEY * distinct_keys(text, int((most - estimate) // COST_OF_KEY) + 1)


def json_memory(text: str | bytes) -> float:
    """What parsing the JSON text takes in memory at most, in bytes, as load_json() estimates it
    (json_cost, outside its strings, each key counted once): for the tests and the benchmarks."""
    size, decoded = len(text), isinstance(text, bytes)
    text = json_text(text)
    outside, strings = STRING.subn('', text)
    with_every_key = json_cost(text, size, decoded, outside, strings)
    return json_cost(text, size, decoded, outside, strings, most=with_every_key - 0.5)


def distinct_keys(text: str, most: int) -> int:
    """How many different keys the JSON text names, counting no further than most. Keys are
    compared as written: two spellings of one key count twice."""
    seen = set()
    for m in KEY.finditer(text):
        if m.group(2) is not None:
            seen.add(m.group(1))
            if len(seen) >= most:
                break
    return len(seen)


def depth_over(outside: str, limit: int) -> bool:
    """Whether the brackets of outside (JSON with its strings taken out) nest deeper than limit:
    linear, at C speed but for one short step per bracket, a piece at a time."""
    if outside.count('[') + outside.count('{') <= limit:
        return False
    brackets = outside.encode('ascii', 'ignore').translate(None, BRACKETS_ONLY)
    level = 0
    for start in range(0, len(brackets), DEPTH_PIECE):
        piece = brackets[start:start + DEPTH_PIECE]
        if max(accumulate(map(STEP.__getitem__, piece), initial=level)) > limit:
            return True
        level += piece.count(b'[') + piece.count(b'{') - piece.count(b']') - piece.count(b'}')
    return False


def json_depth_over(text: str | bytes, limit: int) -> bool:
    """Whether the JSON text nests deeper than limit, in time linear in its length. Brackets
    inside strings do not count."""
    if isinstance(text, bytes):
        text = text.decode('latin-1')  # brackets and quotes are single bytes in UTF-8: where they are is kept
    if text.count('[') + text.count('{') <= limit:  # the common case
        return False
    return depth_over(STRING.sub('', text), limit)


def check_json(text: str, size: int, decoded: bool, max_depth: int, per_byte: float) -> None:
    """Raises TooDeep when the JSON text nests deeper than max_depth, TooManyValues when it is
    estimated (json_cost) to take more than per_byte times its size (plus JSON_MEMORY_FLOOR) in
    memory parsed: both found in linear time, at C speed, before parsing. size and decoded: as
    json_cost's."""
    budget = per_byte * size + JSON_MEMORY_FLOOR
    shallow = text.count('[') + text.count('{') <= max_depth
    if shallow and size * MOST_PER_CHARACTER <= budget:
        return  # the commonest case, a stream's event: too short to cost more, whatever it holds
    width = widest(text)
    estimate = json_cost(text, size, decoded, width=width)
    if estimate <= budget and shallow:
        return  # the common case: the counts alone show it
    outside, strings = None, 0
    if COST_OF_STRIPPING * text.count('"') + 2 * len(text) * width <= budget:  # what taking the strings out takes
        outside, strings = STRING.subn('', text)
        estimate = json_cost(text, size, decoded, outside, strings, budget, width)
    if estimate > budget or outside is None:  # outside None: more strings than can be told apart in its budget
        # said as nested too deep when it is, near its beginning (where a deep document is deep)
        if json_depth_over(text[:DEPTH_PREFIX], max_depth):
            raise TooDeep(max_depth)
        raise TooManyValues(size, int(estimate), per_byte)
    if depth_over(outside, max_depth):
        raise TooDeep(max_depth)


def load_json(text: str | bytes, max_depth: int | None = None, memory_per_byte: float | None = None,
              object_hook: Callable[[dict], Any] | None = None) -> Any:
    """The value of a JSON document from a peer or a file, bounded in structure before it is
    parsed: nested no deeper than max_depth (default: MAX_JSON_DEPTH), or TooDeep; estimated
    (json_cost) to take no more than memory_per_byte (default: JSON_MEMORY_PER_BYTE) times its
    size in memory, plus JSON_MEMORY_FLOOR, or TooManyValues. Both are checked in time linear in
    its length (check_json). Raises ValueError when it is not JSON (TooDeep and TooManyValues are
    ValueErrors too: TooComplex). object_hook: as json.loads'."""
    limit = MAX_JSON_DEPTH if max_depth is None else max_depth
    per_byte = JSON_MEMORY_PER_BYTE if memory_per_byte is None else memory_per_byte
    size, decoded = len(text), isinstance(text, bytes)
    text = json_text(text)
    check_json(text, size, decoded, limit, per_byte)
    try:
        return json.loads(text, object_hook=object_hook)
    except RecursionError:  # cannot happen within the depth limit; never let it out anyway
        raise TooDeep(limit) from None


def json_in(text: str, openers: str = '{') -> Any:
    """The JSON value a model wrote in text, whatever it wrote around it (words, a code fence): from
    the first of openers ('{', '[' or both) to the last bracket that closes it, read by load_json;
    None when there is none, or it does not read."""
    starts = [i for i in (text.find(c) for c in openers) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    end = text.rfind('}' if text[start] == '{' else ']')
    try:
        return load_json(text[start:end + 1]) if start < end else None
    except ValueError:
        return None
