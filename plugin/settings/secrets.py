# License: GPLv3 Copyright: the Book AI developers
"""API keys, kept apart from the other settings.

For now they live in <calibre config>/plugins/bookai-secrets.json, owner-only
(0600), so that the settings file can be shown or shared without a key in it.
"""

from calibre_plugins.bookai.settings.prefs import private_config


class SecretStore:

    def __init__(self):
        self._config = None

    @property
    def config(self):
        if self._config is None:
            self._config = private_config('plugins/bookai-secrets')
        return self._config

    @staticmethod
    def key(provider, name):
        return f'{provider}/{name}'

    def get(self, provider, name):
        return self.config.get(self.key(provider, name)) or ''

    def set(self, provider, name, value):
        if value:
            self.config[self.key(provider, name)] = value
        else:
            self.delete(provider, name)

    def delete(self, provider, name):
        self.config.pop(self.key(provider, name), None)
        self.config.commit()


_store = None


def secret_store():
    global _store
    if _store is None:
        _store = SecretStore()
    return _store
