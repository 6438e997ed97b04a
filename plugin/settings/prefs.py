# License: GPLv3 Copyright: the Book AI developers
"""The plugin's preferences, in <calibre config>/plugins/bookai.json.

Opened on first use, never at import time, so that merely loading the plugin
reads and writes nothing. The file is written owner-only (0600) on every
calibre version: it names the services you use and their addresses.

It is written as every file of Book AI's is (core.files: write_private, atomically;
a damaged one set aside, never overwritten). A settings file that cannot be read
(not JSON, not an object, unreadable, a folder in its place) or that holds values
of the wrong kind gives the defaults for what could not be read, and a sentence
(problems(), shown by the settings dialog and on the command line's standard error);
the file is set aside before anything is written over it.
"""

import copy
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.files import NotRegular, TooBig, read_regular, set_aside, write_private

if TYPE_CHECKING:
    from calibre.utils.config import JSONConfig

load_translations()

LARGEST_SETTINGS_FILE = 16 * 1024 * 1024  # bytes: a settings file larger than this is not read

# what a setting may hold: clean(value) gives what can be used of value, or raises TypeError
Cleaner = Callable[[Any], Any]

_prefs: 'JSONConfig | None' = None
_opened = []  # every settings file opened in this process, for problems()


def private_config(rel_path: str, kinds: dict[str | None, Cleaner] | None = None) -> 'JSONConfig':
    """A calibre JSONConfig whose file only its owner can read, written atomically, that
    never fails to open. kinds: {key: clean(value)} for the values it holds (a key not named:
    cleaned by kinds.get(None), when given): clean() gives what can be used of a value, or
    raises TypeError when nothing can; what is not used is said in problem."""
    # importing calibre.utils.config reads calibre's own settings: not before a settings file is opened
    from calibre.utils.config import JSONConfig
    from calibre.utils.config_base import from_json, to_json

    class PrivateJSONConfig(JSONConfig):

        def refresh(self, clear_current: bool = True) -> None:
            self.problem = ''            # what was wrong with the file, in a sentence
            self.set_aside_first = False  # keep the file as it is before writing over it
            data = {}
            try:
                data = self.read_file()
            except OSError as e:
                self.damaged(e.strerror or str(e))
            except Exception as e:  # JSON that is not, text that is not UTF-8, nesting too deep
                self.damaged(str(e) or type(e).__name__)
            else:
                data, wrong = self.cleaned(data)
                if wrong:
                    self.damaged(_('these settings have values of the wrong kind: {names}').format(
                        names=', '.join(wrong)))
            if clear_current:
                self.clear()
            self.update(data)

        def read_file(self) -> dict:
            return read_settings_file(self.file_path, self.raw_to_object)

        @staticmethod
        def raw_to_object(raw: bytes) -> Any:
            """calibre's JSONConfig reading (its from_json for what it wrote specially), bounded in
            depth and values by limits.load_json."""
            return limits.load_json(raw.decode('utf-8'), object_hook=from_json)

        @staticmethod
        def cleaned(data: dict) -> tuple[dict, list[str]]:
            """(what can be used of data, the names of the settings not used as they were)."""
            if kinds is None:
                return data, []
            good, wrong = {}, []
            for key, value in data.items():
                clean = kinds.get(key, kinds.get(None))
                try:
                    good[key] = value if clean is None else clean(value)
                except (TypeError, ValueError):
                    wrong.append(str(key))
                    continue
                if good[key] != value:
                    wrong.append(str(key))
            return good, sorted(wrong)

        def damaged(self, reason: str) -> None:
            self.problem = _('Book AI could not read its settings file {path}: {reason}. Defaults are used for '
                             'what could not be read; the file is kept as it is, under a new name, before '
                             'anything is saved.').format(path=self.file_path, reason=reason)
            self.set_aside_first = True

        def to_raw(self) -> bytes:
            """The file's bytes: JSON (never NaN or Infinity, which are not JSON)."""
            return json.dumps(self, indent=2, default=to_json, sort_keys=True, ensure_ascii=False,
                              allow_nan=False).encode('utf-8')

        def commit(self) -> None:
            """Write the file; a damaged one is set aside first (OSError if it cannot be: then
            nothing is written)."""
            if self.no_commit or not getattr(self, 'file_path', None):
                return
            if self.set_aside_first:
                if os.path.lexists(self.file_path):
                    kept = set_aside(self.file_path)
                    self.problem += ' ' + _('It was kept as {kept}.').format(kept=kept)
                self.set_aside_first = False
            write_private(self.file_path, self.to_raw())

    config = PrivateJSONConfig(rel_path)
    _opened.append(config)
    return config


def read_settings_file(path: str, parse: Callable[[bytes], Any]) -> dict:
    """The settings in the JSON file at path (parse: its bytes to an object), read bounded:
    {} when there is no file. Only a regular file is read, opened without blocking
    (core.files.read_regular): a FIFO, a device, a socket or a folder in its place (whatever a
    link on the way says) is refused at once, never waited on. Raises OSError when it cannot
    be read, ValueError (or RecursionError, nested too deep) when it is not a regular file, is
    too large or holds no settings: each with its reason in words."""
    try:
        raw = read_regular(path, LARGEST_SETTINGS_FILE)
    except FileNotFoundError:
        return {}
    except NotRegular:
        raise ValueError(_('it is not a regular file (a folder, a FIFO, a device or a socket is in its place)')) \
            from None
    except TooBig:
        raise ValueError(_('it is larger than {size} MB').format(size=LARGEST_SETTINGS_FILE // 2**20)) from None
    data = parse(raw) if raw.strip() else {}
    if not isinstance(data, dict):
        raise ValueError(_('it holds no settings'))
    return data


def problems() -> list[str]:
    """What was wrong with the settings files opened so far, a sentence each."""
    return [c.problem for c in _opened if c.problem]


def not_saved(config: 'JSONConfig', error: OSError) -> str:
    """What the reader is told when the settings file of config could not be written."""
    return _('The settings could not be saved in {path}: {reason}').format(
        path=config.file_path, reason=error.strerror or error)


def text(value: Any) -> str:
    """The cleaner of a text setting."""
    if not isinstance(value, str):
        raise TypeError('not text')
    return value


def a_dict(value: Any) -> dict:
    """The cleaner of an object setting."""
    if not isinstance(value, dict):
        raise TypeError('not an object')
    return value


def list_of(clean: Cleaner) -> Cleaner:
    """The cleaner of a list: its items that clean() accepts."""
    def cleaned(value: Any) -> list:
        if not isinstance(value, list):
            raise TypeError('not a list')
        return [v for v in value if accepts(clean, v)]
    return cleaned


def dict_of(clean: Cleaner) -> Cleaner:
    """The cleaner of an object: its entries whose value clean() accepts."""
    def cleaned(value: Any) -> dict:
        return {k: v for k, v in a_dict(value).items() if accepts(clean, v)}
    return cleaned


def accepts(clean: Cleaner, value: Any) -> bool:
    """Whether clean() takes value as it is."""
    try:
        return clean(value) == value
    except (TypeError, ValueError):
        return False


def one_of(*values: Any) -> Cleaner:
    """The cleaner of a setting that holds one of values (of their kind: True is not 1)."""
    def cleaned(value: Any) -> Any:
        if any(type(value) is type(v) and value == v for v in values):
            return value
        raise ValueError('not one of the values offered')
    return cleaned


def same_kind(default: Any) -> Cleaner:
    """The cleaner of a setting that holds a value of the same kind as its default."""
    kind = type(default)

    def cleaned(value: Any) -> Any:
        if type(value) is kind or (kind is float and type(value) is int):
            return value
        raise TypeError(f'not a {kind.__name__}')
    return cleaned


DEFAULTS = {
    'toolbar_placed': False,
    'provider': '',           # the provider answers come from ('' until the user chooses)
    'providers': {},          # provider name: {option: value}
    'reasoning_effort': 'auto',
    'library_actions': [],    # the quick actions as edited: [{name, label, template, enabled}]
    'viewer_actions': [],     # the same, for the E-book viewer's Ask AI panel
    'highlight_style': '',    # the viewer's highlight style for notes ('' for the viewer's current one)
    'book_fields': [],        # standard fields sent besides title and authors, for every library (and the
    # '#custom' columns Book AI 1.0.0 kept here: for the libraries with no entry in book_custom_fields)
    'book_custom_fields': {},  # library id: the '#custom' columns sent for that library (conversation/books.py)
    'answer_language': 'interface',  # 'interface', 'book' (the book's, else the interface's), 'never', or
    # a language named in English
    # before sending to an online (not local) provider, show what will be sent:
    # 'first' (a conversation's first question), 'always', or 'never'
    'confirm_send': 'first',
    'save_field': 'comments',  # where "Save to book" appends: comments or a #column of comments type
    # the book's own text with questions: off (details only) until the reader turns it on,
    # here for every book or in a book's window for that book
    'book_text': False,
    'book_scopes': {},        # per book ("library id:book id", or the file in the viewer): a scope
    'book_text_budget': 1500,  # tokens of the book's text sent with one question at most
    'book_text_consent': [],  # "book|provider" where the reader said: don't ask again
    # how passages are ranked for a question: 'bm25' (by words, no network) or 'embeddings'
    # (by meaning too, with the provider's embeddings: grounding/embeddings.py)
    'retrieval': 'bm25',
    # the model may look things up in the book while it answers (conversation/lookups.py), where its
    # provider takes tools; at most this many lookups per answer
    'lookups': True,
    'lookup_calls': 8,
    # calibre's own AI settings were offered to be carried over (from_calibre/carry_over.py): once
    'calibre_settings_offered': False,
    # the model chooser's filters and sort as last left (gui/model_chooser.py): only_free,
    # only_unmoderated (bools), sort (a key of its SORTS)
    'model_chooser': {},
    # AI covers (covers/): the provider that makes images, chosen apart from the one answers come
    # from ('' until the reader chooses one), and the choices the cover windows remember
    'image_provider': '',
    'cover_style': 'pulp',     # the style last chosen: a key of covers/styles.py, or a saved style's
    'cover_styles': [],        # the reader's own styles: [{name, human_name, template}]
    'cover_text': {'title': True, 'authors': True, 'series': True},  # rendered on the cover
    # calibre templates for that text ('' for the field as it is)
    'cover_templates': {'title': '', 'authors': '', 'series': ''},
    'cover_instructions': '',  # added to every cover's prompt
    'cover_description': False,  # the book's description sent as context (off, as calibre)
    'cover_aspect': '3:4',     # width:height, as calibre's default
    'cover_requests_at_once': 3,  # the bulk job's requests at once (1 to 8)
    'cover_undo_days': 30,     # how long a replaced cover is kept for Undo
    # AI metadata (metadata/): the fields the window fills, as calibre lookup names, the reader's
    # instruction for each, and the job's requests at once (1 to 8)
    'metadata_fields': ['tags', 'comments'],
    'metadata_instructions': {},
    'metadata_requests_at_once': 3,
    'metadata_book_text': False,  # the opening of each book's text sent too (the reader's consent)
    # the text size of the chat (the conversation shown in the library's windows and the viewer's
    # panel), in percent of calibre's own text: one of CHAT_TEXT_SIZES
    'chat_text_size': 100,
    # the viewer's panel offers "Recap since you last read" when a book is opened after this many
    # days (conversation/last_read.py); 0: never, and no record of when books were read is kept
    'recap_offer_days': 7,
    # the library searched by meaning (library_search/): the provider that embeds the books' metadata
    # ('' for the one answers come from), and the "library id|provider/model" online services the
    # reader agreed to send a library's metadata to
    'library_embeddings_provider': '',
    'library_index_consent': [],
    # "Ask for what to read next" suggests from 'anywhere' (the model's knowledge) or this 'library', as
    # last chosen; and the field that says a book was read, by library id ('' or none: the books opened
    # in the E-book viewer are the ones read)
    'read_next_from': 'anywhere',
    'read_next_read_field': {},
    'library_index_places': {},  # library id: its folder, so that the index of a library gone is removed
}

CHAT_TEXT_SIZES = (85, 100, 115, 130, 150)


def plugin_prefs() -> 'JSONConfig':
    """The plugin's preferences (opened once per process)."""
    global _prefs
    if _prefs is None:
        _prefs = private_config('plugins/bookai', PREF_KINDS)
        _prefs.defaults.update(copy.deepcopy(DEFAULTS))
    return _prefs


# what each setting holds, where more than "the kind of its default" is known
PREF_KINDS: dict[str | None, Cleaner] = {key: same_kind(default) for key, default in DEFAULTS.items()}
PREF_KINDS.update({
    'providers': dict_of(a_dict),  # a provider's options: each checked by its Option when read
    'library_actions': list_of(a_dict),
    'viewer_actions': list_of(a_dict),
    'book_fields': list_of(text),
    'book_custom_fields': dict_of(list_of(text)),
    'book_scopes': dict_of(text),
    'book_text_consent': list_of(text),
    'library_index_consent': list_of(text),
    'read_next_read_field': dict_of(text),
    'library_index_places': dict_of(text),
    'cover_styles': list_of(a_dict),
    'cover_text': dict_of(same_kind(True)),
    'cover_templates': dict_of(text),
    'metadata_fields': list_of(text),
    'metadata_instructions': dict_of(text),
    'chat_text_size': one_of(*CHAT_TEXT_SIZES),
    'read_next_from': one_of('anywhere', 'library'),
})


def chat_text_size() -> int:
    """The chat's text size, in percent of calibre's own: the default when what is set is not one of
    CHAT_TEXT_SIZES (a damaged file's value is not used: see PrivateJSONConfig.cleaned)."""
    value = plugin_prefs()['chat_text_size']
    return value if accepts(PREF_KINDS['chat_text_size'], value) else DEFAULTS['chat_text_size']
