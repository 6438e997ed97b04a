# License: GPLv3 Copyright: the Book AI developers
"""Secrets in the Windows Credential Manager: generic credentials written and read with
advapi32's CredWriteW, CredReadW, CredDeleteW and CredFree (wincred.h), through ctypes."""

import ctypes
from ctypes import wintypes

from calibre_plugins.bookai.settings.keyring.store import StoreError, Unavailable, UnlistedStore

CRED_TYPE_GENERIC = 1
CRED_PERSIST_LOCAL_MACHINE = 2  # kept across log-ons, on this computer only
ERROR_NOT_FOUND = 1168


class CREDENTIAL(ctypes.Structure):  # CREDENTIALW
    _fields_ = [
        ('Flags', wintypes.DWORD),
        ('Type', wintypes.DWORD),
        ('TargetName', wintypes.LPWSTR),
        ('Comment', wintypes.LPWSTR),
        ('LastWritten', wintypes.FILETIME),
        ('CredentialBlobSize', wintypes.DWORD),
        ('CredentialBlob', ctypes.POINTER(ctypes.c_ubyte)),
        ('Persist', wintypes.DWORD),
        ('AttributeCount', wintypes.DWORD),
        ('Attributes', ctypes.c_void_p),
        ('TargetAlias', wintypes.LPWSTR),
        ('UserName', wintypes.LPWSTR),
    ]


def target(provider: str, name: str) -> str:
    return f'calibre-bookai:{provider}/{name}'


def credential(provider: str, name: str, value: str) -> tuple[CREDENTIAL, ctypes.Array]:
    """The CREDENTIALW for CredWriteW; the blob (UTF-8) is returned too, to be kept alive meanwhile."""
    data = value.encode('utf-8')
    blob = (ctypes.c_ubyte * len(data)).from_buffer_copy(data)
    c = CREDENTIAL()
    c.Type = CRED_TYPE_GENERIC
    c.TargetName = target(provider, name)
    c.Comment = 'Book AI (calibre)'
    c.CredentialBlobSize = len(data)
    c.CredentialBlob = ctypes.cast(blob, ctypes.POINTER(ctypes.c_ubyte))
    c.Persist = CRED_PERSIST_LOCAL_MACHINE
    c.UserName = f'{provider}/{name}'
    return c, blob


class CredentialManager(UnlistedStore):

    label = 'Credential Manager'

    def __init__(self) -> None:
        try:
            api = ctypes.WinDLL('advapi32', use_last_error=True)  # type: ignore[attr-defined]  # Windows only
        except (AttributeError, OSError):
            raise Unavailable('advapi32 is missing') from None
        PCREDENTIAL = ctypes.POINTER(CREDENTIAL)
        self.write = api.CredWriteW
        self.write.argtypes, self.write.restype = [PCREDENTIAL, wintypes.DWORD], wintypes.BOOL
        self.read = api.CredReadW
        self.read.argtypes = [wintypes.LPCWSTR, wintypes.DWORD, wintypes.DWORD, ctypes.POINTER(PCREDENTIAL)]
        self.read.restype = wintypes.BOOL
        self.remove = api.CredDeleteW
        self.remove.argtypes, self.remove.restype = [wintypes.LPCWSTR, wintypes.DWORD, wintypes.DWORD], wintypes.BOOL
        self.free = api.CredFree
        self.free.argtypes, self.free.restype = [ctypes.c_void_p], None

    @staticmethod
    def failed(what: str) -> StoreError:
        code = ctypes.get_last_error()  # type: ignore[attr-defined]  # Windows only
        return StoreError(f'{what}: Windows error {code}')

    def get(self, provider: str, name: str) -> str:
        found = ctypes.POINTER(CREDENTIAL)()
        if not self.read(target(provider, name), CRED_TYPE_GENERIC, 0, ctypes.byref(found)):
            if ctypes.get_last_error() == ERROR_NOT_FOUND:  # type: ignore[attr-defined]  # Windows only
                return ''
            raise self.failed('CredReadW')
        try:
            c = found.contents
            return ctypes.string_at(c.CredentialBlob, c.CredentialBlobSize).decode('utf-8')
        finally:
            self.free(found)

    def set(self, provider: str, name: str, value: str) -> None:
        c, blob = credential(provider, name, value)
        if not self.write(ctypes.byref(c), 0):
            raise self.failed('CredWriteW')

    def delete(self, provider: str, name: str) -> None:
        if not self.remove(target(provider, name), CRED_TYPE_GENERIC, 0):
            if ctypes.get_last_error() != ERROR_NOT_FOUND:  # type: ignore[attr-defined]  # Windows only
                raise self.failed('CredDeleteW')
