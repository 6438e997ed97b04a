# License: GPLv3 Copyright: the Book AI developers
"""Forget everything Book AI keeps about its user: the API keys, the saved conversations,
the books' text cached for questions, the chapter summaries kept for recaps, the X-Rays of books,
when and where books were last read in the viewer, and the choices made per book (the scope of
its text, the "don't ask again" of sending it). The books themselves, their notes, columns and
highlights are calibre's and are not touched; neither are the other settings.
"""

import os
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from calibre_plugins.bookai.conversation import last_read, summaries
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.grounding.cache import SUFFIX, default_folder
from calibre_plugins.bookai.providers.registry import PROVIDERS
from calibre_plugins.bookai.settings.prefs import plugin_prefs
from calibre_plugins.bookai.settings.secrets import SecretStore, secret_store

if TYPE_CHECKING:
    from calibre.utils.config import JSONConfig

load_translations()


@dataclass(frozen=True)
class Forgotten:
    """What forget_everything() removed."""
    keys: int            # API keys deleted
    conversations: int   # saved conversations deleted
    cached_books: int    # cache files of books' text deleted
    book_choices: int    # per-book scopes and consents cleared
    xrays: int = 0       # X-Rays kept of books (one per book and model) deleted
    summaries: int = 0   # files of chapter summaries deleted (one per book)


def count_files(folder: str, suffix: str) -> int:
    """How many files under folder end in suffix."""
    return sum(name.endswith(suffix) for _dir, _dirs, names in os.walk(folder) for name in names)


def remove_folder(folder: str, suffix: str) -> int:
    """Remove folder; the number of files ending in suffix it held."""
    count = count_files(folder, suffix)
    shutil.rmtree(folder, ignore_errors=True)
    if os.path.exists(folder):
        raise OSError(_('{folder} could not be removed.').format(folder=folder))
    return count


def forget_everything(secrets: SecretStore | None = None, history_folder: str | None = None,
                      cache_folder: str | None = None, prefs: 'JSONConfig | None' = None,
                      xray_folder: str | None = None, summary_folder: str | None = None,
                      last_read_file: str | None = None) -> Forgotten:
    """Forget it all (the arguments are the real ones by default); what was removed."""
    from calibre_plugins.bookai.conversation import xray  # late: X-Rays are made when asked for
    secrets = secrets or secret_store()
    prefs = plugin_prefs() if prefs is None else prefs
    keys = secrets.delete_all([(name, 'api_key') for name in PROVIDERS])
    conversations = remove_folder(history_folder or History().folder, '.json')
    cached = remove_folder(cache_folder or default_folder(), SUFFIX)
    xrays = remove_folder(xray_folder or xray.default_folder(), '.json')
    summarized = remove_folder(summary_folder or summaries.default_folder(), summaries.SUFFIX)
    try:  # when and where books were last read in the viewer (conversation/last_read.py)
        os.remove(last_read_file or last_read.default_file())
    except FileNotFoundError:
        pass
    choices = len(prefs['book_scopes']) + len(prefs['book_text_consent']) + len(prefs['library_index_consent'])
    prefs['book_scopes'] = {}
    prefs['book_text_consent'] = []
    prefs['library_index_consent'] = []  # the libraries whose metadata may go online to be embedded
    prefs['library_index_places'] = {}
    return Forgotten(keys, conversations, cached, choices, xrays, summarized)
