# License: GPLv3 Copyright: the Book AI developers
"""calibre's ai.json, gui.json and viewer-webengine.json fuzzed (issue 26, finding 6): every key
calibre writes given every JSON type, at every level, and the recorded files of calibre 9.17 and
8.16 damaged byte by byte. read() must end in words every time: never an exception, never the
guard's "unforeseen" (a shape no check foresaw), and what it would carry over must be a value
Book AI's own checks accept (each provider option by its Option.check, each setting by the
settings file's own cleaner), without a control character in the listing."""

import json
import os
import re
import tempfile

from helpers.calibre_ai import FIXTURES
from helpers.fuzzing import fuzz, mutate
from hypothesis import given, strategies as st

CALIBRE_PROVIDERS = ('OpenAI', 'Anthropic', 'GoogleAI', 'OpenRouter', 'OllamaAI', 'LMStudio', 'OpenAI compatible',
                     'Grok', 'Venice AI', 'GitHubAI', 'Someone else')
PROVIDER_KEYS = ('api_key', 'api_url', 'model_choice_strategy', 'text_model', 'model', 'reasoning_strategy',
                 'allow_web_searches', 'timeout', 'temperature', 'headers', 'data_collection', 'image_model_strategy',
                 'text_to_image_model', 'image_model', 'image_quality', 'image_resolution', 'safe_mode', 'other')
PURPOSES = ('AICapabilities.text_to_text', 'AICapabilities.text_to_image', 'AICapabilities.embedding')
COVER_KEYS = ('aspect_ratio', 'include_title', 'include_authors', 'include_series', 'include_comments', 'last_style',
              'title_template', 'authors_template', 'series_template', 'extra_instructions', 'custom_styles')
RAW_CONTROL = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f]')

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=30),
                    st.sampled_from(['deny', 'allow', 'free-only', 'always', 'never', '2:3', 'auto', '', '#genre',
                                     'python:\ndef evaluate(book, context):\n    return "x"', '{title}',
                                     'http://127.0.0.1:1/v1', '6162', 'X-A', 'a\r\nb', '\x1b[2J']))
values = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)), max_leaves=12)


def keyed(keys, value_strategy=values):
    """Objects of some of keys (and a stray one) with any JSON value."""
    return st.dictionaries(st.sampled_from(keys), value_strategy, max_size=len(keys))


def action_specs():
    spec = keyed(('prompt_template', 'disabled', 'title')) | values
    return keyed(('disabled_default_actions', 'custom_actions'), values | st.dictionaries(st.text(max_size=12), spec,
                                                                                         max_size=4)) | values


ai_files = st.fixed_dictionaries({}, optional={
    'providers': st.dictionaries(st.sampled_from(CALIBRE_PROVIDERS), keyed(PROVIDER_KEYS) | values, max_size=5) | values,
    'purpose_map': keyed(PURPOSES, st.sampled_from(CALIBRE_PROVIDERS) | values) | values,
    'llm_localized_results': values,
})
gui_files = st.fixed_dictionaries({}, optional={
    'llm_book_quick_actions': action_specs(),
    'llm-book-allowed-standard-fields': values,
    'llm-cover-generation': keyed(COVER_KEYS) | values,
    'library_usage_stats': values,
})
viewer_files = st.fixed_dictionaries({}, optional={
    'llm_quick_actions': action_specs(), 'llm_highlight_style': values, 'llm_localized_results': values})


def checked(found) -> None:
    """What read() gives is words, and what it would carry over Book AI would accept."""
    from calibre_plugins.bookai.from_calibre.carry_over import UNFORESEEN, Changes
    from calibre_plugins.bookai.providers.registry import provider_class
    from calibre_plugins.bookai.settings.prefs import PREF_KINDS, accepts
    summary = found.summary()
    assert isinstance(summary, str) and not RAW_CONTROL.search(summary), summary
    for problem in found.problems:
        assert isinstance(problem, str) and problem.endswith('.') and not RAW_CONTROL.search(problem)
    merged = Changes()
    for item in found.items:
        assert isinstance(item.section, str) and item.section and isinstance(item.setting, str) and item.setting
        assert isinstance(item.value, str)
        assert UNFORESEEN not in item.why_not, (item, 'a shape no check foresaw')
        if item.carried:
            assert item.destination
            merged.merge(item.changes)
    for name, options in merged.providers.items():
        cls = provider_class(name)
        for option, value in options.items():
            assert cls.option_named(option).check(value) == value, (name, option, value)
    for key, value in merged.prefs.items():
        assert accepts(PREF_KINDS[key], value), (key, value)
    for key in merged.keys.values():
        assert isinstance(key, str) and key and key.isprintable()
    for library_id, names in merged.custom_fields.items():
        assert isinstance(library_id, str) and all(isinstance(n, str) and n.startswith('#') for n in names)


def read_files(files: dict) -> object:
    from calibre_plugins.bookai.from_calibre.carry_over import read
    with tempfile.TemporaryDirectory() as folder:
        for name, data in files.items():
            with open(os.path.join(folder, name), 'wb') as f:
                f.write(data)
        return read(folder)


@fuzz(3000)
@given(ai=ai_files, gui=gui_files, viewer=viewer_files)
def test_every_key_calibre_writes_with_every_json_type_ends_in_words(ai, gui, viewer):
    files = {'ai.json': json.dumps(ai).encode(), 'gui.json': json.dumps(gui).encode(),
             'viewer-webengine.json': json.dumps(viewer).encode()}
    checked(read_files(files))


RECORDED = {version: {name: (FIXTURES / f'calibre-{version}' / name).read_bytes()
                      for name in ('ai.json', 'gui.json', 'viewer-webengine.json')}
            for version in ('9.17', '8.16')}


@fuzz(2000)
@given(data=st.data())
def test_calibres_own_files_damaged_end_in_words(data):
    version = data.draw(st.sampled_from(sorted(RECORDED)))
    files = dict(RECORDED[version])
    name = data.draw(st.sampled_from(sorted(files)))
    files[name] = mutate(data.draw, files[name], st.sampled_from(
        [b'[', b'{', b'"', b'0', b'true', b'null', b'\x1b', b'\r\n', b'[]', b'{}', b'1e400', b'NaN', b'"\\u0000"']), 1)
    checked(read_files(files))
