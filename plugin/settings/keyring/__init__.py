# License: GPLv3 Copyright: the Book AI developers
"""The operating system's own store for passwords: Secret Service on Linux and the
other Unix desktops, the Keychain on macOS, the Credential Manager on Windows.

open_system_store() gives the one this system has, or raises Unavailable. Each
store keeps a secret under (provider, name), marked as Book AI's, and offers
get(provider, name) ('' when there is none), set(provider, name, value),
delete(provider, name) and delete_all() (Book AI's secrets, where it can find them
all; else those of the names given). Nothing here is imported before a key is read
or written.
"""


class Unavailable(Exception):
    """This system has no store Book AI can use, or it refused (locked, or the user said no)."""


class StoreError(Exception):
    """The store failed while in use. The message never holds a secret."""


class UnlistedStore:
    """A store Book AI cannot search for its own secrets (the Keychain, the Credential Manager):
    delete_all() goes by the (provider, name) pairs given."""

    def delete_all(self, names):
        count = 0
        for provider, name in names:
            if self.get(provider, name):
                count += 1
            self.delete(provider, name)
        return count


def open_system_store():
    import sys
    if sys.platform == 'win32':
        from calibre_plugins.bookai.settings.keyring.credential_manager import CredentialManager
        return CredentialManager()
    if sys.platform == 'darwin':
        from calibre_plugins.bookai.settings.keyring.keychain import Keychain
        return Keychain()
    from calibre_plugins.bookai.settings.keyring.secret_service import SecretService
    return SecretService()
