# License: GPLv3 Copyright: the Book AI developers
"""Making a cover, without Qt: the one pipeline the cover window (gui/cover_dialog.py), the
many-books job (main_window/cover_actions.py, through covers/bulk.py) and the command line's
`cover` call, step by step:

1. the image provider: chosen_image_provider(), and provider_problem(), the one set of checks,
   one sentence per problem (none chosen, one that cannot make images, one not set up);
2. a book's request: book_requests(), each prompt built through the book's templates
   (covers/prompt.py);
3. the image: make_image(), the ONE call of a provider's generate_image(); what went wrong in
   one sentence, failure_text(); Stop is Stop, whatever the service says after it;
4. the image bounded and decoded by Book AI itself in calibre's worker: decoded_image()
   (core.images.decode_images);
5. its price: price_per_image(), price_sentence() before it is made, image_summary() after
   (every cost said and added up as providers/pricing.py says them);
6. staged (many books: covers/bulk.py), then put on the book and put back (covers/library.py,
   covers/undo.py).
"""

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.core.images import Decoded, Image, ImageResult, decode_images
from calibre_plugins.bookai.core.messages import Cost, Usage
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.covers.prompt import CoverChoices, cover_prompts
from calibre_plugins.bookai.providers import pricing
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.pricing import cost_text

if TYPE_CHECKING:
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()


# the provider {{{

def chosen_image_provider() -> 'AIProviderPlugin | None':
    """The image provider of the settings, with the user's settings; None when none is chosen."""
    # on use: the settings or a provider only when asked for
    from calibre_plugins.bookai.providers.registry import image_provider
    try:
        return image_provider()
    except Exception:  # a provider that cannot be made: as if none were chosen, said in words
        return None


def provider_problem(provider: 'AIProviderPlugin | None') -> str:
    """Why covers cannot be made with provider now, in one sentence; '' when they can. Nothing
    is asked of the service."""
    if provider is None:
        return _('No image provider is chosen: choose one in Book AI\'s settings, on the Cover artwork tab. Nothing '
                 'is sent until you do.')
    if not provider.capabilities & Capability.IMAGE_GENERATION:
        from calibre_plugins.bookai.providers.registry import image_provider_names  # on use, as above
        return _('{provider} cannot make images. These can: {names}.').format(
            provider=provider.display_name, names=', '.join(n for _pid, n in image_provider_names()))
    missing = provider.config.missing_setup()
    if missing:
        return _('{provider} makes the covers, but it is not ready: {problem}').format(
            provider=provider.display_name, problem=missing)
    return ''


def image_model_shown(provider: 'AIProviderPlugin') -> str:
    """The image model the provider will use, as set, else its default; '' when it chooses
    (read from the settings only: nothing is asked of the service)."""
    return (str(provider.config.option('image_model') or '')).strip() or provider.default_image_model

# }}}


# the request {{{

@dataclass
class BookRequest:
    """One book's cover to make: its id, its title (to name it in a failure) and its prompt."""
    book_id: int
    title: str
    prompt: str


def book_requests(db: Any, book_ids: Iterable[int], choices: CoverChoices, abort: Any = None,
                  preview: bool = False) -> tuple[list[BookRequest], list[str]]:
    """(one request per book of db (calibre's Cache) still in the library, the notes on its
    templates): each prompt built by covers.prompt.cover_prompts() from the book's metadata and
    choices, every book's templates evaluated in one calibre worker. abort: what stops that worker
    (an Event, or the run's CancelToken). preview: for a prompt only shown, never sent (no Python
    template is run). From a thread or the command line only."""
    ids = [book_id for book_id in book_ids if db.has_id(book_id)]
    books = [db.get_metadata(book_id) for book_id in ids]
    prompts, notes = cover_prompts(books, choices, preview=preview, abort=abort)
    return [BookRequest(book_id, mi.title or '', prompt) for book_id, mi, prompt in zip(ids, books, prompts)], notes

# }}}


# the image {{{

def make_image(provider: 'AIProviderPlugin', prompt: str, aspect: str, cancel: CancelToken,
               source: Image | None = None) -> ImageResult:
    """The image provider makes for prompt (source: the image to change): the one place a cover
    is asked of a service. Raises Cancelled once cancel is (an error that comes after Stop is
    Stop's), else what generate_image() raises: failure_text() says it."""
    if cancel.cancelled:
        raise Cancelled()
    try:
        return provider.generate_image(prompt, aspect=aspect, source=source, cancel=cancel)
    except Cancelled:
        raise
    except Exception:
        if cancel.cancelled:
            raise Cancelled() from None
        raise


def failure_text(exc: BaseException) -> str:
    """Why a cover was not made, in one sentence: the provider's own, else the error named."""
    if isinstance(exc, Cancelled):
        return _('Stopped. Nothing more was sent.')
    if isinstance(exc, ProviderError):
        return str(exc)
    return _('The cover could not be made: {error}').format(error=f'{type(exc).__name__}: {exc}')


def decoded_image(provider: 'AIProviderPlugin', image: Image, side: int = 0, abort: Any = None) -> Decoded:
    """The image provider sent, decoded by Book AI itself in calibre's worker, bounded in time and
    memory (core.images.decode_images): Book AI's own JPEG of it for the library, and with side, the
    picture to show, at most side pixels a side. Why it cannot be used, in its problem. From a
    thread or the command line, never the GUI thread."""
    name = _('The image {provider} sent').format(provider=provider.display_name)
    (decoded,) = decode_images([image.data], [name], cover=True, side=side, abort=abort)
    return decoded or Decoded(_('{image} could not be decoded.').format(image=name))


def make_cover(provider: 'AIProviderPlugin', prompt: str, aspect: str, cancel: CancelToken,
               source: Image | None = None, side: int = 0) -> tuple[ImageResult, Decoded]:
    """make_image(), then decoded_image(): the image the provider makes and Book AI's own decoding
    of it. Raises what make_image() raises. From a thread or the command line."""
    result = make_image(provider, prompt, aspect, cancel, source)
    return result, decoded_image(provider, result.image, side, cancel)

# }}}


# its price {{{

def price_per_image(provider: 'AIProviderPlugin', aspect: str) -> Cost | None:
    """What one image costs by the dated price table; None when it is not known."""
    try:
        return pricing.estimate_image(provider.name, image_model_shown(provider) or None, Usage(), aspect)
    except Exception:  # a price table that cannot say: unknown
        return None


def price_sentence(provider: 'AIProviderPlugin', aspect: str, count: int = 1) -> str:
    """The price of one image (and of count images), in a sentence: estimated, or unknown."""
    if provider.connection.is_local:
        return _('It runs on this computer: no cost.')
    price = price_per_image(provider, aspect)
    if price is None:
        return _('The price of an image from this model is not known to Book AI.')
    one = cost_text(price)
    if count <= 1:
        return _('One image costs {cost}.').format(cost=one)
    return ngettext('One image costs {cost}; {count} image, {total}.',
                    'One image costs {cost}; {count} images, {total}.', count).format(
        cost=one, count=count, total=cost_text(replace(price, amount=price.amount * count)))


def image_summary(result: ImageResult, local: bool, model: str = '') -> str:
    """'Model: … · This image: …': the model that made it (model when the service did not say)
    and what it cost (providers.pricing.cost_text)."""
    parts = []
    if result.model or model:
        parts.append(_('Model: {model}').format(model=one_line(result.model or model)))
    parts.append(_('This image: {cost}').format(cost=cost_text(result.usage.cost, local)))
    return ' · '.join(parts)

# }}}
