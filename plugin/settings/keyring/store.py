# License: GPLv3 Copyright: the Book AI developers
"""What every system store is (SystemStore), the base of those that cannot list Book AI's
secrets (UnlistedStore), and the two ways a store fails. The stores' modules import this,
never the package, so that no import goes round in a circle."""

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

    def get(self, provider: str, name: str) -> str:
        raise NotImplementedError()

    def delete(self, provider: str, name: str) -> None:
        raise NotImplementedError()

    def delete_all(self, names: Iterable[tuple[str, str]]) -> int:
        count = 0
        for provider, name in names:
            if self.get(provider, name):
                count += 1
            self.delete(provider, name)
        return count
