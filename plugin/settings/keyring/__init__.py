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
from collections.abc import Iterable
from typing import Protocol


class Unavailable(Exception):
    """This system has no store Book AI can use, or it refused (locked, or the user said no)."""


class StoreError(Exception):
    """The store failed while in use. The message never holds a secret."""


class SystemStore(Protocol):
    """What every store offers."""

    label: str  # its name, as the settings show it

    def get(self, provider: str, name: str) -> str: ...

    def set(self, provider: str, name: str, value: str) -> None: ...

    def delete(self, provider: str, name: str) -> None: ...

    def delete_all(self, names: Iterable[tuple[str, str]]) -> int: ...


class UnlistedStore:
    """A store Book AI cannot search for its own secrets (the Keychain, the Credential Manager):
    delete_all() goes by the (provider, name) pairs given."""

    def delete_all(self, names: Iterable[tuple[str, str]]) -> int:
        count = 0
        for provider, name in names:
            if self.get(provider, name):
                count += 1
            self.delete(provider, name)
        return count


def open_system_store() -> SystemStore:
    """The store this system has; Unavailable when it has none Book AI can use."""
    # each store's module is imported on its own system only, and only when a key is first read or written
    if sys.platform == 'win32':
        from calibre_plugins.bookai.settings.keyring.credential_manager import CredentialManager
        return CredentialManager()
    if sys.platform == 'darwin':
        from calibre_plugins.bookai.settings.keyring.keychain import Keychain
        return Keychain()
    from calibre_plugins.bookai.settings.keyring.secret_service import SecretService
    return SecretService()
