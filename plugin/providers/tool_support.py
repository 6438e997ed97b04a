# License: GPLv3 Copyright: the Book AI developers
"""Which models refused tools: a service may speak a format that has tools (Capability.TOOLS) and
still refuse them for a model (llama.cpp's llama-server started without --jinja: "tools param
requires --jinja flag"; Ollama, for a model whose template has none: "does not support tools").
tools_refused() tells such an error; the lookup loop then asks again without tools and keeps the
refusal (remember_refusal()), so that the next question does not offer them (refused(), read by
the provider's takes_tools()).

The record is one small private file in calibre's cache folder (cache/bookai/tool-support.json):
for each provider, address and model, hashed (the file names no server and no model), when tools
were refused. At most MAX_ENTRIES (the oldest dropped first), read bounded; a refusal is
forgotten after REFUSAL_DAYS (the server may have been started anew with them); a damaged file is
set aside and a new one begun.
"""

import json
import os
import re
import time
from hashlib import sha256
from typing import TYPE_CHECKING

from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.core.files import read_kept, set_aside_if_can, write_private

if TYPE_CHECKING:
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

MAX_FILE_BYTES = 64 * 1024  # the file read at most: a larger one is set aside
MAX_ENTRIES = 500           # refusals kept, at most
REFUSAL_DAYS = 30           # a refusal kept this long
KIND, VERSION = 'bookai-tool-support', 1
# what a service says when it refuses tools (not a request it refused for another reason)
REFUSAL = re.compile(r'\btools?\b|tool_choice|function[ _-]?call', re.IGNORECASE)
REFUSING_STATUSES = frozenset({400, 404, 405, 422, 500, 501})  # older llama-servers said it with 500


def default_file() -> str:
    from calibre.constants import cache_dir  # late: only when the file is read or written
    return os.path.join(cache_dir(), 'bookai', 'tool-support.json')


def key_of(provider: str, base_url: str, model: str) -> str:
    """The file's key of a provider's model at an address: hashed, so that the file names none."""
    return sha256(f'{provider}\n{base_url}\n{model}'.encode('utf-8')).hexdigest()[:32]


def tools_refused(error: BaseException) -> bool:
    """Whether error is a service refusing tools: a request refused (400, 422...) with a message
    that names tools, tool_choice or function calling."""
    if not isinstance(error, ProviderError):
        return False
    if error.status not in REFUSING_STATUSES:
        return False
    return bool(REFUSAL.search(f'{error.provider_message} {error.details}'))  # the service's words only


def read(path: str | None = None) -> dict[str, float]:
    """The refusals kept, when each was met, by key; {} when there are none or the file cannot be
    read (a damaged one is set aside)."""
    path = path or default_file()
    try:
        data = read_kept(path, MAX_FILE_BYTES, KIND, VERSION)
        refused = data.get('refused')
        if type(refused) is not dict or len(refused) > MAX_ENTRIES:
            raise ValueError('no refusals, or too many')
        return {k: float(v) for k, v in refused.items() if type(k) is str and len(k) <= 64
                and type(v) in (int, float) and 0 <= v < 1e11}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError, UnicodeError):  # damaged, too large, not a file
        set_aside_if_can(path)
        return {}


def refused(provider: str, base_url: str, model: str, path: str | None = None, now: float | None = None) -> bool:
    """Whether the service refused tools for this model in the last REFUSAL_DAYS."""
    when = read(path).get(key_of(provider, base_url, model))
    return when is not None and (now if now is not None else time.time()) - when < REFUSAL_DAYS * 86400


def remember_refusal(provider: 'AIProviderPlugin', model: str, path: str | None = None,
                     now: float | None = None) -> None:
    """Keep that provider's service refused tools for model (now, or at now). Never raises: without
    the record, tools are offered again next time, and refused again."""
    path = path or default_file()
    kept = read(path)
    key = key_of(provider.name, provider.config.base_url, model)
    kept.pop(key, None)
    kept[key] = time.time() if now is None else now
    newest = sorted(kept.items(), key=lambda kv: kv[1])[-MAX_ENTRIES:]
    try:
        write_private(path, json.dumps({'kind': KIND, 'version': VERSION, 'refused': dict(newest)}))
    except OSError:
        pass
