# License: GPLv3 Copyright: the Book AI developers
"""API keys in the system's keyring: a real GNOME Keyring on a private session bus,
checked by reading the keyring directly over D-Bus; the owner-only file where there is
no keyring; keys of earlier versions moved from the file; and the settings saying where."""

import os
import stat
import uuid

import pytest
from qt.core import QLabel

from calibre_plugins.bookai.providers.registry import get_provider
from calibre_plugins.bookai.settings.keyring import Unavailable
from calibre_plugins.bookai.settings.keyring.secret_service import SecretService
from calibre_plugins.bookai.settings.prefs import plugin_prefs, private_config
from calibre_plugins.bookai.settings.secrets import SecretStore
from helpers.keyring_bus import Keyring

KEY = 'sk-keyring-test-0123456789abcdef'
IN_KEYRING = "Kept in your system's keyring (Secret Service)."
IN_FILE = ("Kept in calibre's configuration folder, readable only by you: this system has no keyring "
           "Book AI can use.")


@pytest.fixture
def secrets_file():
    """A file of the test's own in calibre's config folder, in place of bookai-secrets.json."""
    return f'plugins/bookai-secrets-test-{uuid.uuid4().hex}'


def file_of(rel):
    from calibre.utils.config import config_dir
    return os.path.join(config_dir, *rel.split('/')) + '.json'


def file_text(rel):
    try:
        with open(file_of(rel)) as f:
            return f.read()
    except FileNotFoundError:
        return ''


@pytest.fixture
def keyring(gnome_keyring):
    k = Keyring(gnome_keyring.address)
    yield k
    k.close()


def test_keys_are_stored_read_replaced_and_deleted_in_the_keyring(keyring, secrets_file):
    prefs_before = file_text('plugins/bookai')
    store = SecretStore(secrets_file)
    assert store.where() == IN_KEYRING
    store.set('openai', 'api_key', KEY)
    assert keyring.items() == {('openai', 'api_key'): KEY}
    assert store.get('openai', 'api_key') == KEY
    assert SecretStore(secrets_file).get('openai', 'api_key') == KEY  # as the next calibre reads it
    store.set('openai', 'api_key', KEY + '-replaced')
    store.set('anthropic', 'api_key', 'sk-ant-other-0123456789')
    assert keyring.items() == {('openai', 'api_key'): KEY + '-replaced',
                               ('anthropic', 'api_key'): 'sk-ant-other-0123456789'}
    store.delete('openai', 'api_key')
    assert keyring.items() == {('anthropic', 'api_key'): 'sk-ant-other-0123456789'}
    assert store.get('openai', 'api_key') == ''
    store.set('anthropic', 'api_key', '')  # an empty key is no key
    assert keyring.items() == {}
    assert not os.path.exists(file_of(secrets_file))  # the file was never even written
    assert file_text('plugins/bookai') == prefs_before


def test_old_keys_move_from_the_file_into_the_keyring_once(keyring, secrets_file):
    old = private_config(secrets_file)
    old['openai/api_key'] = KEY
    old['gemini/api_key'] = 'gemini-old-key-0123456789'
    store = SecretStore(secrets_file)
    assert keyring.items() == {}  # nothing moves before a key is used
    assert store.get('gemini', 'api_key') == 'gemini-old-key-0123456789'
    assert keyring.items() == {('openai', 'api_key'): KEY, ('gemini', 'api_key'): 'gemini-old-key-0123456789'}
    assert KEY not in file_text(secrets_file) and 'gemini-old' not in file_text(secrets_file)
    assert private_config(secrets_file) == {}
    # the next calibre finds nothing to move, and the keys where they are
    assert SecretStore(secrets_file).get('openai', 'api_key') == KEY
    assert len(keyring.items()) == 2


def test_keys_stay_in_the_file_when_the_move_fails(gnome_keyring, keyring, secrets_file):
    old = private_config(secrets_file)
    old['openai/api_key'] = KEY

    def keyring_that_goes_away():
        service = SecretService()
        gnome_keyring.processes[-1].kill()  # gnome-keyring-daemon: the store fails from now on
        gnome_keyring.processes[-1].wait()
        return service

    store = SecretStore(secrets_file, keyring_that_goes_away)
    assert store.get('openai', 'api_key') == KEY
    assert private_config(secrets_file) == {'openai/api_key': KEY}


def test_without_a_session_bus_keys_go_to_an_owner_only_file(no_session_bus, secrets_file):
    with pytest.raises(Unavailable):
        SecretService()
    store = SecretStore(secrets_file)
    assert store.where() == IN_FILE
    store.set('openai', 'api_key', KEY)
    assert KEY in file_text(secrets_file)
    assert stat.S_IMODE(os.stat(file_of(secrets_file)).st_mode) == 0o600
    assert SecretStore(secrets_file).get('openai', 'api_key') == KEY
    store.delete('openai', 'api_key')
    assert KEY not in file_text(secrets_file)


def test_a_bus_without_a_secret_service_means_the_file(session_bus, secrets_file):
    assert not session_bus.has_owner('org.freedesktop.secrets')
    store = SecretStore(secrets_file)
    assert store.where() == IN_FILE
    store.set('openai', 'api_key', KEY)
    assert private_config(secrets_file) == {'openai/api_key': KEY}


def test_a_locked_keyring_nobody_unlocks_means_the_file(keyring, secrets_file):
    keyring.lock()  # and no prompter on this bus: the unlock prompt cannot be answered
    with pytest.raises(Unavailable, match='the prompt was dismissed'):
        SecretService(prompt_timeout=20)
    store = SecretStore(secrets_file, lambda: SecretService(prompt_timeout=20))
    assert store.where() == IN_FILE
    store.set('openai', 'api_key', KEY)
    assert private_config(secrets_file) == {'openai/api_key': KEY}


def test_the_store_is_chosen_once_and_only_when_a_key_is_used(keyring, secrets_file):
    opened = []

    def open_store():
        opened.append(SecretService())
        return opened[-1]

    store = SecretStore(secrets_file, open_store)
    assert opened == []
    store.set('openai', 'api_key', KEY)
    store.get('openai', 'api_key')
    store.where()
    store.delete('openai', 'api_key')
    assert len(opened) == 1


def config_widget_for(qapp, name, store):
    from qt.core import QLineEdit
    from calibre_plugins.bookai.gui.provider_config import ProviderConfigWidget
    w = ProviderConfigWidget(get_provider(name, settings={}, secrets=store))
    w.show()
    qapp.processEvents()
    editor = w.editors['api_key']
    assert isinstance(editor, QLineEdit)
    return w, editor


def shown_texts(w):
    return [label.text() for label in w.findChildren(QLabel) if label.isVisibleTo(w)]


@pytest.fixture
def saved_providers():
    prefs = plugin_prefs()
    before = dict(prefs['providers'])
    yield prefs
    prefs['providers'] = before


def test_the_provider_settings_keep_a_typed_key_in_the_keyring_and_say_so(qapp, keyring, secrets_file,
                                                                         saved_providers, artifacts):
    store = SecretStore(secrets_file)
    w, editor = config_widget_for(qapp, 'openai', store)
    assert IN_KEYRING in shown_texts(w)
    editor.setText(KEY)
    w.commit()
    assert keyring.items() == {('openai', 'api_key'): KEY}
    assert KEY not in file_text('plugins/bookai') and not os.path.exists(file_of(secrets_file))
    w.resize(640, 420)
    assert w.grab().save(str(artifacts / 'provider-key-in-keyring.png'))
    w.close()


def test_the_provider_settings_say_when_the_key_goes_to_the_file(qapp, no_session_bus, secrets_file,
                                                                saved_providers, artifacts):
    store = SecretStore(secrets_file)
    w, editor = config_widget_for(qapp, 'anthropic', store)
    assert IN_FILE in shown_texts(w)
    editor.setText(KEY)
    w.commit()
    assert private_config(secrets_file) == {'anthropic/api_key': KEY}
    assert KEY not in file_text('plugins/bookai')
    w.resize(640, 420)
    assert w.grab().save(str(artifacts / 'provider-key-in-file.png'))
    w.close()
