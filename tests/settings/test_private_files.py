# License: GPLv3 Copyright: the Book AI developers
"""Where settings and keys are written, and who can read them."""

import os
import stat

from calibre_plugins.bookai.providers.registry import get_provider
from calibre_plugins.bookai.core.files import write_private
from calibre_plugins.bookai.settings.prefs import plugin_prefs
from calibre_plugins.bookai.settings.secrets import secret_store


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_saving_a_provider_keeps_the_key_out_of_the_settings_file(qapp):
    from calibre_plugins.bookai.gui.provider_config import ProviderConfigWidget
    provider = get_provider('anthropic')
    w = ProviderConfigWidget(provider)
    w.editors['api_key'].setText('sk-ant-private-0123456789')
    w.editors['max_tokens'].setValue(1234)
    w.commit()
    prefs_file, secrets_file = plugin_prefs().file_path, secret_store().config.file_path
    with open(prefs_file) as f:
        settings_text = f.read()
    assert 'sk-ant-private' not in settings_text and '1234' in settings_text
    with open(secrets_file) as f:
        assert 'sk-ant-private-0123456789' in f.read()
    assert mode(prefs_file) == mode(secrets_file) == 0o600
    saved = get_provider('anthropic')  # a new instance reads what was saved
    assert saved.config.api_key == 'sk-ant-private-0123456789' and saved.config.option('max_tokens') == 1234
    secret_store().delete('anthropic', 'api_key')
    assert get_provider('anthropic').config.api_key == ''


def test_private_files_are_never_readable_by_others(tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / 'x.json'
        write_private(str(path), '{"a": 1}')
        assert mode(path) == 0o600
        path.chmod(0o644)
        write_private(str(path), '{"a": 2}')  # replacing a readable file does not keep it readable
        assert mode(path) == 0o600 and path.read_text() == '{"a": 2}'
        assert [p.name for p in tmp_path.iterdir()] == ['x.json']  # no temporary left behind
    finally:
        os.umask(old)
