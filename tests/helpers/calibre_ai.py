# License: GPLv3 Copyright: the Book AI developers
"""calibre's own AI settings, as a reader of calibre 8.16 or 9.17 would have them, written by
calibre's own code: calibre.ai.prefs (9.17's, in the forky host; 8.16's, from calibre's
history, tests/from_calibre/fixtures/calibre_8_16_ai_prefs.py), calibre's gprefs and the
viewer's vprefs, and a library's preferences through calibre's database API.

The files written on forky are kept in tests/from_calibre/fixtures/calibre-<version>/ so that
every host reads the same bytes; a test on forky writes them again with calibre's code and
checks that they are still what is kept. Addresses name placeholder ports (LLAMA_PORT,
AIMOCK_PORT) that a test replaces with its live servers'.
"""

import json
from pathlib import Path

from helpers.project import TESTS

FIXTURES = TESTS / 'from_calibre' / 'fixtures'
LLAMA_PORT, AIMOCK_PORT = 65001, 65002
LLAMA_KEY = 'sk-llama-from-calibre-0123'
AIMOCK_KEY = 'sk-ant-from-calibre-4567'
FILES = ('ai.json', 'gui.json', 'viewer-webengine.json')

# what each calibre's dialogs would have saved: the shapes of their ConfigWidget.settings (9.17)
PROVIDERS_9_17 = {
    'OpenAI compatible': {'api_url': f'http://127.0.0.1:{LLAMA_PORT}', 'api_key': LLAMA_KEY, 'text_model': 'tiny',
                          'timeout': 60, 'temperature': 0.7, 'headers': [['X-From', 'calibre']]},
    'Anthropic': {'api_key': AIMOCK_KEY, 'api_url': f'http://127.0.0.1:{AIMOCK_PORT}', 'model_choice_strategy': 'low',
                  'model': 'claude-from-calibre', 'reasoning_strategy': 'high', 'allow_web_searches': False},
    'OpenAI': {'api_key': 'sk-openai-from-calibre-89', 'model_choice_strategy': 'high', 'text_model': 'gpt-5',
               'reasoning_strategy': 'medium', 'allow_web_searches': True, 'image_model_strategy': 'high',
               'text_to_image_model': 'gpt-image-1-mini', 'image_quality': 'auto'},
    'GoogleAI': {'api_key': 'AIza-from-calibre-0123', 'model_choice_strategy': 'medium', 'reasoning_strategy': 'none',
                 'allow_web_searches': False, 'image_model': 'auto'},
    'OpenRouter': {'api_key': 'sk-or-from-calibre-0123', 'model_choice_strategy': 'free-only',
                   'reasoning_strategy': 'low', 'data_collection': 'deny',
                   'text_model': ['google/gemini-2.0-flash-exp:free', 'Gemini 2.0 Flash Experimental (free)']},
    'OllamaAI': {'text_model': 'llama3.2', 'timeout': 300, 'api_url': 'http://localhost:11434',
                 'headers': [['Authorization', 'Basic b2xsYW1h']]},
    'Venice AI': {'api_key': 'venice-from-calibre-0123', 'model_choice_strategy': 'high', 'reasoning_strategy': 'low',
                  'allow_web_searches': True, 'safe_mode': True,
                  'text_model': ['venice-uncensored', 'Venice Uncensored 1.1']},
    'Grok': {'api_key': 'xai-from-calibre-0123', 'model_choice_strategy': 'medium', 'text_model': '',
             'reasoning_strategy': 'auto', 'allow_web_searches': True, 'image_resolution': '1k',
             'text_to_image_model': ''},
}
# 8.16's: fewer providers, GitHub's model as {'name', 'id'}
PROVIDERS_8_16 = {
    'OpenAI compatible': PROVIDERS_9_17['OpenAI compatible'],
    'GoogleAI': {'api_key': 'AIza-from-calibre-0123', 'model_choice_strategy': 'high', 'reasoning_strategy': 'low',
                 'allow_web_searches': True},
    'OpenRouter': {'api_key': 'sk-or-from-calibre-0123', 'model_choice_strategy': 'free-or-paid',
                   'reasoning_strategy': 'auto', 'data_collection': 'allow',
                   'text_model': ['openai/gpt-5-mini', 'GPT-5 Mini']},
    'GitHubAI': {'api_key': 'github_pat_from_calibre_0123', 'model_choice_strategy': 'medium',
                 'text_model': {'name': 'OpenAI GPT-4.1', 'id': 'openai/gpt-4.1'}},
}
LIBRARY_ACTIONS = {'disabled_default_actions': ['universe'], 'custom_actions': {
    'Plot holes': {'disabled': False, 'title': 'Plot holes', 'prompt_template': 'List the plot holes of {title}.'}}}
VIEWER_ACTIONS = {'disabled_default_actions': ['grammar'], 'custom_actions': {
    'Simplify': {'disabled': False, 'title': 'Simplify', 'prompt_template': 'Say this more simply: {selected}'}}}
STANDARD_FIELDS = ['formats', 'pubdate', 'series', 'tags']
# calibre 9.17's AI covers window's choices, saved by its own functions (gui2/dialogs/llm_cover.py)
COVER_CHOICES = {'aspect_ratio': '2:3', 'include_title': True, 'include_authors': False, 'include_series': True,
                 'include_comments': True, 'last_style': 'noir', 'title_template': '{title:uppercase()}',
                 'authors_template': '', 'series_template': '{series} #{series_index}',
                 'extra_instructions': 'No people on the cover.'}
COVER_STYLE = ('Woodcut', 'A black and white woodcut print, bold lines.')

WRITE = '''
import importlib.util, json, sys
version, providers, chosen = {version!r}, json.loads({providers!r}), {chosen!r}
if version == '8.16':
    spec = importlib.util.spec_from_file_location('calibre_8_16_ai_prefs', {prefs_8_16!r})
    ai = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ai)
else:
    import calibre.ai.prefs as ai
for name, settings in providers.items():
    if 'api_key' in settings:
        settings['api_key'] = ai.encode_secret(settings['api_key'])
    if isinstance(settings.get('text_model'), list):
        settings['text_model'] = tuple(settings['text_model'])
    ai.set_prefs_for_provider(name, settings)
p = ai.prefs()
p.set('purpose_map', {{'AICapabilities.text_to_text': chosen, 'AICapabilities.text_to_image': 'OpenAI'}})
p.set('llm_localized_results', 'always')
from calibre.gui2 import gprefs
gprefs.set('llm_book_quick_actions', json.loads({library_actions!r}))
gprefs.set('llm-book-allowed-standard-fields', json.loads({standard_fields!r}))
from calibre.gui2.viewer.config import vprefs
vprefs.set('llm_quick_actions', json.loads({viewer_actions!r}))
vprefs.set('llm_highlight_style', 'yellow')
if version == '9.17':  # AI covers (9.14 and later), saved as calibre's cover window saves them
    from calibre.gui2.dialogs.llm_cover import add_custom_style, cover_prefs, save_cover_prefs
    vals = cover_prefs()
    vals.update(json.loads({cover_choices!r}))
    save_cover_prefs(vals)
    add_custom_style(*json.loads({cover_style!r}))
'''


def write_with_calibre(sandbox, version: str) -> None:
    """Write calibre's AI settings into the sandbox's calibre config with calibre's own code
    (on a calibre that has calibre.ai: 9.17's, or 8.16's prefs module run on it)."""
    providers = PROVIDERS_9_17 if version == '9.17' else PROVIDERS_8_16
    code = WRITE.format(version=version, providers=json.dumps(providers), chosen='OpenAI compatible',
                        prefs_8_16=str(FIXTURES / 'calibre_8_16_ai_prefs.py'),
                        library_actions=json.dumps(LIBRARY_ACTIONS), standard_fields=json.dumps(STANDARD_FIELDS),
                        viewer_actions=json.dumps(VIEWER_ACTIONS), cover_choices=json.dumps(COVER_CHOICES),
                        cover_style=json.dumps(COVER_STYLE))
    r = sandbox.debug(code)
    assert r.returncode == 0, r


def llm_settings(folder: Path) -> dict[str, dict]:
    """What the files in folder hold of calibre's AI settings, file by file."""
    out = {}
    for name in FILES:
        data = json.loads((folder / name).read_text('utf-8'))
        out[name] = {k: v for k, v in data.items() if k in ('providers', 'purpose_map', 'llm_localized_results')
                     or k.startswith(('llm_', 'llm-'))}
    return out


def copy_recorded(version: str, config: Path, llama_port: int = LLAMA_PORT, aimock_port: int = AIMOCK_PORT,
                  libraries: tuple[str, ...] = ()) -> None:
    """Put the recorded calibre files of version into the calibre config folder config, their
    addresses pointing at the live servers and gui.json naming libraries as used."""
    config.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        text = (FIXTURES / f'calibre-{version}' / name).read_text('utf-8')
        text = text.replace(f':{LLAMA_PORT}', f':{llama_port}').replace(f':{AIMOCK_PORT}', f':{aimock_port}')
        if name == 'gui.json' and libraries:
            data = json.loads(text)
            data['library_usage_stats'] = {path: 1 for path in libraries}
            text = json.dumps(data, indent=2)
        (config / name).write_text(text, 'utf-8')


def record(sandbox, version: str) -> None:
    """Write the files of version with calibre's code and keep them as the recorded fixtures."""
    write_with_calibre(sandbox, version)
    dest = FIXTURES / f'calibre-{version}'
    dest.mkdir(parents=True, exist_ok=True)
    for name, values in llm_settings(sandbox.config).items():
        (dest / name).write_text(json.dumps(values, indent=2, sort_keys=True) + '\n', 'utf-8')


def set_library_custom_fields(sandbox, library: Path, fields: list[str]) -> str:
    """Choose custom fields for the library through calibre's own database API, as calibre's Metadata tab
    does (db.set_pref); returns the library's id."""
    code = ('import json; from calibre.library import db; d = db({lib!r}).new_api; '
            'd.set_pref("llm-book-allowed-custom-fields", json.loads({fields!r})); print(d.library_id)').format(
        lib=str(library), fields=json.dumps(fields))
    r = sandbox.debug(code)
    assert r.returncode == 0, r
    return r.stdout.strip().splitlines()[-1]

