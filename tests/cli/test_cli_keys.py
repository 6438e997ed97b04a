# License: GPLv3 Copyright: the Book AI developers
"""`configure` when the system's keyring refuses a key: a sentence and a non-zero exit, no
traceback, and the key neither kept nor shown."""

import io

from calibre_plugins.bookai import cli
from calibre_plugins.bookai.settings import secrets
from calibre_plugins.bookai.settings.keyring import StoreError

KEY = 'sk-refused-by-the-keyring-0123'


class RefusingKeyring:
    """A keyring that is there but keeps nothing (locked again, full, its daemon gone):
    no real keyring here can be made to fail half-way on demand."""
    label = 'Secret Service'

    def get(self, provider, name):
        return ''

    def set(self, provider, name, value):
        raise StoreError('Secret Service: the item was not created')

    def delete(self, provider, name):
        pass


def test_a_key_the_keyring_refuses_is_said_in_words(monkeypatch):
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    prefs = plugin_prefs()
    before = prefs['provider'], prefs['providers']
    store = secrets.SecretStore(file='plugins/bookai-secrets-refused', open_system_store=RefusingKeyring)
    monkeypatch.setattr(secrets, '_store', store)
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(['configure', 'openai', 'api_key=-'], stdin=io.StringIO(KEY + '\n'), stdout=out, stderr=err)
    assert code == cli.NOT_CONFIGURED
    assert "keyring did not keep the key for OpenAI" in err.getvalue()
    assert KEY not in out.getvalue() + err.getvalue()
    assert store.get('openai', 'api_key') == '' and KEY not in dict(store.config.items()).values()
    assert prefs['provider'] == before[0]
    prefs['providers'] = before[1]
