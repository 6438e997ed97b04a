# License: GPLv3 Copyright: the Book AI developers
"""API keys, kept apart from the other settings: in the operating system's own store
(settings/keyring) where it has one, else in <calibre config>/plugins/bookai-secrets.json,
owner-only (0600), so that the settings file can be shown or shared without a key in it.

The store is chosen once per process, when a key is first read or written: importing
this opens nothing. Keys that earlier versions kept in the file move to the system's
store then, and leave the file only once read back from it.
"""

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from calibre_plugins.bookai.settings.keyring import StoreError, SystemStore, Unavailable, open_system_store
from calibre_plugins.bookai.settings.prefs import private_config, text

if TYPE_CHECKING:
    from calibre.utils.config import JSONConfig

load_translations()

FILE = 'plugins/bookai-secrets'


class SecretStore:
    """Where Book AI keeps its API keys: the system's store, else the fallback file."""

    def __init__(self, file: str = FILE, open_system_store: Callable[[], SystemStore] | None = None) -> None:
        """file: the fallback file, relative to calibre's config folder; open_system_store:
        gives the system's store or raises keyring.Unavailable (default: the real one)."""
        self._file, self._open_system_store = file, open_system_store
        self._config = None
        self._unchosen = object()
        self._system: SystemStore | None | object = self._unchosen  # until system is first read
        self._lock = threading.RLock()  # keys are read from worker threads too

    @property
    def config(self) -> 'JSONConfig':
        """The fallback file."""
        if self._config is None:
            self._config = private_config(self._file, {None: text})  # "provider/name": the key
        return self._config

    @property
    def system(self) -> SystemStore | None:
        """The system's store, or None when it has none Book AI can use."""
        with self._lock:
            if self._system is self._unchosen:
                try:
                    self._system = (self._open_system_store or open_system_store)()
                except Unavailable:
                    self._system = None
                if self._system is not None:
                    self.move_old_keys()
            return cast('SystemStore | None', self._system)

    @staticmethod
    def key(provider: str, name: str) -> str:
        """The name of a key in the fallback file."""
        return f'{provider}/{name}'

    def move_old_keys(self) -> None:
        """Into the system's store, the keys the file holds; a key leaves the file only once
        it reads back from there, so nothing is lost when the store fails."""
        moved = []
        for key, value in list(self.config.items()):
            provider, _sep, name = key.partition('/')
            try:
                if value:
                    self.keep_in_system(provider, name, value)
            except StoreError:
                continue
            moved.append(key)
        for key in moved:
            self.config.pop(key, None)
        if moved:
            self.config.commit()

    def get(self, provider: str, name: str) -> str:
        """The key kept for provider under name; '' when there is none."""
        with self._lock:
            value = ''
            if self.system is not None:
                try:
                    value = self.system.get(provider, name)
                except StoreError:
                    pass  # locked again, and the user said no: as if there were no key
            return value or self.config.get(self.key(provider, name)) or ''

    def set(self, provider: str, name: str, value: str) -> None:
        """Raises keyring.StoreError when the system's store fails: the key is not kept then."""
        if not value:
            return self.delete(provider, name)
        with self._lock:
            system = self.system
            if system is None:
                self.config[self.key(provider, name)] = value
                return
            self.keep_in_system(provider, name, value)
            self.forget_in_file(self.key(provider, name))

    def keep_in_system(self, provider: str, name: str, value: str) -> None:
        """Into the system's store, and read back: StoreError if it did not keep the key."""
        store = cast(SystemStore, self._system)  # called once system gave a store
        store.set(provider, name, value)
        if store.get(provider, name) != value:
            raise StoreError(f'{store.label}: the key did not read back')

    def delete(self, provider: str, name: str) -> None:
        with self._lock:
            if self.system is not None:
                self.system.delete(provider, name)
            self.forget_in_file(self.key(provider, name))

    def forget_in_file(self, key: str) -> None:
        if key in self.config:
            self.config.pop(key)
            self.config.commit()

    def delete_all(self, names: Iterable[tuple[str, str]] = ()) -> int:
        """Every key of Book AI's: in the system's store (those of the (provider, name) pairs
        given, where the store cannot be searched) and in the file. The number deleted."""
        with self._lock:
            in_file = [key for key, value in self.config.items() if value]
            count = len(in_file)
            if self.system is not None:
                count += self.system.delete_all(names)
            if self.config:
                self.config.clear()
                self.config.commit()
            return count

    def where(self) -> str:
        """Where the keys are kept, in a sentence for the settings."""
        if self.system is not None:
            return _('Kept in your system\'s keyring ({store}).').format(store=self.system.label)
        return _('Kept in calibre\'s configuration folder, readable only by you: this system has no '
                 'keyring Book AI can use.')



def not_kept(provider: str) -> str:
    """What the reader is told when the system's keyring did not keep a key (provider: its display name)."""
    return _('Your system\'s keyring did not keep the key for {provider}. Unlock the keyring, '
             'then type the key again.').format(provider=provider)


_store = None


def secret_store() -> SecretStore:
    """The process's one SecretStore."""
    global _store
    if _store is None:
        _store = SecretStore()
    return _store
