# License: GPLv3 Copyright: the Book AI developers
"""Provider errors: one type per thing that can go wrong, each told in one sentence.

str(error) is what the user reads: our sentence, then what the service itself
said. `details` keeps the rest (the HTTP status, the raw error body) for the
curious and for bug reports. No text that reaches an error may hold an API
key: the transport redacts every secret it sent before building one.
"""

load_translations()

REDACTED = '[redacted]'


def redact(text, secrets):
    """text with every secret in it replaced. Short strings are not treated as secrets."""
    if not text:
        return text
    for secret in secrets:
        if secret and len(secret) >= 6:
            text = text.replace(secret, REDACTED)
    return text


class ProviderError(Exception):

    def __init__(self, sentence, provider_message='', details='', status=None, retry_after=None):
        self.sentence = sentence
        self.provider_message = (provider_message or '').strip()
        self.details = details
        self.status = status
        self.retry_after = retry_after
        super().__init__(self.human())

    def human(self):
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


def error_for_status(status, provider, message='', code='', model='', url='', details='', retry_after=None):
    """The typed error for an HTTP error status, from what the service said about it."""
    said = f'{code} {message}'.lower()
    kw = {'provider_message': message, 'details': details, 'status': status, 'retry_after': retry_after}
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
