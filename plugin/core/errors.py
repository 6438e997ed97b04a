# License: GPLv3 Copyright: the Book AI developers
"""Provider errors: one type per thing that can go wrong, each told in one sentence.

str(error) is what the user reads: our sentence, then what the service itself
said. `details` keeps the rest (the HTTP status, the raw error body) for the
curious and for bug reports. No text that reaches an error may hold an API
key: the transport redacts every secret it sent before building one.

Secrets is the one place that knows what a secret looks like once a service
echoes it, and Secrets.redacted() the one function every value a provider hands
back passes (providers/connection.py, operations.py): a secret is found

- in any case ("bearer sk-..." lower-cased in a 401, or upper-cased);
- with any of its characters, some or all, written as it is or encoded on its own:
  percent-encoded (each UTF-8 byte as %XX, upper or lower hex; %25XX when encoded
  twice; %uXXXX as JavaScript's escape(); + for a space), JSON-escaped (\\uXXXX, a
  surrogate pair past U+FFFF, \\/ and the other short escapes), \\xXX and \\u{X}, an
  HTML entity (&#D; and &#xH;, also padded to 4 digits, and the named ones HTML 5
  has, such as &sol; and &period;, and &hyphen; for '-'), so that encoding only the
  unsafe characters and encoding every byte are found alike;
- as the hex of its UTF-8 bytes (any case);
- in base64, plain or url-safe, at any offset (as inside "Basic user:pass" or "Bearer key").

Matching is linear in the text: the text is lower-cased character for character
(fold(), the same length, so a place in one is the same place in the other) and
searched with one regular expression of fixed strings, which never backtracks over
more than one secret's length. A stream that stops inside a secret, in any form,
is held back from where it may begin (unfinished_start()).
"""

import base64
import dataclasses
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, TypeVar, cast, overload
from html.entities import html5
from urllib.parse import unquote, urlsplit

from calibre_plugins.bookai.core.printable import inert, one_line

load_translations()

REDACTED = '[redacted]'
SHORTEST_SECRET = 6  # shorter values are not treated as secrets: they would hide ordinary words
LONGEST_FIELD = 64 * 1024  # Secrets.redacted(): a longer string is data (an image's base64), not words anyone reads
MOST_NESTED = 200  # Secrets.redacted(): deeper values are not looked into (JSON is limited to 128 levels)
CUT_MARK = '\u2026'  # what a text cut short ends in (core.images.said, core.web_links)

SCALARS = frozenset((int, float, bool, bytes, type(None)))  # what Secrets.redacted() gives back as it is
# the names of the characters a careless encoder writes for one that has none: '-' as the hyphen's
LOOKALIKE_NAMES = {'-': ('&hyphen;', '&dash;', '&minus;')}
# JSON's short escapes, for the characters that have one
SHORT_ESCAPES = {'"': '\\"', '\\': '\\\\', '/': '\\/', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r',
                 '\t': '\\t'}


def fold(text: str) -> str:
    """text lower-cased character for character: as long as text (str.lower() makes two of U+0130
    alone), a final sigma as any other."""
    return text.replace('\u0130', 'i').lower().replace('\u03c2', '\u03c3')


def folded_as(text: str) -> str:
    """fold(text), checked to be as long as text (character for character, so that places match)."""
    folded = fold(text)
    if len(folded) != len(text):  # not expected: fold() keeps the length
        folded = ''.join(f if len(f := fold(c)) == 1 else c for c in text)
    return folded


@lru_cache(maxsize=1)
def named_entities() -> dict[str, tuple[str, ...]]:
    """The HTML 5 named entities of each character that has any: '/' -> ('&sol;',)."""
    names: dict[str, list[str]] = {}
    for name, value in html5.items():
        if name.endswith(';') and len(value) == 1:
            names.setdefault(value, []).append('&' + name)
    return {c: tuple(n) for c, n in names.items()}


def utf8(c: str) -> bytes:
    return c.encode('utf-8', 'surrogatepass')


def cases(c: str) -> set[str]:
    """The character c as it is, lower-cased and upper-cased (when that is one character)."""
    return {v for v in (c, c.lower(), c.upper()) if len(v) == 1}


@lru_cache(maxsize=4096)
def character_forms(c: str) -> frozenset[str]:
    """Every way one character of a secret may be written in text a service sends back, folded
    (made once a character: a long token's slots share them)."""
    forms = set()
    for v in cases(c):
        cp, data = ord(v), utf8(v)
        forms |= {v, ''.join(f'%{b:02x}' for b in data), ''.join(f'%25{b:02x}' for b in data), f'%u{cp:04x}',
                  f'\\u{{{cp:x}}}', f'&#{cp};', f'&#{cp:04d};', f'&#x{cp:x};', f'&#x{cp:04x};'}
        if cp < 0x10000:
            forms.add(f'\\u{cp:04x}')
        else:
            high, low = 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)
            forms.add(f'\\u{high:04x}\\u{low:04x}')
        if cp < 0x100:
            forms.add(f'\\x{cp:02x}')
        if v in SHORT_ESCAPES:
            forms.add(SHORT_ESCAPES[v])
        if v == ' ':
            forms.add('+')
        forms.update(named_entities().get(v, ()))
        forms.update(LOOKALIKE_NAMES.get(v, ()))
    return frozenset(fold(f) for f in forms)


def base64_cores(value: bytes) -> list[str]:
    """The base64 characters that depend on value alone, wherever value sits in what was encoded:
    one run for each of the three alignments, in the standard and the url-safe alphabets."""
    cores = []
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + value).decode('ascii')
        first, end = -(-8 * offset // 6), 8 * (offset + len(value)) // 6  # characters of value's bits only
        core = encoded[first:end]
        cores += [core, core.replace('+', '-').replace('/', '_')]
    return cores


# one way a secret may be written: for each of its characters, the strings that may stand for it
Form = tuple[frozenset[str], ...]


@lru_cache(maxsize=4096)
def hex_forms(c: str) -> frozenset[str]:
    """One character of a secret as the hex of its UTF-8 bytes, in either case of the character, folded."""
    return frozenset(fold(utf8(v).hex()) for v in cases(c))


def encoded_forms(secret: str) -> list[Form]:
    """secret as a service may echo it, folded: its characters each written in any of the ways
    character_forms() knows; the hex of its UTF-8 bytes; base64 at each offset."""
    forms = [tuple(map(character_forms, secret)), tuple(map(hex_forms, secret))]
    forms += [tuple(frozenset(ch) for ch in fold(core)) for core in base64_cores(utf8(secret))]
    return [f for f in forms if sum(min(map(len, slot)) for slot in f) >= SHORTEST_SECRET]


AnError = TypeVar('AnError', bound=BaseException)


class Secrets:
    """The secrets of one provider (keys, passwords, header values) in every form they may come
    back in (encoded_forms). redact() replaces each of them; unfinished_start() tells where a
    stream may have stopped inside one; redacted() does it for every string of a value."""

    def __init__(self, values: Iterable[object] = ()) -> None:
        forms: dict[Form, None] = {}
        for value in values:
            if isinstance(value, str) and len(value) >= SHORTEST_SECRET:
                forms.update(dict.fromkeys(encoded_forms(value)))
        self.forms = tuple(forms)
        # the most characters one secret may take, in its longest form
        self.longest = max((sum(max(map(len, slot)) for slot in f) for f in self.forms), default=0)
        self._pattern: re.Pattern[str] | None = None
        self._starts: re.Pattern[str] | None = None
        self._steps = [tuple(by_first(slot) for slot in f) for f in self.forms]  # for _begins_a_secret()
        if self.forms:
            # where a form may begin: a look-ahead of its first characters lets the search skip the rest
            firsts = '(?=[' + ''.join(map(re.escape, sorted({s[0] for f in self.forms for s in f[0]}))) + '])'
            self._pattern = re.compile(firsts + '(?:' + '|'.join(
                ''.join(map(slot_pattern, f)) for f in sorted(self.forms, key=len, reverse=True)) + ')')
            # where the end of a text may be the beginning of a form: its first character whole, then
            # what may begin the second or the end; or a first character cut short at the end
            starts = [slot_pattern(f[0]) + '(?:[' + ''.join(map(re.escape, sorted({s[0] for s in f[1]}))) + r']|\Z)'
                      for f in self.forms]
            cut = {s[:n] for f in self.forms for s in f[0] for n in range(1, len(s))}
            if cut:
                starts.append('(?:' + '|'.join(map(re.escape, sorted(cut, key=len, reverse=True))) + r')\Z')
            self._starts = re.compile(firsts + '(?=' + '|'.join(starts) + ')')

    def __bool__(self) -> bool:
        return self._pattern is not None

    @overload
    def redact(self, text: str) -> str: ...
    @overload
    def redact(self, text: None) -> None: ...

    def redact(self, text: str | None) -> str | None:
        """text with every form of every secret replaced by [redacted]."""
        if not text or self._pattern is None or not isinstance(text, str):
            return text
        return self._replaced(text, folded_as(text))

    def _replaced(self, text: str, folded: str) -> str:
        parts: list[str] = []
        at = 0
        if self._pattern is None:  # not reached: the callers look first
            return text
        for m in self._pattern.finditer(folded):
            parts += [text[at:m.start()], REDACTED]
            at = m.end()
        if not parts:
            return text
        parts.append(text[at:])
        return ''.join(parts)

    @overload
    def redact_field(self, text: str) -> str: ...
    @overload
    def redact_field(self, text: None) -> None: ...

    def redact_field(self, text: str | None) -> str | None:
        """A whole text as it leaves (a name, a message, a field; not a piece of a stream): redact(),
        and, since it may have been cut short inside a secret, an end (before a final …) made of
        the first SHORTEST_SECRET or more characters of a secret replaced too."""
        if not text or self._pattern is None or not isinstance(text, str):
            return text
        folded = folded_as(text)
        # nowhere could a secret begin: the one search most texts take
        if self._starts is None or self._starts.search(folded) is None:
            return text
        text = self._replaced(text, folded)
        body = text[:-1] if text.endswith(CUT_MARK) else text
        start = self.unfinished_start(body)
        if len(body) - start >= SHORTEST_SECRET:
            return body[:start] + REDACTED + text[len(body):]
        return text

    def redacted(self, value: object, longest: int = LONGEST_FIELD, depth: int = 0) -> object:
        """value with no secret in any string it holds: a string (redact_field()), the strings of a
        tuple, a list or a dict (its keys too) and the fields of a dataclass, at any depth up to
        MOST_NESTED; an error through redact_error(). A string longer than longest is left as it is
        (data, such as an image's base64, which nobody reads as text). What holds no secret is
        given back as it is, the same object."""
        if self._pattern is None:
            return value
        kind = type(value)
        if kind is str:
            text = cast(str, value)
            return text if not SHORTEST_SECRET <= len(text) <= longest else self.redact_field(text)
        if kind in SCALARS or depth > MOST_NESTED:
            return value
        if isinstance(value, BaseException):
            return self.redact_error(value)
        if kind is list or kind is tuple:
            sequence = cast('list[object] | tuple[object, ...]', value)
            items: list[object] | None = None  # made only once something changed: most values hold no secret
            for i, item in enumerate(sequence):
                new = item if type(item) in SCALARS else self.redacted(item, longest, depth + 1)
                if items is None and new is not item:
                    items = list(sequence[:i])
                if items is not None:
                    items.append(new)
            return value if items is None else cast(Any, kind)(items)
        if kind is dict:
            mapping = cast('dict[object, object]', value)
            pairs: list[tuple[object, object]] | None = None
            for i, (k, v) in enumerate(mapping.items()):
                new_k, new_v = self.redacted(k, longest, depth + 1), self.redacted(v, longest, depth + 1)
                if pairs is None and (new_k is not k or new_v is not v):
                    pairs = list(mapping.items())[:i]
                if pairs is not None:
                    pairs.append((new_k, new_v))
            return value if pairs is None else dict(pairs)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes: dict[str, object] = {}
            for f in dataclasses.fields(value):
                if f.init:
                    old = getattr(value, f.name)
                    new = self.redacted(old, longest, depth + 1)
                    if new is not old:
                        changes[f.name] = new
            return dataclasses.replace(value, **changes) if changes else value
        return value

    def redact_error(self, error: AnError) -> AnError:
        """error, changed in place to hold no secret in what it says or keeps: its sentence, the
        service's words, its details, and no chained error that could still hold one."""
        if self._pattern is None:
            return error
        if isinstance(error, ProviderError):
            error.sentence = self.redact_field(error.sentence)
            error.provider_message = self.redact_field(error.provider_message)
            error.details = self.redact_field(error.details)
            error.args = (error.human(),)
        else:
            error.args = tuple(self.redact_field(a) if isinstance(a, str) else a for a in error.args)
        error.__cause__ = error.__context__ = None
        return error

    def unfinished_start(self, text: str) -> int:
        """Where, in redacted text, the beginning of a secret may have started that the next piece
        of a stream would complete: len(text) when no end of text begins any form of a secret."""
        end = len(text)
        if self._starts is None or not text:
            return end
        offset = max(0, end - self.longest + 1)
        window = fold(text[offset:])
        for m in self._starts.finditer(window):
            if self._begins_a_secret(window, m.start()):
                return offset + m.start()
        return end

    def _begins_a_secret(self, text: str, start: int) -> bool:
        """Whether text from start to its end is the beginning of a form of a secret (not all of
        it): every way through each form at once, so never more steps than characters times forms."""
        end = len(text)
        for steps in self._steps:
            if text[start] not in steps[0]:
                continue
            places = {start}
            for step in steps:
                reached = set()
                for at in places:
                    if at == end:
                        return True
                    for s in step.get(text[at], ()):
                        if at + len(s) > end:
                            if s.startswith(text[at:]):
                                return True
                        elif text.startswith(s, at):
                            reached.add(at + len(s))
                if not reached:
                    break
                places = reached
        return False


@lru_cache(maxsize=4096)
def slot_pattern(slot: frozenset[str]) -> str:
    """The regular expression for one character of a form: any of its strings, the longest first."""
    if len(slot) == 1:
        return re.escape(next(iter(slot)))
    return '(?:' + '|'.join(re.escape(s) for s in sorted(slot, key=lambda s: (-len(s), s))) + ')'


@lru_cache(maxsize=4096)
def by_first(slot: frozenset[str]) -> dict[str, tuple[str, ...]]:
    """The strings of slot by their first character."""
    found: dict[str, list[str]] = {}
    for s in slot:
        found.setdefault(s[0], []).append(s)
    return {c: tuple(strings) for c, strings in found.items()}


def secrets_in_url(url: str) -> list[str]:
    """The credentials written into an address (http://user:password@host/): the password, the
    user and password together, and a user given alone (a token in the user's place)."""
    try:
        parts = urlsplit(url or '')
        user, password = parts.username, parts.password
    except ValueError:
        return []
    if user is None:  # and so is password: a password comes only after a user, even an empty one
        return []
    userinfo = parts.netloc.rpartition('@')[0]
    if password is None:
        return [user, unquote(user), userinfo]
    return [password, unquote(password), userinfo, f'{unquote(user)}:{unquote(password)}']


USERINFO = re.compile(r'(?<=://)[^/?#]*@')  # the user:password@ of an address, also one that does not parse


def without_userinfo(url: str, mark: str = '') -> str:
    """url with any user:password@ taken out (or replaced by mark + '@'), as it may be shown or kept."""
    return USERINFO.sub(mark + '@' if mark else '', url or '')


def secrets_in_header(value: str) -> list[str]:
    """The secret parts of a header value the user set: the value, the token after a scheme
    ("Bearer token"), and for Basic the user:password it encodes, and the password."""
    value = str(value).strip()
    found = [value]
    scheme, _sep, token = value.partition(' ')
    token = token.strip()
    if token:
        found.append(token)
        if scheme.lower() == 'basic':
            try:
                pair = base64.b64decode(token, validate=True).decode('utf-8')
            except ValueError:
                pair = ''
            if pair:
                found += [pair, pair.partition(':')[2]]
    return found


@lru_cache(maxsize=64)
def secrets_of(values: tuple) -> Secrets:
    """The Secrets of values, made once for the same values."""
    return Secrets(values)


@overload
def redact(text: str, secrets: Secrets | Iterable[str]) -> str: ...
@overload
def redact(text: None, secrets: Secrets | Iterable[str]) -> None: ...


def redact(text: str | None, secrets: Secrets | Iterable[str]) -> str | None:
    """text with every secret in it replaced, in every form it may take (see Secrets).
    secrets: a Secrets, or the values themselves. Short strings are not treated as secrets."""
    if not text:
        return text
    if not isinstance(secrets, Secrets):
        secrets = secrets_of(tuple(secrets))
    return secrets.redact(text)


class ProviderError(Exception):

    def __init__(self, sentence: str, provider_message: str = '', details: str = '', status: int | None = None,
                 retry_after: float | None = None) -> None:
        # every word of it may be shown, on the command line too: nothing in it obeyed (core/printable.py)
        self.sentence = inert(sentence)
        self.provider_message = one_line(provider_message or '')
        self.details = inert(details)
        self.status = status
        self.retry_after = retry_after
        super().__init__(self.human())

    def human(self) -> str:
        """What the user reads: our sentence, then what the service said, when it adds anything."""
        if self.provider_message and self.provider_message not in self.sentence:
            return _('{sentence} The service said: {message}').format(
                sentence=self.sentence, message=self.provider_message)
        return self.sentence


class MissingKey(ProviderError):
    pass


class AuthenticationFailed(ProviderError):
    pass


class NoCredit(ProviderError):
    pass


class ModelNotFound(ProviderError):
    pass


class NotFound(ProviderError):
    pass


class ContextTooLong(ProviderError):
    pass


class RateLimited(ProviderError):
    pass


class ServiceUnavailable(ProviderError):
    pass


class BadRequest(ProviderError):
    pass


class Unreachable(ProviderError):
    pass


class TLSFailure(ProviderError):
    pass


class TimedOut(ProviderError):
    pass


class ConnectionLost(ProviderError):
    pass


class ProtocolError(ProviderError):
    pass


class TooLarge(ProtocolError):
    """The service sent more than a limit of core.limits allows: an answer, a line, a body."""


class RedirectRefused(ProviderError):
    pass


class PromptBlocked(ProviderError):
    pass


class ResultBlocked(ProviderError):
    pass


class NotConfigured(ProviderError):
    pass


CONTEXT_HINTS = ('context length', 'context_length', 'context window', 'context size', 'maximum context', 'too long',
                 'exceed_context_size', 'exceeds the context', 'too many tokens', 'prompt is too long',
                 'input length', 'reduce the length')
CREDIT_HINTS = ('insufficient_quota', 'quota', 'credit', 'billing', 'balance', 'payment')
# what a service says when its safety system refused the request (OpenAI's images API:
# moderation_blocked, and content_policy_violation for DALL-E; Azure: content_filter; OpenRouter:
# 403 "your input was flagged"; Imagen: "violate Google's Responsible AI practices")
SAFETY_HINTS = ('moderation_blocked', 'content_policy_violation', 'content_policy', 'content_filter',
                'safety system', 'safety_violation', 'content moderation', 'requires moderation', 'flagged',
                'responsible ai')
SAFETY_STATUSES = (400, 403, 422)


def error_for_status(status: int, provider: str, message: str = '', code: str = '', model: str = '', url: str = '',
                     details: str = '', retry_after: float | None = None) -> ProviderError:
    """The typed error for an HTTP error status, from what the service said about it."""
    said = f'{code} {message}'.lower()
    kw: dict[str, Any] = {'provider_message': message, 'details': details, 'status': status, 'retry_after': retry_after}
    if status in SAFETY_STATUSES and any(h in said for h in SAFETY_HINTS):
        return PromptBlocked(_('{provider} refused the request for safety reasons.').format(provider=provider), **kw)
    if status in (401, 403):
        return AuthenticationFailed(_('{provider} refused the API key (HTTP {status}). Check the key in '
                                      'the settings.').format(provider=provider, status=status), **kw)
    if status == 402 or (status in (400, 429) and any(h in said for h in CREDIT_HINTS)):
        return NoCredit(_('Your {provider} account has no credit left, or its quota is used up.').format(
            provider=provider), **kw)
    if status == 429:
        return RateLimited(_('{provider} is getting too many requests. Wait a little, then retry.').format(
            provider=provider), **kw)
    if any(h in said for h in CONTEXT_HINTS) and status in (400, 413, 422, 500):
        return ContextTooLong(_('The conversation is too long for the model. Start a new chat, or send '
                                'less text.'), **kw)
    if status == 404:
        if 'model' in said or not url:
            return ModelNotFound(_('{provider} does not offer the model "{model}".').format(
                provider=provider, model=model or '?'), **kw)
        return NotFound(_('Nothing answers at {url}: check the address in the settings.').format(url=url), **kw)
    if status in (408, 504):
        return TimedOut(_('{provider} took too long to answer (HTTP {status}).').format(
            provider=provider, status=status), **kw)
    if status >= 500:
        return ServiceUnavailable(_('{provider} has a problem on its side (HTTP {status}). Try again '
                                    'later.').format(provider=provider, status=status), **kw)
    return BadRequest(_('{provider} did not accept the request (HTTP {status}).').format(
        provider=provider, status=status), **kw)
