# License: GPLv3 Copyright: the Book AI developers
"""Provider errors: one type per thing that can go wrong, each told in one sentence.

str(error) is what the user reads: our sentence, then what the service itself
said. `details` keeps the rest (the HTTP status, the raw error body) for the
curious and for bug reports. No text that reaches an error may hold an API
key: the transport redacts every secret it sent before building one.

Secrets is the one place that knows what a secret looks like once a service
echoes it: as it is, percent-encoded, base64 (plain or url-safe, at any
offset, as inside "Basic user:pass" or "Bearer key"), and JSON-escaped.
"""

import base64
import json
import re
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import quote, quote_plus, unquote, urlsplit

load_translations()

REDACTED = '[redacted]'
SHORTEST_SECRET = 6  # shorter values are not treated as secrets: they would hide ordinary words


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


def encoded_forms(secret: str) -> set[str]:
    """secret as a service may echo it: raw, percent-encoded, base64, JSON-escaped."""
    forms = {secret, quote(secret, safe=''), quote(secret), quote_plus(secret)}
    forms |= {re.sub('%[0-9A-F]{2}', lambda m: m.group().lower(), f) for f in list(forms)}
    for ascii_only in (True, False):
        escaped = json.dumps(secret, ensure_ascii=ascii_only)[1:-1]
        forms |= {escaped, escaped.replace('/', '\\/')}
    forms.update(base64_cores(secret.encode('utf-8')))
    return forms


class Secrets:
    """The secrets of one provider (keys, passwords, header values) in every form they may come
    back in. redact() replaces each of them; longest tells how much of a stream could be the
    beginning of one."""

    def __init__(self, values: Iterable[object] = ()) -> None:
        forms = set()
        for value in values:
            if isinstance(value, str) and len(value) >= SHORTEST_SECRET:
                forms |= encoded_forms(value)
        self.forms = tuple(sorted((f for f in forms if len(f) >= SHORTEST_SECRET), key=len, reverse=True))
        self.longest = len(self.forms[0]) if self.forms else 0
        self._pattern = re.compile('|'.join(map(re.escape, self.forms))) if self.forms else None
        # what a stream may end in: the short beginnings of every form, the forms by their first 8 characters
        self._first_characters = {f[0] for f in self.forms}
        self._short_beginnings = {f[:n] for f in self.forms for n in range(1, min(len(f), 8))}
        self._by_beginning = {}
        for f in self.forms:
            self._by_beginning.setdefault(f[:8], []).append(f)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def redact(self, text: str | None) -> str | None:
        """text with every form of every secret replaced by [redacted]."""
        if not text or self._pattern is None or not isinstance(text, str):
            return text
        return self._pattern.sub(REDACTED, text)

    def redact_error(self, error: Exception) -> Exception:
        """error, changed in place to hold no secret in what it says or keeps: its sentence, the
        service's words, its details, and no chained error that could still hold one."""
        if self._pattern is None:
            return error
        if isinstance(error, ProviderError):
            error.sentence = self.redact(error.sentence)
            error.provider_message = self.redact(error.provider_message)
            error.details = self.redact(error.details)
            error.args = (error.human(),)
        else:
            error.args = tuple(self.redact(a) for a in error.args)
        error.__cause__ = error.__context__ = None
        return error

    def unfinished_start(self, text: str) -> int:
        """Where, in redacted text, the beginning of a secret may have started that the next piece
        of a stream would complete: len(text) when no tail of text begins any secret form."""
        firsts, end = self._first_characters, len(text)
        for start in range(max(0, end - self.longest + 1), end):
            if text[start] not in firsts:
                continue
            tail = text[start:]
            if end - start < 8:
                if tail in self._short_beginnings:
                    return start
            elif any(f.startswith(tail) for f in self._by_beginning.get(tail[:8], ())):
                return start
        return end


def secrets_in_url(url: str) -> list[str]:
    """The credentials written into an address (http://user:password@host/): the password, the
    user and password together, and a user given alone (a token in the user's place)."""
    try:
        parts = urlsplit(url or '')
        user, password = parts.username, parts.password
    except ValueError:
        return []
    if user is None and password is None:
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
        self.sentence = sentence
        self.provider_message = (provider_message or '').strip()
        self.details = details
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
    kw = {'provider_message': message, 'details': details, 'status': status, 'retry_after': retry_after}
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
