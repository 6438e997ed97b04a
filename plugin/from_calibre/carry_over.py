# License: GPLv3 Copyright: the Book AI developers
"""calibre's own AI settings, read and carried over into Book AI's with the reader's consent.

calibre 8.11 and later keep them in four places (read in calibre 8.11 to 9.17's sources):

- ai.json in calibre's config folder (calibre.ai.prefs): 'providers', each provider's
  settings by calibre's name for it, the API key hex-encoded; 'purpose_map', the provider
  chosen per purpose ('AICapabilities.text_to_text' for chat); 'llm_localized_results'
  ('always' answers in calibre's language; 8.16 and later);
- gui.json (calibre's gprefs): the library's quick actions 'llm_book_quick_actions', the
  standard fields it may send 'llm-book-allowed-standard-fields', and the choices of its AI
  covers window 'llm-cover-generation' (9.14 and later; the provider of images is
  ai.json's 'AICapabilities.text_to_image' purpose);
- each library's metadata.db (its preferences table): the custom fields it may send,
  'llm-book-allowed-custom-fields';
- viewer-webengine.json (the viewer's vprefs): 'llm_quick_actions', 'llm_highlight_style',
  and before 8.16 'llm_localized_results'.

read() reads them and says, for each setting, where it lands in Book AI or why it does not
(an Item); nothing is written. carry_over() writes what the reader agreed to: the options
into Book AI's settings file, the keys into Book AI's secret store (the system's keyring
where there is one).

Every byte of calibre's is read as hostile (another program's files, which anyone who can
write the reader's config folder could have written):

- only regular files are opened, without blocking (settings.prefs.read_settings_file, through
  core.files.read_regular): a FIFO, a device or a socket in a file's place ends in a sentence
  at once; each file bounded in size, its JSON in depth and values (core.limits.load_json);
- a library's metadata.db is opened read-only (a regular file only), with a time limit (a
  progress handler: SQLITE_SECONDS a library, LIBRARIES_SECONDS for all), sqlite's own length
  limit on every value (LONGEST_SQLITE_VALUE, where Python has Connection.setlimit) and the
  value's type and size checked in the query; 'preferences' and 'library_id' must be tables as
  calibre makes them (not views, virtual tables, or tables with computed columns);
- every value is checked against the type calibre writes for it (CALIBRE_KINDS and the checks
  of each setting) before anything is done with it; a wrong one is listed as not carried over,
  in words, never a traceback (read() guards each setting besides: UNFORESEEN);
- settings carry values, never code: a template of calibre's AI covers that calibre would run
  as Python (covers.prompt.runs_code) is an Item with `code`, shown whole, and carried over
  only with its own consent (carry_over(with_code=True): the window's own tick box, the command
  line's --with-python-templates). Quick actions' prompts and cover styles' texts are sent as
  they are, never evaluated: values. HTTP headers with a control character are refused.
"""

import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from typing import cast

from calibre_plugins.bookai.conversation.actions import action_name
from calibre_plugins.bookai.core.files import is_regular
from calibre_plugins.bookai.core.limits import TooComplex, load_json
from calibre_plugins.bookai.core.web_links import shown_address
from calibre_plugins.bookai.providers.base import AIProviderPlugin
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.options import checked_header, quoted
from calibre_plugins.bookai.providers.registry import PROVIDERS, provider_class
from calibre_plugins.bookai.settings.prefs import plugin_prefs, read_settings_file
from calibre_plugins.bookai.settings.secrets import SecretStore, secret_store

load_translations()

# calibre's name for a provider: Book AI's
PROVIDER_IDS = {
    'OpenAI': 'openai', 'Anthropic': 'anthropic', 'GoogleAI': 'gemini', 'OpenRouter': 'openrouter',
    'OllamaAI': 'ollama', 'LMStudio': 'lmstudio', 'OpenAI compatible': 'openai_compatible',
    'Grok': 'grok', 'Venice AI': 'venice', 'GitHubAI': 'github',
}
CHAT_PURPOSE = 'AICapabilities.text_to_text'
IMAGE_PURPOSE = 'AICapabilities.text_to_image'
# calibre's builtin quick actions, by the names its files use (the same as Book AI's)
LIBRARY_BUILTINS = ('summarize', 'chapters', 'read_next', 'universe', 'series')
VIEWER_BUILTINS = ('explain', 'define', 'summarize', 'points', 'grammar', 'translate')
# settings of calibre's providers for images (AI covers, calibre 9.14 and later): the model is
# carried over, and the quality (OpenAI) and safe mode (Venice) where Book AI's provider has
# that option; Book AI has none of the others (each image is asked for at the shape the cover window chose)
IMAGE_MODEL_SETTINGS = ('text_to_image_model', 'image_model')
IMAGE_SETTINGS = ('image_model_strategy', 'image_resolution')
# calibre's cover window's choices (gui.json 'llm-cover-generation'): Book AI's setting for each
COVER_TEXT = {'include_title': 'title', 'include_authors': 'authors', 'include_series': 'series'}
COVER_TEMPLATES = {'title_template': 'title', 'authors_template': 'authors', 'series_template': 'series'}
# Book AI's settings that hold an object of which an item sets some keys: merged, key by key
MERGED_PREFS = ('cover_text', 'cover_templates')
MOST_LIBRARIES = 64           # libraries looked at for their custom fields
MOST_ACTIONS = 200            # quick actions taken from one list
MOST_HEADERS = 50             # HTTP headers of one provider
LONGEST_TEXT = 20_000         # characters of one template, name or value
LONGEST_NAME = 200            # characters of a field's, a style's or an action's name
LONGEST_PATH = 4096           # characters of a library's folder
# a library's metadata.db
SQLITE_SECONDS = 2.0          # one library: opening it and reading its two values
LIBRARIES_SECONDS = 10.0      # all the libraries together
SQLITE_STEPS = 1000           # sqlite virtual machine steps between two looks at the clock
LONGEST_SQLITE_VALUE = 1024 * 1024  # bytes of any string or blob sqlite makes on the connection (3.11+)
LONGEST_LIBRARY_ID = 200      # characters of a library's id

# the check that no setting escapes: what read() says of a value none of the checks below foresaw
UNFORESEEN = 'unforeseen'


@dataclass
class Changes:
    """What carrying over writes: option values per provider, Book AI settings, keys, and the
    custom fields of each library (by its id). The settings in MERGED_PREFS hold only the keys
    an item sets: merged into what Book AI has."""
    providers: dict[str, dict[str, object]] = field(default_factory=dict)
    prefs: dict[str, object] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    custom_fields: dict[str, list[str]] = field(default_factory=dict)

    def merge(self, other: 'Changes') -> None:
        for name, values in other.providers.items():
            self.providers.setdefault(name, {}).update(values)
        for key, value in other.prefs.items():
            if key in MERGED_PREFS and isinstance(value, dict):
                self.prefs[key] = {**dict_of(self.prefs.get(key)), **value}
            else:
                self.prefs[key] = value
        self.keys.update(other.keys)
        self.custom_fields.update(other.custom_fields)


@dataclass
class Item:
    """One setting of calibre's AI: what it is, its value in words, and where it lands in
    Book AI (destination) or why it does not (why_not). code: the whole text of a template
    calibre would run as Python: then it is carried over only with its own consent."""
    section: str
    setting: str
    value: str
    destination: str = ''
    why_not: str = ''
    changes: Changes = field(default_factory=Changes)
    code: str = ''

    @property
    def carried(self) -> bool:
        return not self.why_not


@dataclass
class CalibreSettings:
    """What read() found: the items, by section, and what could not be read, in words."""
    items: list[Item] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        """Whether anything can be carried over."""
        return any(i.carried for i in self.items)

    def sections(self) -> list[str]:
        """The sections, in the order found."""
        return list(dict.fromkeys(i.section for i in self.items))

    def code_items(self) -> list[Item]:
        """The items that can be carried over only with their own consent (templates that run code)."""
        return [i for i in self.items if i.carried and i.code]

    def summary(self) -> str:
        """Everything found, as plain text: a heading per section, a line per setting (what
        could not be read is in problems); a template that runs code, whole, below its line."""
        lines = []
        for section in self.sections():
            lines.append(section)
            for i in self.items:
                if i.section == section:
                    where = i.destination if i.carried else _('not carried over: {why}').format(why=i.why_not)
                    if i.carried and i.code:
                        where = _('{where}, only if you agree: it runs as Python code. The whole template:').format(
                            where=where)
                    lines.append(f'  {i.setting}: {i.value} → {where}')
                    if i.carried and i.code:
                        lines.extend(f'    | {line}' for line in i.code.splitlines() or [''])
        return '\n'.join(lines)


def calibre_config_dir() -> str:
    from calibre.constants import config_dir
    return config_dir


def read(config_dir: str | None = None, libraries: Iterable[str] = ()) -> CalibreSettings:
    """calibre's AI settings in config_dir (default: calibre's config folder), and the custom
    fields of the libraries calibre has used (from gui.json) and of libraries (folders). Never
    raises for what the files hold: what cannot be used is an item not carried over, or a problem."""
    folder = config_dir or calibre_config_dir()
    found = CalibreSettings()
    ai = read_json(os.path.join(folder, 'ai.json'), found)
    gui = read_json(os.path.join(folder, 'gui.json'), found)
    viewer = read_json(os.path.join(folder, 'viewer-webengine.json'), found)
    add = found.items.extend
    purposes = dict_of(ai.get('purpose_map'))
    chosen = text_of(purposes.get(CHAT_PURPOSE))
    providers = dict_of(ai.get('providers'))
    for calibre_name, settings in list(providers.items())[:MOST_ACTIONS]:
        if isinstance(settings, dict) and settings:
            add(guarded(named(calibre_name), _('Settings'),
                        lambda: provider_items(str(calibre_name), settings, calibre_name == chosen)))
        elif settings not in ({}, None):
            add([Item(named(calibre_name), _('Settings'), quoted(settings, 80),
                      why_not=_('they are not settings calibre wrote'))])
    if chosen and chosen not in providers:
        add(guarded(_('Answers'), _('Chosen for answers'), lambda: [chosen_item(chosen)]))
    if 'purpose_map' in ai and not isinstance(ai['purpose_map'], dict):
        add([Item(_('Answers'), _('Providers by purpose'), quoted(ai['purpose_map'], 80),
                  why_not=_('they are not settings calibre wrote'))])
    for purpose, provider in list(purposes.items())[:MOST_ACTIONS]:
        if purpose == IMAGE_PURPOSE:  # 9.14 and later: the provider of AI covers
            add(guarded(_('AI covers'), _('Provider for covers'), lambda: [image_provider_item(provider)]))
        elif purpose == CHAT_PURPOSE:
            if not isinstance(provider, str):
                add([Item(_('Answers'), _('Chosen for answers'), quoted(provider, 80),
                          why_not=_('it is not the name of a provider'))])
        else:
            add([Item(_('Answers'), _('Provider for {purpose}').format(
                purpose=quoted(str(purpose).removeprefix('AICapabilities.'), 60)), quoted(provider, 80),
                why_not=_('Book AI has no use for this purpose'))])
    language = ai.get('llm_localized_results', viewer.get('llm_localized_results'))
    if language is not None:
        add(guarded(_('Answers'), _("Ask the AI to respond in calibre's language"), lambda: [language_item(language)]))
    if 'llm_book_quick_actions' in gui:
        add(guarded(_('Library'), _('Quick actions of the Discuss window'), lambda: [actions_item(
            gui['llm_book_quick_actions'], LIBRARY_BUILTINS, 'library_actions', _('Library'),
            _('Quick actions of the Discuss window'))]))
    if 'llm-book-allowed-standard-fields' in gui:
        add(guarded(_('Library'), _('Fields sent with a question'),
                    lambda: [standard_fields_item(gui['llm-book-allowed-standard-fields'])]))
    if 'llm-cover-generation' in gui:
        add(guarded(_('AI covers'), _('Cover choices'), lambda: cover_items(gui['llm-cover-generation'])))
    add(library_items([*list_of(list(libraries)), *dict_of(gui.get('library_usage_stats'))], found))
    if 'llm_quick_actions' in viewer:
        add(guarded(_('E-book viewer'), _('Quick actions of the Ask AI panel'), lambda: [actions_item(
            viewer['llm_quick_actions'], VIEWER_BUILTINS, 'viewer_actions', _('E-book viewer'),
            _('Quick actions of the Ask AI panel'))]))
    if viewer.get('llm_highlight_style') not in (None, ''):
        add(guarded(_('E-book viewer'), _('Highlight style of notes'),
                    lambda: [highlight_item(viewer['llm_highlight_style'])]))
    return found


def named(calibre_name: object) -> str:
    """A provider's name from calibre's files, as a section's heading (never empty)."""
    return quoted(calibre_name, 80).strip() or _('(a provider with no name)')


def guarded(section: str, setting: str, make: Callable[[], list[Item]]) -> list[Item]:
    """make()'s items; should a value of a shape none of the checks foresaw make it fail, one
    item not carried over, in words (never a traceback: the window and the command line go on)."""
    try:
        return list(make())
    except Exception:
        return [Item(section, setting, '', why_not=_('it is not a value calibre writes ({reason})').format(
            reason=UNFORESEEN))]


# reading calibre's files {{{

def read_json(path: str, found: CalibreSettings) -> dict:
    """The settings in one of calibre's JSON files, read as Book AI reads its own (a regular file
    only, without blocking, bounded in size, depth and values); {} when there is none, or when
    it cannot be read (then found.problems says why, in words)."""
    try:
        data = read_settings_file(path, lambda raw: load_json(raw.decode('utf-8')))
    except OSError as e:
        return damaged(path, e.strerror or str(e), found)
    except (ValueError, RecursionError, MemoryError) as e:  # not JSON, not UTF-8, too deep or large, not a file
        return damaged(path, quoted(str(e) or type(e).__name__), found)
    return data


def damaged(path: str, reason: str, found: CalibreSettings) -> dict:
    found.problems.append(_("calibre's settings file {path} could not be read: {reason}. Nothing of it is "
                            'carried over, and it is left as it is.').format(path=path, reason=reason))
    return {}


class LibraryUnreadable(Exception):
    """A library's database that cannot be read as calibre writes it: str() says why, in words."""


def library_items(paths: list, found: CalibreSettings) -> list[Item]:
    """The custom fields sent, of each library (folder) in paths: at most MOST_LIBRARIES, all of
    them read within LIBRARIES_SECONDS."""
    wanted = [p for p in dict.fromkeys(p for p in paths if isinstance(p, str))
              if 0 < len(p) <= LONGEST_PATH and '\x00' not in p][:MOST_LIBRARIES]
    deadline = time.monotonic() + LIBRARIES_SECONDS
    items = []
    for n, path in enumerate(wanted):
        if time.monotonic() > deadline:
            found.problems.append(ngettext(
                'One more calibre library was not looked at: reading libraries took longer than {seconds:g} seconds.',
                '{count} more calibre libraries were not looked at: reading libraries took longer than {seconds:g} '
                'seconds.', len(wanted) - n).format(count=len(wanted) - n, seconds=LIBRARIES_SECONDS))
            break
        item = custom_fields_item(path, found, deadline)
        if item is not None:
            items.append(item)
    return items


def library_prefs(path: str, found: CalibreSettings,
                  deadline: float | None = None) -> tuple[str | None, str | None] | None:
    """(the library's id, its 'llm-book-allowed-custom-fields' as calibre keeps it: JSON text)
    from its metadata.db, opened read-only and read within SQLITE_SECONDS (and deadline); each
    None when it is not a value of the type calibre writes. None when the folder holds no
    library with that setting; a library that cannot be read is said in found.problems."""
    db = os.path.join(path, 'metadata.db')
    if not is_regular(db):  # a FIFO, a device or a folder in its place is never opened
        return None
    stop = time.monotonic() + SQLITE_SECONDS
    if deadline is not None:
        stop = min(stop, deadline)
    try:
        return read_library(db, stop)
    except LibraryUnreadable as e:
        reason = str(e)
    except sqlite3.Error as e:
        text = str(e)
        if 'interrupted' in text:
            reason = _('reading it took longer than {seconds:g} seconds').format(seconds=SQLITE_SECONDS)
        elif 'too big' in text:
            reason = _('it holds a value larger than Book AI reads')
        else:
            reason = quoted(text)
    found.problems.append(_('The calibre library {path} could not be read: {reason}. Its fields are not carried '
                            'over, and it is left as it is.').format(path=quoted(path, LONGEST_PATH), reason=reason))
    return None


def read_library(db: str, stop: float) -> tuple[str | None, str | None] | None:
    """library_prefs()'s reading, which raises sqlite3.Error or LibraryUnreadable."""
    uri = Path(os.path.abspath(db)).as_uri() + '?mode=ro'  # the folder's % # ? quoted
    conn = sqlite3.connect(uri, uri=True, timeout=1)
    try:
        if hasattr(conn, 'setlimit'):  # Python 3.11 and later: no string or blob larger than this, whatever the query
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, LONGEST_SQLITE_VALUE)  # type: ignore[attr-defined]  # 3.11
        conn.set_progress_handler(lambda: time.monotonic() > stop, SQLITE_STEPS)  # true: the query is interrupted
        conn.execute('PRAGMA query_only = 1')
        tables = {}
        for name, kind, sql in conn.execute(
                "SELECT lower(name), type, substr(sql, 1, 40) FROM sqlite_master WHERE lower(name) IN "
                "('preferences', 'library_id')"):
            tables[name] = (kind, sql if isinstance(sql, str) else '')
        if 'preferences' not in tables or 'library_id' not in tables:
            return None  # not a library, or one without settings
        for name, columns in (('preferences', {'key', 'val'}), ('library_id', {'uuid'})):
            kind, sql = tables[name]
            if kind != 'table' or sql.lstrip().upper().startswith('CREATE VIRTUAL'):
                raise LibraryUnreadable(_('its {table} is not a table, as calibre makes it').format(table=name))
            info = conn.execute(f'PRAGMA table_xinfo({name})').fetchall()  # cid, name, type, notnull, default, pk, hidden
            if any(row[6] for row in info):
                raise LibraryUnreadable(_('its {table} has computed columns, which calibre never makes').format(
                    table=name))
            if not columns <= {str(row[1]).lower() for row in info}:
                raise LibraryUnreadable(_('its {table} lacks the columns calibre makes').format(table=name))
        row = conn.execute(
            'SELECT typeof(val), CASE WHEN typeof(val) = \'text\' AND length(val) <= ? THEN val END '
            'FROM preferences WHERE key = ? LIMIT 1', (LONGEST_TEXT, 'llm-book-allowed-custom-fields')).fetchone()
        if row is None:
            return None
        uuid = conn.execute(
            'SELECT CASE WHEN typeof(uuid) = \'text\' AND length(uuid) <= ? THEN uuid END FROM library_id LIMIT 1',
            (LONGEST_LIBRARY_ID,)).fetchone()
    finally:
        conn.close()
    library_id = uuid[0] if uuid is not None and isinstance(uuid[0], str) and uuid[0].strip() and \
        uuid[0].isprintable() else None
    return library_id, row[1] if isinstance(row[1], str) else None

# }}}


# what becomes of each setting {{{

def is_text(value: object) -> bool:
    return isinstance(value, str) and len(value) <= LONGEST_TEXT


def is_number(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(cast(float, value))


def is_model(value: object) -> bool:
    """A model as calibre keeps one: its id; (id, name) (OpenRouter, Venice); {'name', 'id'} (GitHub, 8.16)."""
    if isinstance(value, (list, tuple)):
        return len(value) == 2 and all(is_text(v) for v in value)
    if isinstance(value, dict):
        return is_text(value.get('id')) and all(is_text(v) for v in value.values())
    return is_text(value)


def is_headers(value: object) -> bool:
    return isinstance(value, (list, tuple)) and len(value) <= MOST_HEADERS and all(
        isinstance(h, (list, tuple)) and len(h) == 2 and all(is_text(s) for s in h) for h in value)


# the type of each setting of a provider's, as calibre writes it (calibre.ai.*.config, 8.11 to 9.17)
CALIBRE_KINDS: dict[str, Callable[[object], bool]] = {
    'api_key': is_text, 'api_url': is_text, 'model_choice_strategy': is_text, 'reasoning_strategy': is_text,
    'text_model': is_model, 'model': is_model, 'allow_web_searches': lambda v: type(v) is bool,
    'timeout': is_number, 'temperature': is_number, 'headers': is_headers, 'data_collection': is_text,
    'image_model_strategy': is_text, 'text_to_image_model': is_model, 'image_model': is_model,
    'image_quality': is_text, 'image_resolution': is_text, 'safe_mode': lambda v: type(v) is bool,
}


def provider_items(calibre_name: str, settings: dict, chosen: bool) -> list[Item]:
    """The items of one of calibre's providers."""
    name = PROVIDER_IDS.get(calibre_name)
    section = named(calibre_name)
    if name not in PROVIDERS:
        return [Item(section, _('Settings'), _('{count} settings').format(count=len(settings)),
                     why_not=_('Book AI has no provider of that name'))]
    cls = provider_class(name)
    section = cls.display_name
    items = []
    for key, value in list(settings.items())[:MOST_ACTIONS]:
        key = str(key)
        items.extend(guarded(section, setting_label(key), lambda: [provider_item(cls, key, value)]))
    if chosen:
        c = Changes(prefs={'provider': name})
        items.append(Item(section, _('Chosen for answers'), _('yes'), _('the provider Book AI answers with'), changes=c))
    return items


def calibre_labels() -> dict[str, str]:
    """calibre's settings of a provider, by the names its files use, in the words of its dialogs."""
    return {
        'api_key': _('API key'), 'api_url': _('API URL'), 'model_choice_strategy': _('Model choice strategy'),
        'text_model': _('Model'), 'model': _('Model'), 'reasoning_strategy': _('Reasoning strategy'),
        'allow_web_searches': _('Allow web searches'), 'timeout': _('Timeout'), 'temperature': _('Temperature'),
        'headers': _('Headers'), 'data_collection': _('Data collection'),
        'image_model_strategy': _('Image model strategy'), 'text_to_image_model': _('Image model'),
        'image_model': _('Image model'), 'image_quality': _('Image quality'),
        'image_resolution': _('Image resolution'), 'safe_mode': _('Safe mode'),
    }


def setting_label(key: str) -> str:
    """A setting of a provider's, in the words of calibre's dialogs (never empty)."""
    return calibre_labels().get(key) or quoted(key, 80).strip() or _('(a setting with no name)')


def value_words(key: str, value: object) -> str:
    """A value of calibre's (of the type calibre writes for key), as the offer shows it: yes or
    no, a model's id, header names with their values hidden (they may carry a key), else the
    value on one line."""
    if isinstance(value, bool):
        return _('yes') if value else _('no')
    if key == 'headers':
        names = [quoted(h[0], 60) for h in cast(list, value)[:20]]  # the kind calibre writes: checked
        return ', '.join(f'{n}: …' for n in names) or _('none')
    if isinstance(value, (list, tuple)) and value:  # (id, name)
        value = value[0]
    elif isinstance(value, dict):
        value = value.get('id', '')
    if key == 'api_url' and isinstance(value, str):  # no user:password@, a look-alike host as punycode
        value = shown_address(value)
    return quoted(value, 200) if value != '' else _('(automatic)')


def provider_item(cls: 'type[AIProviderPlugin]', key: str, value: object) -> Item:
    """What becomes of one setting of a provider's: checked against the type calibre writes,
    then against Book AI's option."""
    section, name = cls.display_name, cls.name
    setting = setting_label(key)
    kind = CALIBRE_KINDS.get(key)
    if kind is None:
        return Item(section, setting, quoted(value, 80),
                    why_not=_('Book AI has no such setting for {provider}').format(provider=section))
    if not kind(value):
        words = _('(hidden)') if key in ('api_key', 'headers') else quoted(value, 80)  # never a key, even a wrong one
        return Item(section, setting, words, why_not=_('it is not a value calibre writes for this setting'))
    if key == 'api_key':
        return key_item(cls, value)
    words = value_words(key, value)
    if key in IMAGE_SETTINGS:
        return Item(section, setting, words, why_not=_("Book AI asks for covers at the service's own settings"))
    if key in IMAGE_MODEL_SETTINGS:
        return image_model_item(cls, setting, value, words)
    option, converted = provider_option(name, key, value)
    if option is None:
        return Item(section, setting, words, why_not=converted if isinstance(converted, str) and converted
                    else _('Book AI has no such setting for {provider}').format(provider=section))
    try:
        book_ai_option = cls.option_named(option)
    except KeyError:
        return Item(section, setting, words, why_not=_("Book AI's {provider} has no such setting").format(
            provider=section))
    try:
        converted = book_ai_option.check(converted)
    except ValueError as e:
        return Item(section, setting, words, why_not=str(e))
    return Item(section, setting, words, book_ai_option.label, changes=Changes(providers={name: {option: converted}}))


def provider_option(name: str, key: str, value: object) -> tuple[str | None, object]:
    """(Book AI's option, its value) for calibre's setting key of provider name, value of the
    type calibre writes for it (CALIBRE_KINDS); (None, why in words or '') when there is none."""
    if key == 'reasoning_strategy':
        return 'reasoning_effort', value
    if key == 'model_choice_strategy':
        if name == 'openrouter':
            return 'model_strategy', {'free-only': 'free', 'free-or-paid': 'free_or_paid', 'native': 'auto'}.get(
                text_of(value), value)
        return 'model_tier', value
    if key in ('text_model', 'model'):
        if isinstance(value, (list, tuple)) and value:  # OpenRouter, Venice: (id, name)
            value = value[0]
        elif isinstance(value, dict):  # GitHub: {'name': ..., 'id': ...}
            value = value.get('id', '')
        return 'model', value
    if key == 'allow_web_searches':
        try:
            provider_class(name).option_named('web_search')
        except KeyError:
            return None, _("Book AI's {provider} has no web search").format(provider=provider_class(name).display_name)
        return 'web_search', value
    if key == 'api_url':
        return 'base_url', address(name, value)
    if key == 'timeout':
        return 'read_timeout', float(cast(float, value)) if is_number(value) else value
    if key == 'temperature':
        return 'temperature', float(cast(float, value)) if is_number(value) else value
    if key == 'headers':
        for header_name, header_value in cast(list, value):  # a name that is not a token, a CR, LF or ESC: refused
            try:
                checked_header(header_name, header_value)
            except ValueError as e:
                return None, str(e)
        return 'headers', [list(h) for h in cast(list, value)]
    if key == 'image_quality':
        try:
            provider_class(name).option_named('image_quality')
        except KeyError:
            return None, _("Book AI asks for covers at the service's own settings")
        return 'image_quality', value
    if key == 'safe_mode' and name == 'venice':
        return 'safe_mode', value
    if key == 'data_collection':
        return 'deny_data_collection', {'deny': True, 'allow': False}.get(text_of(value), value)
    return None, ''


def address(name: str, value: object) -> object:
    """Book AI's address (API root) for the api_url calibre kept, as calibre would have used it:
    calibre accepts a full endpoint and adds /v1 where its provider does."""
    if not isinstance(value, str) or not value.strip():
        return value
    value = value.strip()
    try:
        parts = urlsplit(value)
    except ValueError:
        return value
    path = parts.path.rstrip('/')
    for suffix in ('/chat/completions', '/messages', '/models'):
        if path.endswith(suffix):
            path = path[:-len(suffix)]
            break
    if name in ('anthropic', 'openai_compatible', 'lmstudio') and not path:
        path = '/v1'
    if name == 'lmstudio' and not path.endswith('/v1'):
        path += '/v1'
    try:
        return urlunsplit(parts._replace(path=path, fragment=''))
    except ValueError:
        return value


def image_model_item(cls: 'type[AIProviderPlugin]', setting: str, value: object, words: str) -> Item:
    """calibre's image model of a provider: Book AI's image model of the same provider."""
    section = cls.display_name
    if isinstance(value, (list, tuple)) and value:  # (id, name), as calibre keeps OpenRouter's
        value = value[0]
    elif isinstance(value, dict):
        value = value.get('id', '')
    if not cls.capabilities & Capability.IMAGE_GENERATION:
        return Item(section, setting, words, why_not=_("Book AI's {provider} makes no images").format(provider=section))
    if not isinstance(value, str) or not value.strip() or value.strip() == 'auto':
        return Item(section, setting, words, why_not=_('it is chosen automatically, as in Book AI'))
    try:
        option = cls.option_named('image_model')
        checked = option.check(value.strip())
    except KeyError:
        return Item(section, setting, words, why_not=_("Book AI's {provider} has no such setting").format(
            provider=section))
    except ValueError as e:
        return Item(section, setting, words, why_not=str(e))
    return Item(section, setting, words, option.label, changes=Changes(providers={cls.name: {'image_model': checked}}))


def image_provider_item(calibre_name: object) -> Item:
    """calibre's provider of images (AI covers): Book AI's image provider."""
    setting = _('Provider for covers')
    name = PROVIDER_IDS.get(calibre_name) if isinstance(calibre_name, str) else None
    if name not in PROVIDERS:
        return Item(_('AI covers'), setting, named(calibre_name), why_not=_('Book AI has no provider of that name'))
    cls = provider_class(name)
    if not cls.capabilities & Capability.IMAGE_GENERATION:
        return Item(_('AI covers'), setting, cls.display_name,
                    why_not=_("Book AI's {provider} makes no images").format(provider=cls.display_name))
    return Item(_('AI covers'), setting, cls.display_name, _('the provider covers are made with'),
                changes=Changes(prefs={'image_provider': name}))


def cover_items(value: object) -> list[Item]:
    """The choices of calibre's AI covers window (gprefs 'llm-cover-generation'), as Book AI's
    cover settings: each checked against the type calibre writes. A template calibre would run
    as Python is an item of its own, shown whole, carried over only with its own consent."""
    from calibre_plugins.bookai.core.images import ASPECTS  # when calibre has cover settings only
    # when calibre has cover settings only
    from calibre_plugins.bookai.covers.prompt import MAX_CALIBRE_TEMPLATE, MAX_INSTRUCTIONS, runs_code
    from calibre_plugins.bookai.covers.styles import MAX_KEY, MAX_NAME, MAX_TEMPLATE
    section = _('AI covers')
    if not isinstance(value, dict):
        return [Item(section, _('Cover choices'), quoted(value, 80), why_not=_('they are not settings calibre wrote'))]
    items = []

    def wrong(setting: str, key: str, why: str = '') -> None:
        items.append(Item(section, setting, quoted(cast(dict, value)[key], 80),
                          why_not=why or _('it is not a value calibre writes for this setting')))

    aspect = value.get('aspect_ratio')
    if aspect is not None:
        if isinstance(aspect, str) and aspect in ASPECTS:
            items.append(Item(section, _('Aspect ratio'), aspect, _('Aspect ratio'),
                              changes=Changes(prefs={'cover_aspect': aspect})))
        else:
            wrong(_('Aspect ratio'), 'aspect_ratio', _('Book AI offers {shapes}').format(shapes=', '.join(ASPECTS)))
    text = {ours: value[key] for key, ours in COVER_TEXT.items() if type(value.get(key)) is bool}
    for key in COVER_TEXT:
        if key in value and type(value[key]) is not bool:
            wrong(_('Render text on the cover'), key)
    if text:
        items.append(Item(section, _('Render text on the cover'), ', '.join(
            f'{k}: {_("yes") if v else _("no")}' for k, v in text.items()), _('Render text on the cover'),
            changes=Changes(prefs={'cover_text': text})))
    labels = {'title': _('Title template'), 'authors': _('Authors template'), 'series': _('Series template')}
    templates = {}
    for key, ours in COVER_TEMPLATES.items():
        if key not in value:
            continue
        t = value[key]
        if not isinstance(t, str):
            wrong(labels[ours], key)
        elif not all(c.isprintable() or c in '\n\r\t' for c in t):
            wrong(labels[ours], key, _('it has a control character'))
        elif len(t) > MAX_CALIBRE_TEMPLATE:
            items.append(Item(section, labels[ours], quoted(t, 80), why_not=_(
                'it is longer than {count} characters').format(count=MAX_CALIBRE_TEMPLATE)))
        elif t.strip() and runs_code(t):
            items.append(Item(section, labels[ours], quoted(t, 80), labels[ours],
                              changes=Changes(prefs={'cover_templates': {ours: t}}), code=t))
        else:
            templates[ours] = t
    if any(templates.values()):
        items.append(Item(section, _('Templates'), '; '.join(f'{k}: {quoted(v, 80)}' for k, v in templates.items() if v),
                          _('Templates'), changes=Changes(prefs={'cover_templates': templates})))
    if 'include_comments' in value:
        if type(value['include_comments']) is bool:
            items.append(Item(section, _('Send book descriptions to AI as context'),
                              _('yes') if value['include_comments'] else _('no'),
                              _("Send the book's description as context"),
                              changes=Changes(prefs={'cover_description': value['include_comments']})))
        else:
            wrong(_('Send book descriptions to AI as context'), 'include_comments')
    extra = value.get('extra_instructions')
    if extra is not None and not (isinstance(extra, str) and len(extra) <= MAX_INSTRUCTIONS and (
            not extra or is_prompt(extra))):
        wrong(_('Extra instructions'), 'extra_instructions')
    elif isinstance(extra, str) and extra.strip():
        items.append(Item(section, _('Extra instructions'), quoted(extra, 200), _('Extra instructions'),
                          changes=Changes(prefs={'cover_instructions': extra})))
    if 'custom_styles' in value:
        items.extend(styles_items(value['custom_styles'], MAX_KEY, MAX_NAME, MAX_TEMPLATE))
    last = value.get('last_style')
    if last is not None and not (isinstance(last, str) and 0 < len(last) <= MAX_KEY and last.isprintable()):
        wrong(_('Cover style'), 'last_style')
    elif isinstance(last, str):
        items.append(Item(section, _('Cover style'), quoted(last, 80), _('Cover style'),
                          changes=Changes(prefs={'cover_style': last})))
    return items


def styles_items(value: object, most_key: int, most_name: int, most_template: int) -> list[Item]:
    """calibre's own cover styles ([{name, human_name, template}]), added to the reader's saved
    styles. Their templates are the prompt's text, sent as they are: never evaluated."""
    section, setting = _('AI covers'), _('Custom styles')
    if not isinstance(value, list):
        return [Item(section, setting, quoted(value, 80), why_not=_('it is not a list of styles calibre wrote'))]

    def good(s: object) -> bool:
        return isinstance(s, dict) and all(isinstance(s.get(k), str) for k in ('name', 'human_name', 'template')) \
            and 0 < len(s['name']) <= most_key and 0 < len(s['human_name']) <= most_name and \
            0 < len(s['template']) <= most_template and s['name'].isprintable() and s['human_name'].isprintable() \
            and is_prompt(s['template'])
    styles = [s for s in value[:MOST_ACTIONS] if good(s)]
    items = []
    left = len(value) - len(styles)
    if left:
        items.append(Item(section, setting, ngettext('one style', '{count} styles', left).format(count=left),
                          why_not=_('they are not styles calibre wrote')))
    if styles:
        saved = [dict(s) for s in list_of(plugin_prefs()['cover_styles']) if isinstance(s, dict)]
        names = {s.get('name') for s in saved if isinstance(s.get('name'), str)}
        saved += [{k: s[k] for k in ('name', 'human_name', 'template')} for s in styles if s['name'] not in names]
        items.append(Item(section, setting, ', '.join(f'"{quoted(s["human_name"], 60)}"' for s in styles),
                          _('Saved styles'), changes=Changes(prefs={'cover_styles': saved})))
    return items


def key_item(cls: 'type[AIProviderPlugin]', value: object) -> Item:
    """A provider's API key: calibre keeps it hex-encoded; Book AI, in its secret store."""
    section = cls.display_name
    key = decoded_key(value)
    if key is None:
        return Item(section, _('API key'), _('(unreadable)'), why_not=_('it is not a key calibre wrote'))
    if not key:
        return Item(section, _('API key'), _('(none)'), why_not=_('there is none'))
    try:
        cls.option_named('api_key').check(key)
    except (KeyError, ValueError) as e:
        return Item(section, _('API key'), _('(hidden)'), why_not=(str(e) if isinstance(e, ValueError) else '') or _(
            '{provider} takes no key').format(provider=section))
    return Item(section, _('API key'), _('(hidden)'), _("API key, in Book AI's key store"),
                changes=Changes(keys={cls.name: key}))


def decoded_key(value: object) -> str | None:
    """The key calibre hex-encoded (polyglot.binary.as_hex_unicode of its UTF-8); None when it
    is not that."""
    if not isinstance(value, str) or len(value) > LONGEST_TEXT:
        return None
    try:
        return bytes.fromhex(value).decode('utf-8')
    except ValueError:
        return None


def chosen_item(calibre_name: str) -> Item:
    name = PROVIDER_IDS.get(calibre_name)
    if name in PROVIDERS:
        display = provider_class(name).display_name
        return Item(display, _('Chosen for answers'), _('yes'), _('the provider Book AI answers with'),
                    changes=Changes(prefs={'provider': name}))
    return Item(named(calibre_name), _('Chosen for answers'), _('yes'),
                why_not=_('Book AI has no provider of that name'))


def language_item(value: object) -> Item:
    setting = _("Ask the AI to respond in calibre's language")
    section = _('Answers')
    if value == 'always':
        return Item(section, setting, _('yes'), _('Answer language: the language of the interface'),
                    changes=Changes(prefs={'answer_language': 'interface'}))
    if value == 'never':
        return Item(section, setting, _('no'), _('Answer language: not asked for'),
                    changes=Changes(prefs={'answer_language': 'never'}))
    return Item(section, setting, quoted(value, 80), why_not=_('it is neither yes nor no'))


def is_prompt(value: object) -> bool:
    """A quick action's prompt as calibre writes it: text of lines, without other control characters."""
    return isinstance(value, str) and 0 < len(value) <= LONGEST_TEXT and all(
        c.isprintable() or c in '\n\r\t' for c in value)


def actions_item(value: object, builtins: tuple[str, ...], pref: str, section: str, setting: str) -> Item:
    """calibre's quick actions ({'disabled_default_actions': [names], 'custom_actions':
    {title: {'prompt_template', 'disabled'}}}) merged into Book AI's list pref: calibre's own
    actions on or off as there, its custom actions added (or updated, by name). A prompt is
    text sent as it is (conversation.actions.fill_template fills in known names only): a value,
    never evaluated."""
    not_calibres = _('it is not a list of actions calibre wrote')
    if not isinstance(value, dict):
        return Item(section, setting, quoted(value, 80), why_not=not_calibres)
    off = value.get('disabled_default_actions', [])
    customs = value.get('custom_actions', {})
    if not isinstance(off, list) or not all(isinstance(n, str) for n in off) or not isinstance(customs, dict):
        return Item(section, setting, quoted(value, 80), why_not=not_calibres)
    disabled = set(off[:MOST_ACTIONS])
    custom, left = [], 0
    for title, spec in list(customs.items())[:MOST_ACTIONS]:
        if isinstance(title, str) and 0 < len(title) <= LONGEST_NAME and title.isprintable() and \
                isinstance(spec, dict) and is_prompt(spec.get('prompt_template')) and \
                type(spec.get('disabled', False)) is bool:
            custom.append((title, spec['prompt_template'], not spec.get('disabled', False)))
        else:
            left += 1
    left += max(0, len(customs) - MOST_ACTIONS)
    saved = [dict(a) for a in list_of(plugin_prefs()[pref]) if isinstance(a, dict) and isinstance(a.get('name'), str)]
    by_name = {a['name']: a for a in saved}
    for name in builtins:
        entry = by_name.get(name)
        if entry is None:
            entry = by_name[name] = {'name': name}
            saved.append(entry)
        entry['enabled'] = name not in disabled
    by_label = {str(a.get('label', '')).casefold(): a for a in saved if a['name'] not in builtins}
    for title, template, enabled in custom:
        entry = by_label.get(title.casefold())
        if entry is None:
            entry = {'name': action_name(title, set(by_name) | set(builtins)), 'label': title}
            by_name[entry['name']] = by_label[title.casefold()] = entry
            saved.append(entry)
        entry.update(template=template, enabled=enabled)
    words = [_('{count} of calibre\'s own on').format(count=len([n for n in builtins if n not in disabled]))]
    if custom:
        words.append(', '.join(f'"{quoted(t, 60)}"' for t, _t, _e in custom))
    if left:
        words.append(ngettext('one not carried over: not an action calibre wrote',
                              '{count} not carried over: not actions calibre wrote', left).format(count=left))
    return Item(section, setting, '; '.join(words), setting, changes=Changes(prefs={pref: saved}))


def is_field_name(value: object, custom: bool) -> bool:
    return isinstance(value, str) and 1 < len(value) <= LONGEST_NAME and value.isprintable() and \
        value.startswith('#') == custom


def standard_fields_item(value: object) -> Item:
    setting = _('Fields sent with a question')
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        return Item(_('Library'), setting, quoted(value, 80), why_not=_('it is not a list of fields'))
    names = [n for n in value[:MOST_ACTIONS] if is_field_name(n, False)]
    return Item(_('Library'), setting, ', '.join(names) or _('none'),
                _('Fields sent, for every library'), changes=Changes(prefs={'book_fields': sorted(set(names))}))


def custom_fields_item(path: str, found: CalibreSettings, deadline: float | None = None) -> Item | None:
    got = library_prefs(path, found, deadline)
    if got is None:
        return None
    library_id, raw = got
    setting = _('Custom fields sent, library {path}').format(path=quoted(path, 200))
    if library_id is None:
        return Item(_('Library'), setting, _('(unreadable)'), why_not=_('its id is not one calibre writes'))
    try:
        value = load_json(raw) if isinstance(raw, str) else None
    except TooComplex:  # said as what it is: more than Book AI reads, not merely a wrong value
        return Item(_('Library'), setting, _('(unreadable)'), why_not=_(
            'its value is nested deeper, or holds more, than Book AI reads'))
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, list) or not all(is_field_name(n, True) for n in value):
        return Item(_('Library'), setting, _('(unreadable)'), why_not=_('it is not a list of fields'))
    names = sorted(set(value[:MOST_ACTIONS]))
    return Item(_('Library'), setting, ', '.join(names) or _('none'), _('Custom fields sent, for that library'),
                changes=Changes(custom_fields={library_id: names}))


def highlight_item(value: object) -> Item:
    if not isinstance(value, str) or len(value) > LONGEST_NAME or not value.isprintable():
        return Item(_('E-book viewer'), _('Highlight style of notes'), quoted(value, 80),
                    why_not=_('it is not the name of a style'))
    return Item(_('E-book viewer'), _('Highlight style of notes'), quoted(value), _('Highlight style of notes'),
                changes=Changes(prefs={'highlight_style': value}))


def dict_of(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def list_of(value: object) -> list:
    return list(value[:MOST_ACTIONS]) if isinstance(value, (list, tuple)) else []


def text_of(value: object) -> str:
    return value if isinstance(value, str) else ''

# }}}


def carry_over(found: CalibreSettings, sections: Iterable[str] | None = None,
               secrets: SecretStore | None = None, with_code: bool = False) -> list[str]:
    """Write what found holds (only its sections named, when given) into Book AI's settings
    and secret store; the templates that run code (Item.code) only with_code (the reader saw
    them whole and agreed). Returns what could not be done, a sentence each ([] when all was)."""
    wanted = None if sections is None else set(sections)
    changes = Changes()
    for item in found.items:
        if item.carried and (wanted is None or item.section in wanted) and (with_code or not item.code):
            changes.merge(item.changes)
    failed = []
    store = secrets or secret_store()
    for name, key in changes.keys.items():
        try:
            store.set(name, 'api_key', key)
        except Exception as e:  # a keyring that refuses: said, and the rest goes on
            failed.append(_("The key of {provider} could not be kept: {reason}").format(
                provider=provider_class(name).display_name, reason=quoted(e)))
    prefs = plugin_prefs()
    try:
        if changes.providers:
            providers = {k: dict(v) for k, v in prefs['providers'].items()}
            for name, values in changes.providers.items():
                providers.setdefault(name, {}).update(values)
            prefs['providers'] = providers
        for key, value in changes.prefs.items():
            if key in MERGED_PREFS and isinstance(value, dict):
                value = {**dict_of(prefs[key]), **value}
            prefs[key] = value
        if changes.custom_fields:
            prefs['book_custom_fields'] = {**(prefs.get('book_custom_fields') or {}), **changes.custom_fields}
        prefs['calibre_settings_offered'] = True
    except OSError as e:
        from calibre_plugins.bookai.settings.prefs import not_saved  # when carried over only
        failed.append(not_saved(prefs, e))
    return failed


def offer_due(config_dir: str | None = None, libraries: Iterable[str] = ()) -> CalibreSettings | None:
    """What to offer to carry over, when Book AI never has and calibre's AI settings hold
    something it can take; else None. (The windows' first-use offer marks it offered before it
    reads, in a thread: gui/carry_over_offer.py.)"""
    if plugin_prefs()['calibre_settings_offered']:
        return None
    found = read(config_dir, libraries)
    return found if found.found else None


def offered() -> bool:
    """Whether the offer was made already."""
    return plugin_prefs()['calibre_settings_offered'] is True


def mark_offered() -> None:
    """The offer was made: not again (the settings have the same import on demand)."""
    plugin_prefs()['calibre_settings_offered'] = True
