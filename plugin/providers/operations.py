# License: GPLv3 Copyright: the Book AI developers
"""What a provider does, the same for every service, one class a job: answering a conversation
(Answering: text_chat), embeddings (Embedding), images (ImageMaking) and the model list
(ModelList). Each speaks through the provider's wire format (providers/base.py), its
`config` and its `connection`, and never knows which service it serves.

Everything given back leaves with none of the provider's secrets in it: text_chat's chunks go
through redacted_stream() (providers/streaming.py); images, model lists and errors through
Connection.redacted().
"""

import json
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.errors import ConnectionLost, NotConfigured, ProtocolError, ProviderError
from calibre_plugins.bookai.core.images import Image, ImageAddress, ImageResult
from calibre_plugins.bookai.core.messages import Chunk, Delta, Done, Failed, Message, Tool, Usage
from calibre_plugins.bookai.providers import pricing
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.context import ContextWindow, refused_below, table_window, window_tokens
from calibre_plugins.bookai.providers.models import (
    Model, cache_path, first_items, kept_models, read_models_cache, write_models_cache,
)
from calibre_plugins.bookai.providers.streaming import (
    StreamState, progressing, redacted_stream, too_complex, too_large,
)

if TYPE_CHECKING:
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

EMBED_BATCH = 64  # texts per embeddings request

# The largest number an embedding may hold: real ones are a few units at most (most are normalized to
# length 1); a larger one (1e308) would overflow the similarities, and NaN compares as nothing.
MOST_EMBEDDING_VALUE = 1e6

MOST_WINDOWS_KEPT = 64  # context windows a provider keeps learned, one per model asked about


class Operation:
    """What every operation holds: its provider (the wire format), that provider's connection, and
    its name as the reader sees it. Made when asked for (AIProviderPlugin.answering...), not kept."""

    def __init__(self, provider: 'AIProviderPlugin'):
        self.provider = provider
        self.connection = provider.connection
        self.name = provider.display_name


class Answering(Operation):
    """One answer to a conversation, streamed."""

    def text_chat(self, messages: Iterable[Message], use_model: str = '', cancel: CancelToken | None = None,
                  max_tokens: int | None = None, schema: dict | None = None,
                  tools: Sequence[Tool] = ()) -> Iterator[Chunk]:
        """Send the conversation; yield TextDelta and ReasoningDelta chunks as the answer
        streams, then one Done (finish_reason 'cancelled' after Stop) or one Failed.
        Never raises; nothing it yields holds a secret of the provider's. schema: the answer
        asked for as JSON of that shape, where the service can be asked (provider.structured()).
        tools: what the model may call (provider.with_tools()); its calls come in the Done."""
        return redacted_stream(self.streamed(messages, use_model, cancel or CancelToken(), max_tokens, schema,
                                             tuple(tools)),
                               self.connection.known_secrets)

    def streamed(self, messages: Iterable[Message], use_model: str, cancel: CancelToken,
                 max_tokens: int | None, schema: dict | None = None,
                 tools: tuple[Tool, ...] = ()) -> Iterator[Chunk]:
        p, state, model = self.provider, StreamState(tools_offered=bool(tools)), use_model
        try:
            p.config.check_setup()
            model = use_model or p.choose_model(cancel=cancel)
            state.model = model
            p.prepare_chat(model, cancel)
            request = p.chat_request(list(messages), model, max_tokens)
            if schema is not None:
                request = p.structured(request, schema, str(schema.get('title') or 'answer'))
            if tools:
                request = p.with_tools(request, tools)
            response = self.connection.open(request, model, cancel)
            try:
                yield from progressing(self.answer_chunks(self.connection.events(response), state), response)
                response.finish()  # read the stream's end, so that the connection can be kept
            finally:
                response.close()  # unless finish() kept it
            if not state.finished:
                raise ConnectionLost(_('{provider} stopped sending before the answer was complete.').format(
                    provider=self.name))
        except Cancelled:
            yield self.done(state, model, 'cancelled')
            return
        except ProviderError as e:
            yield Failed(e)
            return
        except Exception as e:  # a bug of ours must still reach the user as a message, not a crash
            scrub = self.connection.scrub
            yield Failed(ProtocolError(_('{provider}: unexpected problem: {error}').format(
                provider=self.name, error=scrub(f'{type(e).__name__}: {e}')), details=scrub(traceback.format_exc())))
            return
        yield self.done(state, model, state.finish_reason or 'stop')

    def done(self, state: StreamState, model: str, finish_reason: str) -> Done:
        """The Done chunk for what the stream told, finished as finish_reason says."""
        return Done(model=state.model or model, finish_reason=finish_reason, usage=self.costed(state),
                    web_links=tuple(state.web_links), response_id=state.response_id,
                    reasoning_details=tuple(state.reasoning_details), tool_calls=state.tool_calls.finished())

    def costed(self, state: StreamState) -> Usage:
        """The usage the stream told, with its estimated cost when the service told none."""
        u = state.usage
        if u.cost is None:
            estimate = self.provider.estimate_cost(state.model, u)
            if estimate is not None:
                return replace(u, cost=estimate)
        return u

    def answer_chunks(self, events: Iterator, state: StreamState) -> Iterator[Delta]:
        """read_stream(), for a service that may send JSON of any shape: each provider reads
        the shape its format documents, and anything else is the service breaking the format,
        told as such (a ProtocolError), not as a bug of ours."""
        try:
            for chunk in self.provider.read_stream(events, state):
                if not isinstance(chunk.text, str):
                    raise TypeError(f'{type(chunk.text).__name__} where text was expected')
                yield chunk
        except (AttributeError, TypeError, KeyError, IndexError, ValueError) as e:
            raise ProtocolError(_('{provider} sent something that is not a valid answer stream.').format(
                provider=self.name), details=self.connection.scrub(f'{type(e).__name__}: {e}')) from None
        finally:
            state.checked()


class Embedding(Operation):
    """Vectors for texts, for ranking passages by meaning."""

    def model(self, cancel: CancelToken | None = None) -> str:
        """The model that makes embeddings: as set, else the provider's default, else the chat model."""
        p = self.provider
        return ((p.config.option('embedding_model') or '').strip() or p.default_embedding_model
                or p.choose_model(cancel=cancel))

    def embed(self, texts: Iterable[str], model: str = '', cancel: CancelToken | None = None,
              progress: Callable[[int, int], None] | None = None) -> list[list[float]]:
        """A vector (a list of floats) for each of texts, in order, asked EMBED_BATCH texts per
        request; progress(done, total), when given, after each request. Raises a ProviderError
        with what the service said (with no secret in it), or Cancelled on Stop (looked at before
        each request)."""
        try:
            return self.vectors(list(texts), model, cancel or CancelToken(), progress)
        except ProviderError as e:
            raise self.connection.known_secrets.redact_error(e) from None

    def vectors(self, texts: list[str], model: str, cancel: CancelToken,
                progress: Callable[[int, int], None] | None) -> list[list[float]]:
        p = self.provider
        if not p.capabilities & Capability.EMBEDDINGS:
            raise NotConfigured(_('{provider} offers no embeddings to rank passages by meaning.').format(
                provider=self.name))
        p.config.check_setup()
        if not texts:
            return []
        model = model or self.model(cancel)
        unreadable = _('{provider} sent embeddings that could not be read.')
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH):
            if cancel.cancelled:
                raise Cancelled()
            batch = texts[start:start + EMBED_BATCH]
            data = self.connection.json_answer(p.embed_request(batch, model), model, cancel, unreadable)
            got: list[list[float]] | None
            try:
                got = [[float(x) for x in v] for v in p.parse_embeddings(data)]
                if not all(abs(x) <= MOST_EMBEDDING_VALUE for v in got for x in v):  # NaN, infinity, 1e308:
                    got = None                                                        # nothing to rank by
            except (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError):
                got = None
            if got is None or len(got) != len(batch):
                raise ProtocolError(unreadable.format(provider=self.name),
                                    details=self.connection.scrub(json.dumps(data)[:500]))
            vectors.extend(got)
            if progress is not None:
                progress(len(vectors), len(texts))
        return vectors


class ImageMaking(Operation):
    """An image made from words (a cover), or an image changed as words ask (Refine)."""

    def generate_image(self, prompt: str, aspect: str = '2:3', source: Image | None = None, model: str = '',
                       cancel: CancelToken | None = None) -> ImageResult:
        """An image made from prompt (with source: source changed as prompt asks), its usage and
        estimated cost, with no secret of the provider's in it. One request, read whole and bounded
        (limits.MAX_IMAGE_JSON_BYTES). Raises a ProviderError in words (PromptBlocked/ResultBlocked
        for a safety refusal, NoCredit, ModelNotFound, RateLimited, TimedOut...), or Cancelled on Stop."""
        return self.connection.redacted(lambda: self.image(prompt, aspect, source, model, cancel or CancelToken()))

    def image(self, prompt: str, aspect: str, source: Image | None, model: str, cancel: CancelToken) -> ImageResult:
        p = self.provider
        wanted = Capability.IMAGE_EDITING if source is not None else Capability.IMAGE_GENERATION
        if not p.capabilities & wanted:
            raise NotConfigured((_('{provider} cannot change an image it is given.') if source is not None else
                                 _('{provider} cannot make images.')).format(provider=self.name))
        p.config.check_setup()
        p.prepare_image(source, model, cancel)
        model = model or p.image_model(cancel)
        response = self.connection.open(p.image_request(prompt, model, aspect, source), model, cancel)
        body = response.read_all(limits.MAX_IMAGE_JSON_BYTES + 1)
        if len(body) > limits.MAX_IMAGE_JSON_BYTES:
            raise too_large(self.name, limits.MAX_IMAGE_JSON_BYTES)
        unreadable = _('{provider} sent an answer with no image Book AI can read.')
        scrub = self.connection.scrub
        try:
            data = self.connection.read_json(body, limits.IMAGE_JSON_MEMORY_PER_BYTE)
        except limits.TooComplex as e:
            raise too_complex(self.name, e) from None
        except ValueError:
            raise ProtocolError(unreadable.format(provider=self.name),
                                details=scrub(body[:300].decode('utf-8', 'replace'))) from None
        try:
            result = p.parse_image_answer(data, model)
        except ProviderError:
            raise
        except ImageAddress as e:
            result = ImageResult(self.connection.image_at(e.url, model, cancel), model, e.usage, e.revised_prompt,
                                 e.text)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError) as e:
            raise ProtocolError(unreadable.format(provider=self.name),
                                details=scrub(f'{type(e).__name__}: {e}')) from None
        usage = result.usage
        if usage.cost is None:
            estimate = pricing.estimate_image(p.name, result.model or model, usage, aspect)
            if estimate is not None:
                result = replace(result, usage=replace(usage, cost=estimate))
        return result


class ModelList(Operation):
    """The service's live model list, cached for a day in calibre's cache folder (providers/models.py),
    and the model chosen from it."""

    def models(self, refresh: bool = False, cancel: CancelToken | None = None) -> list[Model]:
        """The list, with no secret of the provider's in it: redacted as it is read (json_answer) and
        as it is kept, for what cutting it to the limits left of a secret; the cached one as it is
        given back."""
        return self.connection.redacted(lambda: self.listed(refresh, cancel or CancelToken()))

    def listed(self, refresh: bool, cancel: CancelToken) -> list[Model]:
        path = self.cache_path()
        if not refresh:
            cached = read_models_cache(path)
            if cached is not None:
                return cached
        p = self.provider
        unreadable = _('{provider} sent a model list that could not be read.')
        data = self.connection.json_answer(p.models_request(), '', cancel, unreadable)
        try:  # a list of the wrong shape (a number where an object was, NaN or 1e400 as a date) is said in words
            models = cast('list[Model]', self.connection.known_secrets.redacted(
                kept_models(p.parse_models(first_items(data, limits.MAX_MODELS)))))
        except (AttributeError, TypeError, ValueError, OverflowError, KeyError, IndexError):
            raise ProtocolError(unreadable.format(provider=self.name),
                                details=self.connection.scrub(json.dumps(data)[:500])) from None
        write_models_cache(path, models, p.config.base_url)
        return models

    def cache_path(self) -> str:
        """Where this provider's model list is cached: one file per provider and address."""
        return cache_path(self.provider.name, self.provider.config.base_url)

    def choose(self, tier: str | None = None, cancel: CancelToken | None = None) -> str:
        """The configured model; else the one the provider chooses from the list (the newest of the tier)."""
        configured = (self.provider.config.option('model') or '').strip()
        return configured or self.provider.automatic_model(tier, cancel)

    def context_window(self, model: str, cancel: CancelToken | None = None) -> ContextWindow | None:
        """How many tokens model reads at once (its question and its answer together), and where
        that was learned (providers/context.py): as the reader set it or the service says of the
        model it serves (the provider's served_context()), else as the live model list gives it,
        else from the dated table; None when nobody says; a ContextWindow of 0 tokens, 'unknown',
        with why in words, when the service was asked and failed to say. Never raises but
        Cancelled on Stop. Kept for the provider's life (MOST_WINDOWS_KEPT models) once learned
        without a failure."""
        p = self.provider
        if model not in p.context_windows:
            window, failed = self.learned_window(model, cancel or CancelToken())
            if failed or len(p.context_windows) >= MOST_WINDOWS_KEPT:
                return refused_below(p.name, p.config.base_url, model, window)
            p.context_windows[model] = window
        return refused_below(p.name, p.config.base_url, model, p.context_windows[model])

    def learned_window(self, model: str, cancel: CancelToken) -> tuple[ContextWindow | None, bool]:
        """(the window, whether asking the service failed on the way)."""
        p, problem = self.provider, None
        try:
            served = p.served_context(model, cancel)
            if served is not None and window_tokens(served.tokens):
                return served, False
        except ProviderError as e:
            problem = e
        except (AttributeError, TypeError, KeyError, IndexError, ValueError, OverflowError):
            pass  # the service's answer was of the wrong shape: it says nothing
        try:
            listed = next((m.context_length for m in self.models(cancel=cancel) if m.id == model), 0)
        except ProviderError as e:
            problem, listed = problem or e, 0
        if tokens := window_tokens(listed):
            return ContextWindow(tokens, 'list'), False
        window = table_window(p.name, model)
        if window is None and problem is not None:
            window = ContextWindow(0, 'unknown', why=self.connection.scrub(str(problem)))
        return window, problem is not None
