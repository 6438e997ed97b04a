# License: GPLv3 Copyright: the Book AI developers
"""The operating system's own store for passwords: Secret Service on Linux and the
other Unix desktops, the Keychain on macOS, the Credential Manager on Windows.

open_system_store() gives the one this system has, or raises Unavailable. Each
store (a SystemStore) keeps a secret under (provider, name), marked as Book AI's, and offers
get(provider, name) ('' when there is none), set(provider, name, value),
delete(provider, name) and delete_all() (Book AI's secrets, where it can find them
all; else those of the names given). No store's module is imported before a key is read
or written.
"""

import sys

from calibre_plugins.bookai.settings.keyring.store import StoreError, SystemStore, Unavailable, UnlistedStore

__all__ = ('StoreError', 'SystemStore', 'Unavailable', 'UnlistedStore', 'open_system_store')


def open_system_store() -> SystemStore:
    """The store this system has; Unavailable when it has none Book AI can use."""
    # each store's module is imported on its own system only, and only when a key is first read or written
    if sys.platform == 'win32':
        from calibre_plugins.bookai.settings.keyring.credential_manager import CredentialManager  # Windows only
        return CredentialManager()
    if sys.platform == 'darwin':
        from calibre_plugins.bookai.settings.keyring.keychain import Keychain  # macOS only
        return Keychain()
    from calibre_plugins.bookai.settings.keyring.secret_service import SecretService  # the other systems only
    return SecretService()
