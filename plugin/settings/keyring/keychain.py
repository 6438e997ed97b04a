# License: GPLv3 Copyright: the Book AI developers
"""Secrets in the macOS Keychain, through Apple's `security` command (security(1)):
generic passwords of service SERVICE, one account per provider/name."""

import os
import subprocess

from calibre_plugins.bookai.settings.keyring.store import StoreError, Unavailable, UnlistedStore

SECURITY = '/usr/bin/security'
SERVICE = 'calibre-bookai'
NOT_FOUND = 44  # security's exit code for "The specified item could not be found in the keychain."


def account(provider: str, name: str) -> str:
    return f'{provider}/{name}'


def add_args(provider: str, name: str, value: str) -> list[str]:
    # -U: update the item if it exists. The password is in the arguments for an instant: security
    # reads it from nowhere else without a terminal.
    return [SECURITY, 'add-generic-password', '-U', '-s', SERVICE, '-a', account(provider, name), '-w', value]


def find_args(provider: str, name: str) -> list[str]:
    return [SECURITY, 'find-generic-password', '-s', SERVICE, '-a', account(provider, name), '-w']


def delete_args(provider: str, name: str) -> list[str]:
    return [SECURITY, 'delete-generic-password', '-s', SERVICE, '-a', account(provider, name)]


class Keychain(UnlistedStore):

    label = 'Keychain'

    def __init__(self) -> None:
        if not os.access(SECURITY, os.X_OK):
            raise Unavailable(f'{SECURITY} is missing')

    def run(self, args: list[str], ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
        try:
            r = subprocess.run(args, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise StoreError(f'security {args[1]}: {type(e).__name__}') from None
        if r.returncode not in ok:
            # security's own message names the item, never its password
            raise StoreError(f'security {args[1]}: exit {r.returncode}: {r.stderr.strip()}')
        return r

    def get(self, provider: str, name: str) -> str:
        r = self.run(find_args(provider, name), ok=(0, NOT_FOUND))
        return r.stdout.rstrip('\n') if r.returncode == 0 else ''

    def set(self, provider: str, name: str, value: str) -> None:
        self.run(add_args(provider, name, value))

    def delete(self, provider: str, name: str) -> None:
        self.run(delete_args(provider, name), ok=(0, NOT_FOUND))
