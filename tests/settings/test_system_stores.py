# License: GPLv3 Copyright: the Book AI developers
"""The macOS Keychain and Windows Credential Manager stores cannot run here: what they
would ask of the system is checked instead, against security(1) and wincred.h."""

import ctypes
import sys

import pytest

from calibre_plugins.bookai.settings.keyring import Unavailable, credential_manager, keychain, open_system_store
from calibre_plugins.bookai.settings.keyring.secret_service import SecretService


def test_keychain_commands():
    assert keychain.add_args('openai', 'api_key', 'sk-1') == [
        '/usr/bin/security', 'add-generic-password', '-U', '-s', 'calibre-bookai', '-a', 'openai/api_key',
        '-w', 'sk-1']
    assert keychain.find_args('openai', 'api_key') == [
        '/usr/bin/security', 'find-generic-password', '-s', 'calibre-bookai', '-a', 'openai/api_key', '-w']
    assert keychain.delete_args('openai', 'api_key') == [
        '/usr/bin/security', 'delete-generic-password', '-s', 'calibre-bookai', '-a', 'openai/api_key']
    with pytest.raises(Unavailable):  # no /usr/bin/security on Linux
        keychain.Keychain()


def test_credential_manager_credential():
    c, blob = credential_manager.credential('anthropic', 'api_key', 'sk-ant-é')
    assert c.Type == 1 and c.Persist == 2  # CRED_TYPE_GENERIC, CRED_PERSIST_LOCAL_MACHINE
    assert c.TargetName == 'calibre-bookai:anthropic/api_key'
    assert c.CredentialBlobSize == len('sk-ant-é'.encode('utf-8'))
    assert ctypes.string_at(c.CredentialBlob, c.CredentialBlobSize).decode('utf-8') == 'sk-ant-é'
    assert c.AttributeCount == 0 and not c.Attributes
    # the fields of CREDENTIALW, in wincred.h's order (its size can only be checked on Windows,
    # where a DWORD has 4 bytes: 80 on 64 bits)
    assert [f[0] for f in credential_manager.CREDENTIAL._fields_] == [
        'Flags', 'Type', 'TargetName', 'Comment', 'LastWritten', 'CredentialBlobSize', 'CredentialBlob',
        'Persist', 'AttributeCount', 'Attributes', 'TargetAlias', 'UserName']
    with pytest.raises(Unavailable):  # no advapi32 on Linux
        credential_manager.CredentialManager()


def test_linux_uses_the_secret_service(no_session_bus):
    assert sys.platform.startswith('linux')
    with pytest.raises(Unavailable):
        open_system_store()
    assert SecretService.label == 'Secret Service'
