# License: GPLv3 Copyright: the Book AI developers
"""A damaged settings file (bookai.json) or keys file: the command line and the settings
dialog start, say in a sentence what could not be read, use the defaults for what could not;
the file is never written over: before the first save it is set aside, byte for byte, under
a new name (never over an earlier one), and what was valid in it (other providers' settings)
is kept. (The tests run as root, so a file without read permission is still readable here:
that case is a folder in the file's place, and, in process, an open() that raises
PermissionError.)"""

import json
import os

import pytest

from helpers.books import quick_start_epub
from helpers.sandbox import tracebacks

GOOD = {'provider': 'anthropic', 'providers': {'anthropic': {'model': 'claude-kept'},
                                              'ollama': {'base_url': 'http://127.0.0.1:11434'}}}

DAMAGES = {
    'not JSON': b'{"provider": "anthropic", "providers": {"anthropic": {"model": ',
    'an array': b'[1, 2, 3]',
    'not UTF-8': b'{"provider": "\xff\xfe"}',
    'nested too deep': b'[' * 100_000 + b']' * 100_000,
    'providers a list': json.dumps({'provider': 'anthropic', 'providers': ['anthropic']}).encode(),
    # wrong types inside a file that is otherwise good: what is valid is kept
    'a provider\'s settings a string': json.dumps(dict(GOOD, providers=dict(GOOD['providers'],
                                                                            openai='sk-nothing'))).encode(),
    'a number where text is expected': json.dumps(dict(GOOD, provider=5, book_fields=['tags', 7])).encode(),
}
# what is kept of each: the settings of the providers that were valid
KEPT = {'a provider\'s settings a string': GOOD['providers'], 'a number where text is expected': GOOD['providers']}
SAID = 'Book AI could not read its settings file'


def settings_file(sandbox):
    return sandbox.config / 'plugins' / 'bookai.json'


@pytest.mark.parametrize('damage', DAMAGES)
def test_the_command_line_says_it_keeps_the_file_and_loses_nothing(cli, sandbox, damage):
    path = settings_file(sandbox)
    path.write_bytes(DAMAGES[damage])
    r = cli('providers')
    assert r.returncode == 0 and SAID in r.stderr and str(path) in r.stderr, r
    assert not tracebacks(r.output), r
    assert path.read_bytes() == DAMAGES[damage]  # reading writes nothing
    r = cli('configure', 'openai_compatible', 'base_url=http://127.0.0.1:9/v1')
    assert r.returncode == 0 and not tracebacks(r.output), r
    kept = sandbox.config / 'plugins' / 'bookai.json.damaged'
    assert f'It was kept as {kept}.' in r.stderr, r
    assert kept.read_bytes() == DAMAGES[damage]  # set aside byte for byte, not written over
    saved = json.loads(path.read_text())
    assert saved['providers']['openai_compatible'] == {'base_url': 'http://127.0.0.1:9/v1'}
    for name, settings in KEPT.get(damage, {}).items():
        assert saved['providers'][name] == settings  # the other providers' settings are not lost
    r = cli('providers')
    assert r.returncode == 0 and SAID not in r.stderr and 'openai_compatible' in r.stdout, r


def test_a_second_damage_never_overwrites_the_first(cli, sandbox):
    path = settings_file(sandbox)
    for n, garbage in enumerate((b'{first', b'[2]', b'third}'), 1):
        path.write_bytes(garbage)
        r = cli('configure', 'ollama', 'model=m')
        assert r.returncode == 0, r
    plugins = sandbox.config / 'plugins'
    assert [(plugins / name).read_bytes() for name in ('bookai.json.damaged', 'bookai.json.2.damaged',
                                                        'bookai.json.3.damaged')] == [b'{first', b'[2]', b'third}']


def test_a_folder_in_the_files_place(cli, sandbox):
    path = settings_file(sandbox)
    path.mkdir(parents=True)
    (path / 'inside').write_text('kept')
    r = cli('providers')
    assert r.returncode == 0 and SAID in r.stderr and not tracebacks(r.output), r
    r = cli('configure', 'ollama', 'model=m', '--use')
    assert r.returncode == 0 and not tracebacks(r.output), r
    assert (sandbox.config / 'plugins' / 'bookai.json.damaged' / 'inside').read_text() == 'kept'
    assert json.loads(path.read_text())['provider'] == 'ollama'


def test_a_damaged_keys_file_is_kept_too(cli, sandbox):
    keys = sandbox.config / 'plugins' / 'bookai-secrets.json'
    keys.parent.mkdir(parents=True, exist_ok=True)
    keys.write_bytes(b'{"openai/api_key": ')
    r = cli('configure', 'openai', 'api_key=-', stdin='sk-new-key-0123\n')
    assert not tracebacks(r.output) and 'sk-new-key-0123' not in r.output, r
    assert 'bookai-secrets.json' in r.stderr, r
    assert (sandbox.config / 'plugins' / 'bookai-secrets.json.damaged').read_bytes() == b'{"openai/api_key": '


# in process: an unreadable file, and the settings dialog

@pytest.fixture
def damaged_prefs(monkeypatch, tmp_path):
    """The plugin's preferences, opened from a file of this test's own (damaged by it)."""
    from calibre.utils.config import config_dir
    from calibre_plugins.bookai.settings import prefs
    rel = f'plugins/bookai-damaged-{os.getpid()}-{tmp_path.name}'
    path = os.path.join(config_dir, *rel.split('/')) + '.json'

    def open_with(raw):
        with open(path, 'wb') as f:
            f.write(raw)
        monkeypatch.setattr(prefs, '_opened', [])
        config = prefs.private_config(rel, prefs.PREF_KINDS)
        config.defaults.update(prefs.DEFAULTS)
        monkeypatch.setattr(prefs, '_prefs', config)
        return config
    yield open_with, path
    for name in os.listdir(os.path.dirname(path)):
        if name.startswith(os.path.basename(path)):
            os.remove(os.path.join(os.path.dirname(path), name))


def test_a_file_that_cannot_be_opened_is_said_and_kept(monkeypatch, damaged_prefs):
    from calibre_plugins.bookai.settings import prefs
    open_with, path = damaged_prefs
    real_open = open

    real_read = prefs.read_regular

    def refusing(file, *args, **kw):  # prefs reads its file through core.files.read_regular
        if str(file) == path:
            raise PermissionError(13, 'Permission denied', path)
        return real_read(file, *args, **kw)
    monkeypatch.setattr(prefs, 'read_regular', refusing)
    config = open_with(json.dumps(GOOD).encode())
    assert config['provider'] == '' and config['providers'] == {}  # the defaults, for now
    assert prefs.problems() == [f'{SAID} {path}: Permission denied. Defaults are used for what could not be '
                                'read; the file is kept as it is, under a new name, before anything is saved.']
    config['provider'] = 'ollama'
    with real_open(path + '.damaged', 'rb') as f:
        assert json.loads(f.read()) == GOOD
    assert prefs.problems()[0].endswith(f'It was kept as {path}.damaged.')


def test_wrong_kinds_keep_what_is_valid(damaged_prefs):
    open_with, path = damaged_prefs
    config = open_with(json.dumps(dict(GOOD, book_scopes={'1:2': 'chapter', '1:3': 7}, book_text='yes',
                                       book_text_budget=900)).encode())
    assert config['providers'] == GOOD['providers'] and config['provider'] == 'anthropic'
    assert config['book_scopes'] == {'1:2': 'chapter'} and config['book_text'] is False
    assert config['book_text_budget'] == 900
    assert 'these settings have values of the wrong kind: book_scopes, book_text' in config.problem


def test_the_settings_dialog_says_so(qapp, damaged_prefs, artifacts):
    from calibre_plugins.bookai.gui.settings_dialog import SettingsDialog
    open_with, path = damaged_prefs
    open_with(b'{"provider": "anthropic", ')
    d = SettingsDialog()
    d.show()
    qapp.processEvents()
    label = d.settings.file_problems
    assert label.isVisibleTo(d) and label.text().startswith(f'{SAID} {path}: ')
    assert d.grab().save(str(artifacts / 'settings-damaged-file.png'))
    assert d.settings.commit()
    assert f'It was kept as {path}.damaged.' in label.text()
    with open(path + '.damaged', 'rb') as f:
        assert f.read() == b'{"provider": "anthropic", '
    d.close()


def test_the_text_cache_never_sets_a_damaged_file_over_an_earlier_one(tmp_path):
    import shutil
    from calibre_plugins.bookai.grounding.cache import TextCache
    from calibre_plugins.bookai.grounding.extract import read_epub
    book = tmp_path / 'book.epub'
    shutil.copy(quick_start_epub(), book)
    cache = TextCache(tmp_path / 'cache')
    entry = cache.file_of('lib', 1, 'EPUB')
    for garbage in (b'first damage', b'second damage'):
        cache.text_of('lib', 1, 'EPUB', str(book), read=read_epub)
        with open(entry, 'wb') as f:
            f.write(garbage)
        assert cache.get('lib', 1, 'EPUB', str(book)) is None  # read again, never an error
    assert [open(entry + suffix, 'rb').read() for suffix in ('.damaged', '.2.damaged')] == [
        b'first damage', b'second damage']


@pytest.mark.parametrize('value', [999, 0, -100, 120, '115', 115.0, True, None, [130]])
def test_a_chat_text_size_not_offered_gives_the_default(damaged_prefs, value):
    """The chat's text size is one of those offered: any other value in the file (out of range, between
    two sizes, of another kind) is said and the default used, as the settings of a wrong kind are."""
    from calibre_plugins.bookai.settings import prefs
    open_with, path = damaged_prefs
    config = open_with(json.dumps(dict(GOOD, chat_text_size=value)).encode())
    assert config['chat_text_size'] == 100 and prefs.chat_text_size() == 100
    assert config['provider'] == 'anthropic'  # the rest of the file is read
    assert 'these settings have values of the wrong kind: chat_text_size' in config.problem


@pytest.mark.parametrize('value', [85, 100, 115, 130, 150])
def test_a_chat_text_size_offered_is_read(damaged_prefs, value):
    from calibre_plugins.bookai.settings import prefs
    open_with, path = damaged_prefs
    config = open_with(json.dumps(dict(GOOD, chat_text_size=value)).encode())
    assert config['chat_text_size'] == value and prefs.chat_text_size() == value and not config.problem
    config['chat_text_size'] = 140  # set by other code than the settings dialog: not used either
    assert prefs.chat_text_size() == 100
