# License: GPLv3 Copyright: the Book AI developers
"""calibre's own AI settings carried over into Book AI's, on every host: the files calibre
9.17 writes (its own code, in the forky host) and those of calibre 8.16 (its prefs module from
calibre's history), read, listed, and carried over with consent; keys into the keyring, and
working against real servers; a damaged file told in words, with nothing lost or changed."""

import hashlib
import json
import os
from pathlib import Path

import pytest

from helpers.calibre_ai import (
    AIMOCK_KEY, FIXTURES, LLAMA_KEY, PROVIDERS_8_16, PROVIDERS_9_17, copy_recorded, llm_settings, record,
    set_library_custom_fields,
)
from helpers.keyring_bus import Keyring
from helpers.peers import AiMock, LlamaServer
from helpers.project import HOST

VERSIONS = ('9.17', '8.16')
ANTHROPIC_ANSWER = 'Hello from the Anthropic fixture.'


def calibre_has_ai() -> bool:
    try:
        import calibre.ai.prefs  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize('version', VERSIONS)
def test_the_recorded_files_are_what_calibres_own_code_writes(sandbox, version):
    """On calibre with its AI (forky), calibre's code writes the files again: they must be the
    recorded ones. Elsewhere calibre has no calibre.ai (6.13, 8.5, and 9.17 with its AI removed)."""
    if not calibre_has_ai():
        assert HOST in ('bookworm', 'trixie', 'noai'), HOST
        return
    assert HOST == 'forky', HOST
    if os.environ.get('BOOKAI_RECORD_CALIBRE_AI'):  # to record them again
        record(sandbox, version)
    from helpers.calibre_ai import write_with_calibre
    write_with_calibre(sandbox, version)
    kept = {name: json.loads((FIXTURES / f'calibre-{version}' / name).read_text('utf-8'))
            for name in ('ai.json', 'gui.json', 'viewer-webengine.json')}
    assert llm_settings(sandbox.config) == kept


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob('*.json'))
            if p.name in ('ai.json', 'gui.json', 'viewer-webengine.json')}


@pytest.fixture(scope='module')
def llama():
    with LlamaServer('tiny', api_key=LLAMA_KEY) as server:
        yield server


@pytest.fixture(scope='module')
def aimock(tmp_path_factory):
    folder = tmp_path_factory.mktemp('aimock')
    (folder / 'fixtures.json').write_text(json.dumps({'fixtures': [
        {'match': {'userMessage': 'hello'}, 'response': {'content': ANTHROPIC_ANSWER}}]}))
    with AiMock(folder, api_keys=[AIMOCK_KEY]) as server:
        yield server


@pytest.mark.parametrize('version', VERSIONS)
def test_calibres_settings_are_listed_then_carried_over_and_the_keys_work(
        version, cli, sandbox, library, gnome_keyring, llama, aimock):
    port_of = lambda url: int(url.rsplit(':', 1)[1].split('/')[0])  # noqa: E731
    library_id = set_library_custom_fields(sandbox, library, ['#genre'])
    copy_recorded(version, sandbox.config, port_of(llama.base_url), port_of(aimock.base_url),
                  libraries=(str(library),))
    before = digests(sandbox.config)
    db_before = hashlib.sha256((library / 'metadata.db').read_bytes()).hexdigest()

    # listed, and nothing changed
    r = cli('import-calibre')
    assert r.returncode == 0, r
    assert 'OpenAI compatible' in r.stdout and 'add --yes' in r.stdout
    assert LLAMA_KEY not in r.output and AIMOCK_KEY not in r.output
    assert not (sandbox.config / 'plugins' / 'bookai.json').exists()

    # carried over
    r = cli('import-calibre', '--yes')
    assert r.returncode == 0, r
    assert LLAMA_KEY not in r.output
    saved = json.loads((sandbox.config / 'plugins' / 'bookai.json').read_text('utf-8'))
    providers = saved['providers']
    assert saved['provider'] == 'openai_compatible'
    assert providers['openai_compatible'] == {
        'base_url': f'{llama.base_url}/v1', 'model': 'tiny', 'read_timeout': 60.0, 'temperature': 0.7,
        'headers': [['X-From', 'calibre']]}
    assert saved['answer_language'] == 'interface'
    assert saved['book_fields'] == ['formats', 'pubdate', 'series', 'tags']
    assert saved['book_custom_fields'] == {library_id: ['#genre']}
    library_actions = {a['name']: a for a in saved['library_actions']}
    assert library_actions['universe']['enabled'] is False and library_actions['summarize']['enabled'] is True
    assert library_actions['plot_holes'] == {'name': 'plot_holes', 'label': 'Plot holes',
                                             'template': 'List the plot holes of {title}.', 'enabled': True}
    viewer_actions = {a['name']: a for a in saved['viewer_actions']}
    assert viewer_actions['grammar']['enabled'] is False
    assert viewer_actions['simplify']['template'] == 'Say this more simply: {selected}'
    assert saved['highlight_style'] == 'yellow'
    if version == '9.17':
        assert providers['anthropic'] == {'base_url': f'{aimock.base_url}/v1', 'model': 'claude-from-calibre',
                                          'model_tier': 'low', 'reasoning_effort': 'high', 'web_search': False}
        assert providers['openai'] == {'model_tier': 'high', 'model': 'gpt-5', 'reasoning_effort': 'medium',
                                       'web_search': True, 'image_model': 'gpt-image-1-mini', 'image_quality': 'auto'}
        # AI covers: the provider of images, and the cover window's choices, as calibre's own code saved them
        assert saved['image_provider'] == 'openai'
        assert saved['cover_aspect'] == '2:3' and saved['cover_style'] == 'noir'
        assert saved['cover_text'] == {'title': True, 'authors': False, 'series': True}
        assert saved['cover_templates'] == {'title': '{title:uppercase()}', 'authors': '',
                                            'series': '{series} #{series_index}'}
        assert saved['cover_description'] is True and saved['cover_instructions'] == 'No people on the cover.'
        assert saved['cover_styles'] == [{'name': 'custom_woodcut', 'human_name': 'Woodcut',
                                          'template': 'A black and white woodcut print, bold lines.'}]
        assert 'image_model' not in providers['gemini'] and 'image_model' not in providers['grok']  # 'auto', ''
        assert providers['gemini'] == {'model_tier': 'medium', 'reasoning_effort': 'none', 'web_search': False}
        assert providers['openrouter'] == {'model_strategy': 'free', 'reasoning_effort': 'low',
                                           'deny_data_collection': True,
                                           'model': 'google/gemini-2.0-flash-exp:free'}
        assert providers['ollama'] == {'model': 'llama3.2', 'read_timeout': 300.0,
                                       'base_url': 'http://localhost:11434',
                                       'headers': [['Authorization', 'Basic b2xsYW1h']]}
        assert providers['venice'] == {'model_tier': 'high', 'reasoning_effort': 'low', 'web_search': True,
                                       'model': 'venice-uncensored', 'safe_mode': True}
        assert 'web_search' not in providers['grok']  # Book AI's Grok has none: said, not carried
        assert "Book AI's xAI Grok has no web search" in r.stdout
    else:
        assert providers['github'] == {'model_tier': 'medium', 'model': 'openai/gpt-4.1'}
        assert providers['openrouter'] == {'model_strategy': 'free_or_paid', 'reasoning_effort': 'auto',
                                           'deny_data_collection': False, 'model': 'openai/gpt-5-mini'}

    # the keys: in the keyring, nowhere else
    kept = Keyring(gnome_keyring.address).items()
    names = {'9.17': PROVIDERS_9_17, '8.16': PROVIDERS_8_16}[version]
    keys = {v['api_key'] for v in names.values() if 'api_key' in v}
    assert keys <= set(kept.values())
    files = ''.join(p.read_text('utf-8') for p in (sandbox.config / 'plugins').glob('bookai*.json'))
    assert not any(k in files for k in keys)

    # calibre's files and library: unchanged
    assert digests(sandbox.config) == before
    assert hashlib.sha256((library / 'metadata.db').read_bytes()).hexdigest() == db_before

    # the keys work: llama-server refuses a request without its key, answers with it
    r = cli('ask', '--library', library, '--book', '1', '--prompt', 'Say hello.')
    assert r.returncode == 0 and r.stdout.strip(), r
    if version == '9.17':  # aimock answers only with the key calibre kept for Anthropic
        r = cli('ask', '--library', library, '--book', '1', '--prompt', 'hello', '--provider', 'anthropic')
        assert r.returncode == 0 and ANTHROPIC_ANSWER in r.stdout, r


def test_a_key_that_is_not_carried_over_is_refused_by_the_servers(cli, sandbox, library, llama):
    """The check above is worth something: without calibre's key, llama-server refuses."""
    r = cli('configure', 'openai_compatible', f'base_url={llama.base_url}/v1', 'model=tiny', '--use')
    assert r.returncode == 0, r
    r = cli('ask', '--library', library, '--book', '1', '--prompt', 'Say hello.')
    assert r.returncode == 4 and ('401' in r.stderr or 'key' in r.stderr.lower()), r


DAMAGES = {
    'half-written': lambda text: text[:len(text) // 2],
    'not JSON': lambda text: 'this is not json {',
    'a list': lambda text: '[1, 2, 3]',
    'not UTF-8': lambda text: b'\xff\xfe\x00garbage',
    'nested too deep': lambda text: '[' * 100_000 + ']' * 100_000,
}


@pytest.mark.parametrize('damage', list(DAMAGES))
@pytest.mark.parametrize('name', ['ai.json', 'gui.json', 'viewer-webengine.json'])
def test_a_damaged_calibre_file_is_told_in_words_and_nothing_is_lost_or_changed(cli, sandbox, name, damage):
    copy_recorded('9.17', sandbox.config)
    target = sandbox.config / name
    damaged = DAMAGES[damage](target.read_text('utf-8'))
    target.write_bytes(damaged if isinstance(damaged, bytes) else damaged.encode('utf-8'))
    assert cli('configure', 'ollama', 'model=mine').returncode == 0  # Book AI's own, to be kept
    before = digests(sandbox.config)
    own = json.loads((sandbox.config / 'plugins' / 'bookai.json').read_text('utf-8'))
    r = cli('import-calibre', '--yes')
    assert r.returncode == 7, r
    assert f"calibre's settings file {target} could not be read" in r.stderr
    assert 'Traceback' not in r.output
    assert digests(sandbox.config) == before  # calibre's files as they were, the damaged one too
    assert not list(sandbox.config.glob('*.damaged*')) and not list(sandbox.config.glob('*.json.*'))
    saved = json.loads((sandbox.config / 'plugins' / 'bookai.json').read_text('utf-8'))
    if name == 'ai.json':  # nothing of it: Book AI's own settings as they were
        assert saved['providers'] == own['providers'] == {'ollama': {'model': 'mine'}}
        assert saved.get('provider') == own.get('provider')
    else:  # what could be read is carried over
        assert saved['providers']['ollama']['model'] == 'llama3.2'
        assert saved['provider'] == 'openai_compatible'


def test_no_calibre_settings_is_said_and_nothing_is_written(cli, sandbox):
    r = cli('import-calibre', '--yes')
    assert r.returncode == 0 and "calibre's own AI settings were not found" in r.stdout, r
    assert not (sandbox.config / 'plugins' / 'bookai.json').exists()


def test_calibre_8_11s_language_kept_by_the_viewer_is_read(tmp_path):
    """calibre 8.11 to 8.15 kept "respond in my language" in the viewer's settings."""
    from calibre_plugins.bookai.from_calibre.carry_over import read
    (tmp_path / 'viewer-webengine.json').write_text(json.dumps({'llm_localized_results': 'never'}))
    found = read(str(tmp_path))
    (item,) = found.items
    assert item.changes.prefs == {'answer_language': 'never'} and not found.problems


def test_hostile_values_are_bounded_and_said(tmp_path):
    from calibre_plugins.bookai.from_calibre.carry_over import read
    (tmp_path / 'ai.json').write_text(json.dumps({'providers': {
        'OpenAI compatible': {'api_url': 'ftp://\x1b[2Jevil', 'api_key': 'not hex', 'timeout': -5,
                              'text_model': 'x' * 10},
        'SomeoneElse': {'api_key': '00'},
        'OpenAI': {'api_key': '7365637265740a6b6579'},  # "secret\nkey": not one line
    }, 'purpose_map': ['not', 'a', 'dict'], 'llm_localized_results': 'sometimes'}))
    found = read(str(tmp_path))
    summary = found.summary()
    assert '\x1b' not in summary and 'secret' not in summary
    by = {(i.section, i.setting): i for i in found.items}
    assert not by[('OpenAI compatible', 'API URL')].carried
    assert not by[('OpenAI compatible', 'API key')].carried
    assert not by[('OpenAI compatible', 'Timeout')].carried
    assert by[('OpenAI compatible', 'Model')].carried
    assert not by[('SomeoneElse', 'Settings')].carried
    assert not by[('OpenAI', 'API key')].carried
    assert not by[('Answers', "Ask the AI to respond in calibre's language")].carried


def test_a_library_whose_folder_name_looks_like_an_address_is_read(tmp_path):
    """A library folder may be named "Books #1 ?%20": its database is opened as that file, read-only."""
    import sqlite3
    from calibre_plugins.bookai.from_calibre.carry_over import read
    library = tmp_path / 'Books #1 ?%20'
    library.mkdir()
    conn = sqlite3.connect(library / 'metadata.db')
    conn.executescript("CREATE TABLE preferences (id INTEGER PRIMARY KEY, key TEXT, val TEXT);"
                       "CREATE TABLE library_id (id INTEGER PRIMARY KEY, uuid TEXT);"
                       "INSERT INTO library_id (uuid) VALUES ('lib-uuid');"
                       "INSERT INTO preferences (key, val) VALUES ('llm-book-allowed-custom-fields', '[\"#mood\"]');")
    conn.commit()
    conn.close()
    before = (library / 'metadata.db').read_bytes()
    found = read(str(tmp_path), libraries=[str(library)])
    (item,) = found.items
    assert item.changes.custom_fields == {'lib-uuid': ['#mood']} and not found.problems
    assert (library / 'metadata.db').read_bytes() == before
