# License: GPLv3 Copyright: the Book AI developers
"""What every case must show, whatever the entry and the attack: it ends (the watchdog did not
have to end it), in a sentence (a typed error with words, or a result that says what was left
out), within its memory bound, with nothing leaked (the key in no form in anything a reader is
told or shown, or kept), nothing run (a sentinel that code would leave is not there), nothing
shown that lies (a look-alike host, a password in an address, a number that is no count or no
money) and nothing steering the terminal (no raw control character).

problems() lists what is wrong with one variant, in words, for the test's failure."""

import json
import math
import re

from hostile import payloads as P
from hostile.isolation import Observed

MB = 1 << 20
# a floor under every memory bound: Python, calibre and a decoder's tables, and the samples of a
# process that reads a bound's worth of bytes (a piece read, a piece parsed)
MEMORY_FLOOR = 128 * MB
MEMORY_PER_BYTE = 10   # issue 26: no accepted input may cost more than about ten times its size
# an image, a book: issue 26's "within 2 s and 300 MB" for an image; the same for a book's reading
MEMORY_DOCUMENT = 300 * MB

# exceptions that are bugs reaching the reader, whatever they say: a traceback, not a sentence
BUG_TYPES = ('builtins.AttributeError', 'builtins.TypeError', 'builtins.KeyError', 'builtins.IndexError',
             'builtins.NameError', 'builtins.RecursionError', 'builtins.MemoryError', 'builtins.UnicodeDecodeError',
             'builtins.UnicodeEncodeError', 'builtins.ZeroDivisionError', 'builtins.OverflowError',
             'builtins.AssertionError', 'json.decoder.JSONDecodeError', '_pickle.UnpicklingError',
             'zlib.error', 'struct.error', 'builtins.StopIteration', 'builtins.RuntimeError',
             'builtins.NotImplementedError', 'builtins.EOFError', 'zipfile.BadZipFile', 'builtins.FileNotFoundError',
             'builtins.PermissionError', 'builtins.IsADirectoryError', 'builtins.NotADirectoryError',
             'builtins.BlockingIOError', 'builtins.ConnectionError', 'builtins.TimeoutError')
WORD = re.compile(r'[^\W\d_]{2,}')
# attacks after which silence is not enough: the reader must be told (unless the entry is quiet:
# a cache, an optional reading, which may fall back to nothing if nothing is lost)
MUST_SAY = ('oversized', 'endless', 'trickle', 'deep_json', 'not_a_file', 'damaged')


def is_sentence(text: str) -> bool:
    """Words a reader can read: four or more, no raw control character, no traceback."""
    return len(WORD.findall(text or '')) >= 4 and not P.RAW_CONTROL.search(text) and 'Traceback' not in text


def memory_bound(attack: str, size: int) -> int:
    """The most a case may take: ten times the bytes it was given, above a floor; an image or a
    book, 300 MB."""
    if attack in ('crafted_image', 'hostile_book'):
        return MEMORY_DOCUMENT
    return MEMORY_FLOOR + MEMORY_PER_BYTE * size


def problems(entry, attack: str, label: str, seen: Observed, size: int, quiet: bool) -> list[str]:
    """What is wrong with what came of one variant of an attack on an entry, in words."""
    out = []
    if seen.ended == 'hung':
        return [f'did not end: the watchdog ended it after {seen.seconds:g} s; where it was:\n{tail(seen.where)}']
    if seen.ended == 'died':
        return [f'its process died ({seen.where})']
    if seen.ended == 'memory':
        return [f'ran out of memory (a MemoryError at the cap on its address space):\n{tail(seen.where)}']
    may_raise = getattr(entry.surface, 'may_raise', ('calibre_plugins.bookai.',))
    if seen.ended == 'raised' and (seen.error_type in BUG_TYPES or not is_sentence(seen.sentence)
                                   or not seen.error_type.startswith(may_raise)):
        out.append(f'ended in a traceback, not a sentence: {seen.error_type}: {seen.sentence[:300]!r}'
                   + (f'\n{tail(seen.where, 1500)}' if seen.where else ''))
    bound = memory_bound(attack, size)
    if seen.growth > bound:
        out.append(f'took {seen.growth / MB:.0f} MB, more than its bound of {bound / MB:.0f} MB')
    told = is_sentence(seen.sentence) or seen.facts.get('left out') or seen.facts.get('whole')
    if attack in MUST_SAY and not quiet and seen.ended == 'returned' and not told:
        out.append('the reader is told nothing: it returned as if all was well' + (
            f' ({seen.facts})' if seen.facts else ''))
    if seen.facts.get('lost'):
        out.append(f'the reader lost something: {seen.facts["lost"]}')
    texts = [t for t in seen.texts() if isinstance(t, str)]
    if attack == 'key_echo':
        for t in texts:
            if how := P.leaked(t, P.KEY):
                out.append(f'the key leaks ({", ".join(how)}) in: {t[:300]!r}')
                break
        for name, content in seen.facts.get('files', {}).items():
            if how := P.leaked(content, P.KEY):
                out.append(f'the key leaks ({", ".join(how)}) into the file {name}')
    if attack in ('control_chars',):
        for t in [seen.sentence, *seen.shown]:
            if isinstance(t, str) and P.RAW_CONTROL.search(t):
                out.append(f'a raw control character reaches the reader: {t[:200]!r}')
                break
    if attack == 'urls':
        for t in texts:
            if P.PASSWORD in t:
                out.append(f'the password of an address is shown: {t[:300]!r}')
                break
        for t in [seen.sentence, *seen.shown]:
            if isinstance(t, str) and (found := P.lookalike_shown(t)):
                out.append(f'a look-alike host is shown as the host it mimics ({found[0]}), not as its punycode: '
                           f'{t[:200]!r}')
                break
    if attack == 'numbers':
        out += number_problems(seen)
    if seen.facts.get('ran'):
        out.append(f'code from outside ran: {seen.facts["ran"]}')
    return out


def number_problems(seen: Observed) -> list[str]:
    out = []
    usage = seen.facts.get('usage') or {}
    for k, v in usage.items():
        if not P.sane_number(v, 1e6 if k == 'cost' else 1e12):
            out.append(f'a usage that is no count or no money is kept: {k} = {str(v)[:40]}')
    parts = [v for v in (usage.get('cached_tokens'), usage.get('cache_write_tokens')) if v is not None]
    if parts and (not isinstance(usage.get('input_tokens'), int) or sum(parts) > usage['input_tokens']):
        out.append(f'tokens of the cache that are no part of the prompt are kept: {parts} of '
                   f'{str(usage.get("input_tokens"))[:40]}')
    bad = [v for v in seen.facts.get('numbers', []) if not finite(v)]
    if bad:
        out.append(f'numbers that are no numbers are kept: {[str(b)[:20] for b in bad[:3]]}')
    bad = [v for v in seen.facts.get('prices', []) if not P.sane_number(v, 1e6)]
    if bad:
        out.append(f'prices that are no money are kept: {[str(b)[:20] for b in bad[:3]]}')
    bad = [v for v in seen.facts.get('amounts', []) if v is not None and not (finite(v) or (
        type(v) in (int, float) and v == float('inf'))) or (v is not None and finite(v) and v < 0)]
    if bad:
        out.append(f'amounts that are no amounts are kept: {[str(b)[:20] for b in bad[:3]]}')
    for line in seen.facts.get('json_lines', []):
        try:
            json.loads(line, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        except ValueError as e:
            out.append(f'the --json output is not JSON ({e}): {line[:200]!r}')
            break
    for t in [seen.sentence, *seen.facts.get('figures', ())]:
        if isinstance(t, str) and (m := P.SHOWN_NUMBER.search(t)):
            out.append(f'a figure that is no figure is shown ({m.group()!r}): {t[:200]!r}')
            break
    return out


def finite(value: object) -> bool:
    """A number a reader's totals and rankings can use: finite, not absurd (negative allowed)."""
    try:
        return type(value) in (int, float) and math.isfinite(value) and abs(value) <= 1e15
    except OverflowError:
        return False


def tail(text: str, most: int = 4000) -> str:
    return (text or '')[-most:]
