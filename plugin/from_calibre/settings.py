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
where there is one). calibre's files are only read (a library's database opened read-only),
each one bounded in size; one that cannot be read is told in words and nothing of it is used.
"""

import json
import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from calibre_plugins.bookai.conversation.actions import action_name
from calibre_plugins.bookai.providers.base import Capability
from calibre_plugins.bookai.providers.options import shown
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
MOST_LIBRARIES = 64           # libraries looked at for their custom fields
MOST_ACTIONS = 200            # quick actions taken from one list
LONGEST_TEXT = 20_000         # characters of one template, name or value


@dataclass
class Changes:
    """What carrying over writes: option values per provider, Book AI settings, keys, and the
    custom fields of each library (by its id)."""
    providers: dict[str, dict[str, object]] = field(default_factory=dict)
    prefs: dict[str, object] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    custom_fields: dict[str, list[str]] = field(default_factory=dict)

    def merge(self, other: 'Changes') -> None:
        for name, values in other.providers.items():
            self.providers.setdefault(name, {}).update(values)
        self.prefs.update(other.prefs)
        self.keys.update(other.keys)
        self.custom_fields.update(other.custom_fields)


@dataclass
class Item:
    """One setting of calibre's AI: what it is, its value in words, and where it lands in
    Book AI (destination) or why it does not (why_not)."""
    section: str
    setting: str
    value: str
    destination: str = ''
    why_not: str = ''
    changes: Changes = field(default_factory=Changes)

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

    def summary(self) -> str:
        """Everything found, as plain text: a heading per section, a line per setting (what
        could not be read is in problems)."""
        lines = []
        for section in self.sections():
            lines.append(section)
            for i in self.items:
                if i.section == section:
                    where = i.destination if i.carried else _('not carried over: {why}').format(why=i.why_not)
                    lines.append(f'  {i.setting}: {i.value} → {where}')
        return '\n'.join(lines)


def calibre_config_dir() -> str:
    from calibre.constants import config_dir
    return config_dir


def read(config_dir: str | None = None, libraries: Iterable[str] = ()) -> CalibreSettings:
    """calibre's AI settings in config_dir (default: calibre's config folder), and the custom
    fields of the libraries calibre has used (from gui.json) and of libraries (folders)."""
    folder = config_dir or calibre_config_dir()
    found = CalibreSettings()
    ai = read_json(os.path.join(folder, 'ai.json'), found)
    gui = read_json(os.path.join(folder, 'gui.json'), found)
    viewer = read_json(os.path.join(folder, 'viewer-webengine.json'), found)
    chosen = text_of(dict_of(ai.get('purpose_map')).get(CHAT_PURPOSE))
    for calibre_name, settings in dict_of(ai.get('providers')).items():
        if isinstance(settings, dict) and settings:
            found.items.extend(provider_items(str(calibre_name), settings, calibre_name == chosen))
    if chosen and chosen not in dict_of(ai.get('providers')):
        found.items.append(chosen_item(chosen))
    for purpose, provider in dict_of(ai.get('purpose_map')).items():
        if purpose == IMAGE_PURPOSE:  # 9.14 and later: the provider of AI covers
            found.items.append(image_provider_item(provider))
        elif purpose != CHAT_PURPOSE:
            found.items.append(Item(_('Answers'), _('Provider for {purpose}').format(
                purpose=shown(str(purpose).removeprefix('AICapabilities.'), 60)), shown(provider, 80),
                why_not=_('Book AI has no use for this purpose')))
    language = ai.get('llm_localized_results', viewer.get('llm_localized_results'))
    if language is not None:
        found.items.append(language_item(language))
    if 'llm_book_quick_actions' in gui:
        found.items.append(actions_item(gui['llm_book_quick_actions'], LIBRARY_BUILTINS, 'library_actions',
                                        _('Library'), _('Quick actions of the Discuss window')))
    if 'llm-book-allowed-standard-fields' in gui:
        found.items.append(standard_fields_item(gui['llm-book-allowed-standard-fields']))
    if 'llm-cover-generation' in gui:
        found.items.extend(cover_items(gui['llm-cover-generation']))
    paths = list(dict.fromkeys([*libraries, *dict_of(gui.get('library_usage_stats'))]))
    for path in paths[:MOST_LIBRARIES]:
        if isinstance(path, str) and path:
            item = custom_fields_item(path, found)
            if item is not None:
                found.items.append(item)
    if 'llm_quick_actions' in viewer:
        found.items.append(actions_item(viewer['llm_quick_actions'], VIEWER_BUILTINS, 'viewer_actions',
                                        _('E-book viewer'), _('Quick actions of the Ask AI panel')))
    if viewer.get('llm_highlight_style'):
        found.items.append(highlight_item(viewer['llm_highlight_style']))
    return found


# reading calibre's files {{{

def read_json(path: str, found: CalibreSettings) -> dict:
    """The settings in one of calibre's JSON files, read as Book AI reads its own (bounded); {}
    when there is none, or when it cannot be read (then found.problems says why, in words)."""
    try:
        data = read_settings_file(path, lambda raw: json.loads(raw.decode('utf-8')))
    except OSError as e:
        return damaged(path, e.strerror or str(e), found)
    except (ValueError, RecursionError) as e:  # not JSON (half-written), not UTF-8, nested too deep, too large
        return damaged(path, shown(str(e) or type(e).__name__), found)
    return data


def damaged(path: str, reason: str, found: CalibreSettings) -> dict:
    found.problems.append(_("calibre's settings file {path} could not be read: {reason}. Nothing of it is "
                            'carried over, and it is left as it is.').format(path=path, reason=reason))
    return {}


def library_prefs(path: str, found: CalibreSettings) -> tuple[str, object] | None:
    """(the library's id, its 'llm-book-allowed-custom-fields') from its metadata.db, opened
    read-only; None when it has no such setting or is not a library."""
    db = os.path.join(path, 'metadata.db')
    if not os.path.isfile(db):
        return None
    try:
        conn = sqlite3.connect(Path(os.path.abspath(db)).as_uri() + '?mode=ro', uri=True, timeout=5)  # % # ? quoted
        try:
            row = conn.execute("SELECT val FROM preferences WHERE key='llm-book-allowed-custom-fields'").fetchone()
            uuid = conn.execute('SELECT uuid FROM library_id').fetchone()
        finally:
            conn.close()
    except sqlite3.Error as e:
        found.problems.append(_('The calibre library {path} could not be read: {reason}. Its fields are not '
                                'carried over, and it is left as it is.').format(path=path, reason=shown(e)))
        return None
    if row is None or uuid is None:
        return None
    try:
        value = json.loads(row[0]) if isinstance(row[0], str) and len(row[0]) < LONGEST_TEXT else None
    except (ValueError, RecursionError):
        value = None
    return str(uuid[0]), value

# }}}


# what becomes of each setting {{{

def provider_items(calibre_name: str, settings: dict, chosen: bool) -> list[Item]:
    """The items of one of calibre's providers."""
    name = PROVIDER_IDS.get(calibre_name)
    section = shown(calibre_name, 80)
    if name not in PROVIDERS:
        return [Item(section, _('Settings'), _('{count} settings').format(count=len(settings)),
                     why_not=_('Book AI has no provider of that name'))]
    cls = provider_class(name)
    section = cls.display_name
    items = []
    for key, value in settings.items():
        items.append(provider_item(cls, str(key), value))
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


def value_words(key: str, value: object) -> str:
    """A value of calibre's, as the offer shows it: yes or no, a model's id, header names with
    their values hidden (they may carry a key), else the value on one line."""
    if isinstance(value, bool):
        return _('yes') if value else _('no')
    if key == 'headers' and isinstance(value, (list, tuple)):
        names = [str(h[0]) for h in value[:20] if isinstance(h, (list, tuple)) and h]
        return ', '.join(f'{shown(n, 60)}: …' for n in names) or _('none')
    if key in ('text_model', 'text_to_image_model') and isinstance(value, (list, tuple)) and value:
        value = value[0]
    elif isinstance(value, dict) and 'id' in value:
        value = value['id']
    return shown(value, 200) if value != '' else _('(automatic)')


def provider_item(cls: type, key: str, value: object) -> Item:
    """What becomes of one setting of a provider's."""
    section, name = cls.display_name, cls.name
    if key == 'api_key':
        return key_item(cls, value)
    setting, words = calibre_labels().get(key, shown(key, 80)), value_words(key, value)
    if key in IMAGE_SETTINGS:
        return Item(section, setting, words, why_not=_("Book AI asks for covers at the service's own settings"))
    if key in IMAGE_MODEL_SETTINGS:
        return image_model_item(cls, setting, value, words)
    option, converted = provider_option(name, key, value)
    if option is None:
        return Item(section, setting, words, why_not=converted if isinstance(converted, str) and converted
                    else _('Book AI has no such setting for {provider}').format(provider=section))
    try:
        converted = cls.option_named(option).check(converted)
    except ValueError as e:
        return Item(section, setting, words, why_not=str(e))
    return Item(section, setting, words, cls.option_named(option).label,
                changes=Changes(providers={name: {option: converted}}))


def provider_option(name: str, key: str, value: object) -> tuple[str | None, object]:
    """(Book AI's option, its value) for calibre's setting key of provider name; (None, why
    in words or '') when there is none."""
    if key == 'reasoning_strategy':
        return 'reasoning_effort', value
    if key == 'model_choice_strategy':
        if name == 'openrouter':
            return 'model_strategy', {'free-only': 'free', 'free-or-paid': 'free_or_paid', 'native': 'auto'}.get(
                value, value)
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
        return 'read_timeout', float(value) if type(value) in (int, float) else value
    if key == 'temperature':
        return 'temperature', float(value) if type(value) in (int, float) else value
    if key == 'headers':
        return 'headers', value
    if key == 'image_quality':
        try:
            provider_class(name).option_named('image_quality')
        except KeyError:
            return None, _("Book AI asks for covers at the service's own settings")
        return 'image_quality', value
    if key == 'safe_mode' and name == 'venice':
        return 'safe_mode', value
    if key == 'data_collection':
        return 'deny_data_collection', {'deny': True, 'allow': False}.get(value, value)
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
    return urlunsplit(parts._replace(path=path, fragment=''))


def image_model_item(cls: type, setting: str, value: object, words: str) -> Item:
    """calibre's image model of a provider: Book AI's image model of the same provider."""
    section = cls.display_name
    if isinstance(value, (list, tuple)) and value:  # (id, name), as calibre keeps OpenRouter's
        value = value[0]
    if not cls.capabilities & Capability.IMAGE_GENERATION:
        return Item(section, setting, words, why_not=_("Book AI's {provider} makes no images").format(provider=section))
    if not isinstance(value, str) or not value.strip() or value.strip() == 'auto':
        return Item(section, setting, words, why_not=_('it is chosen automatically, as in Book AI'))
    try:
        checked = cls.option_named('image_model').check(value.strip())
    except ValueError as e:
        return Item(section, setting, words, why_not=str(e))
    return Item(section, setting, words, cls.option_named('image_model').label,
                changes=Changes(providers={cls.name: {'image_model': checked}}))


def image_provider_item(calibre_name: object) -> Item:
    """calibre's provider of images (AI covers): Book AI's image provider."""
    setting = _('Provider for covers')
    name = PROVIDER_IDS.get(calibre_name) if isinstance(calibre_name, str) else None
    if name not in PROVIDERS:
        return Item(_('AI covers'), setting, shown(calibre_name, 80), why_not=_('Book AI has no provider of that name'))
    cls = provider_class(name)
    if not cls.capabilities & Capability.IMAGE_GENERATION:
        return Item(_('AI covers'), setting, cls.display_name,
                    why_not=_("Book AI's {provider} makes no images").format(provider=cls.display_name))
    return Item(_('AI covers'), setting, cls.display_name, _('the provider covers are made with'),
                changes=Changes(prefs={'image_provider': name}))


def cover_items(value: object) -> list[Item]:
    """The choices of calibre's AI covers window (gprefs 'llm-cover-generation'), as Book AI's
    cover settings."""
    section = _('AI covers')
    if not isinstance(value, dict):
        return [Item(section, _('Cover choices'), shown(value, 80), why_not=_('they are not settings calibre wrote'))]
    items = []
    aspect = value.get('aspect_ratio')
    if aspect is not None:
        from calibre_plugins.bookai.core.images import ASPECTS
        if aspect in ASPECTS:
            items.append(Item(section, _('Aspect ratio'), aspect, _('Aspect ratio'),
                              changes=Changes(prefs={'cover_aspect': aspect})))
        else:
            items.append(Item(section, _('Aspect ratio'), shown(aspect, 40),
                              why_not=_('Book AI offers {shapes}').format(shapes=', '.join(ASPECTS))))
    text = {ours: value[key] for key, ours in COVER_TEXT.items() if type(value.get(key)) is bool}
    if text:
        items.append(Item(section, _('Render text on the cover'), ', '.join(
            f'{k}: {_("yes") if v else _("no")}' for k, v in text.items()), _('Render text on the cover'),
            changes=Changes(prefs={'cover_text': {**plugin_prefs()['cover_text'], **text}})))
    templates = {ours: value[key][:LONGEST_TEXT] for key, ours in COVER_TEMPLATES.items()
                 if isinstance(value.get(key), str)}
    if any(templates.values()):
        items.append(Item(section, _('Templates'), '; '.join(f'{k}: {shown(v, 80)}' for k, v in templates.items() if v),
                          _('Templates'), changes=Changes(prefs={'cover_templates': {
                              **plugin_prefs()['cover_templates'], **templates}})))
    if type(value.get('include_comments')) is bool:
        items.append(Item(section, _('Send book descriptions to AI as context'),
                          _('yes') if value['include_comments'] else _('no'),
                          _("Send the book's description as context"),
                          changes=Changes(prefs={'cover_description': value['include_comments']})))
    if isinstance(value.get('extra_instructions'), str) and value['extra_instructions'].strip():
        items.append(Item(section, _('Extra instructions'), shown(value['extra_instructions'], 200),
                          _('Extra instructions'), changes=Changes(prefs={
                              'cover_instructions': value['extra_instructions'][:LONGEST_TEXT]})))
    styles = [s for s in list_of(value.get('custom_styles')) if isinstance(s, dict)
              and all(isinstance(s.get(k), str) and 0 < len(s[k]) < LONGEST_TEXT for k in ('name', 'human_name', 'template'))]
    if styles:
        saved = [dict(s) for s in list_of(plugin_prefs()['cover_styles']) if isinstance(s, dict)]
        names = {s.get('name') for s in saved}
        saved += [{k: s[k] for k in ('name', 'human_name', 'template')} for s in styles if s['name'] not in names]
        items.append(Item(section, _('Custom styles'), ', '.join(f'"{shown(s["human_name"], 60)}"' for s in styles),
                          _('Saved styles'), changes=Changes(prefs={'cover_styles': saved})))
    if isinstance(value.get('last_style'), str) and 0 < len(value['last_style']) < 200:
        items.append(Item(section, _('Cover style'), shown(value['last_style'], 80), _('Cover style'),
                          changes=Changes(prefs={'cover_style': value['last_style']})))
    return items


def key_item(cls: type, value: object) -> Item:
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
        return Item(section, _('API key'), _('(hidden)'), why_not=str(e) or _('{provider} takes no key').format(
            provider=section))
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
    return Item(shown(calibre_name, 80), _('Chosen for answers'), _('yes'),
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
    return Item(section, setting, shown(value, 80), why_not=_('it is neither yes nor no'))


def actions_item(value: object, builtins: tuple[str, ...], pref: str, section: str, setting: str) -> Item:
    """calibre's quick actions ({'disabled_default_actions': [names], 'custom_actions':
    {title: {'prompt_template', 'disabled'}}}) merged into Book AI's list pref: calibre's own
    actions on or off as there, its custom actions added (or updated, by name)."""
    if not isinstance(value, dict):
        return Item(section, setting, shown(value, 80), why_not=_('it is not a list of actions calibre wrote'))
    disabled = {str(n) for n in list_of(value.get('disabled_default_actions'))}
    custom = []
    for title, spec in list(dict_of(value.get('custom_actions')).items())[:MOST_ACTIONS]:
        if isinstance(spec, dict) and isinstance(spec.get('prompt_template'), str) and title:
            custom.append((str(title)[:200], spec['prompt_template'][:LONGEST_TEXT], not spec.get('disabled')))
    saved = [dict(a) for a in list_of(plugin_prefs()[pref]) if isinstance(a, dict) and 'name' in a]
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
        words.append(', '.join(f'"{shown(t, 60)}"' for t, _t, _e in custom))
    return Item(section, setting, '; '.join(words), setting, changes=Changes(prefs={pref: saved}))


def standard_fields_item(value: object) -> Item:
    names = [n for n in list_of(value) if isinstance(n, str) and not n.startswith('#') and len(n) < 100]
    return Item(_('Library'), _('Fields sent with a question'), ', '.join(names) or _('none'),
                _('Fields sent, for every library'), changes=Changes(prefs={'book_fields': sorted(names)}))


def custom_fields_item(path: str, found: CalibreSettings) -> Item | None:
    got = library_prefs(path, found)
    if got is None:
        return None
    library_id, value = got
    names = [n for n in list_of(value) if isinstance(n, str) and n.startswith('#') and len(n) < 100]
    setting = _('Custom fields sent, library {path}').format(path=shown(path, 200))
    if value is None:
        return Item(_('Library'), setting, _('(unreadable)'), why_not=_('it is not a list of fields'))
    return Item(_('Library'), setting, ', '.join(names) or _('none'), _('Custom fields sent, for that library'),
                changes=Changes(custom_fields={library_id: sorted(names)}))


def highlight_item(value: object) -> Item:
    if not isinstance(value, str) or len(value) > 200:
        return Item(_('E-book viewer'), _('Highlight style of notes'), shown(value, 80),
                    why_not=_('it is not the name of a style'))
    return Item(_('E-book viewer'), _('Highlight style of notes'), shown(value), _('Highlight style of notes'),
                changes=Changes(prefs={'highlight_style': value}))


def dict_of(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def list_of(value: object) -> list:
    return list(value[:MOST_ACTIONS]) if isinstance(value, (list, tuple)) else []


def text_of(value: object) -> str:
    return value if isinstance(value, str) else ''

# }}}


def carry_over(found: CalibreSettings, sections: Iterable[str] | None = None,
               secrets: SecretStore | None = None) -> list[str]:
    """Write what found holds (only its sections named, when given) into Book AI's settings
    and secret store. Returns what could not be done, a sentence each ([] when all was)."""
    wanted = None if sections is None else set(sections)
    changes = Changes()
    for item in found.items:
        if item.carried and (wanted is None or item.section in wanted):
            changes.merge(item.changes)
    failed = []
    store = secrets or secret_store()
    for name, key in changes.keys.items():
        try:
            store.set(name, 'api_key', key)
        except Exception as e:  # a keyring that refuses: said, and the rest goes on
            failed.append(_("The key of {provider} could not be kept: {reason}").format(
                provider=provider_class(name).display_name, reason=shown(e)))
    prefs = plugin_prefs()
    try:
        if changes.providers:
            providers = {k: dict(v) for k, v in prefs['providers'].items()}
            for name, values in changes.providers.items():
                providers.setdefault(name, {}).update(values)
            prefs['providers'] = providers
        for key, value in changes.prefs.items():
            prefs[key] = value
        if changes.custom_fields:
            prefs['book_custom_fields'] = {**(prefs.get('book_custom_fields') or {}), **changes.custom_fields}
        prefs['calibre_settings_offered'] = True
    except OSError as e:
        from calibre_plugins.bookai.settings.prefs import not_saved
        failed.append(not_saved(prefs, e))
    return failed


def offer_due(config_dir: str | None = None, libraries: Iterable[str] = ()) -> CalibreSettings | None:
    """What to offer to carry over, when Book AI never has and calibre's AI settings hold
    something it can take; else None."""
    if plugin_prefs()['calibre_settings_offered']:
        return None
    found = read(config_dir, libraries)
    return found if found.found else None


def mark_offered() -> None:
    """The offer was made: not again (the settings have the same import on demand)."""
    plugin_prefs()['calibre_settings_offered'] = True

