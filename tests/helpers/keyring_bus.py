# License: GPLv3 Copyright: the Book AI developers
"""A private D-Bus session bus, with a real GNOME Keyring on it for the tests that need one,
and the keyring read directly, with the Secret Service's own calls.

The fixtures (session_bus, gnome_keyring, no_session_bus) reach every test through
tests/conftest.py (pytest_plugins). The bus runs from a config of our own that activates no
service, so nothing starts unless a test starts it, and the test process only ever sees
this bus: the user's session bus and keyring are never reached (the suite runs with no
DBUS_SESSION_BUS_ADDRESS; these fixtures set it for one test and put it back).
"""

import os
import subprocess
import time
from pathlib import Path

import pytest
from jeepney import DBusAddress, Properties, new_method_call
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection
from jeepney.wrappers import unwrap_msg

BUS_CONFIG = '''<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={dir}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
'''
KEYRING_PASSWORD = 'test-keyring-password'


class SessionBus:
    """A dbus-daemon of the test's own, and what was started on it, stopped with it."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        config = folder / 'bus.conf'
        sockets = folder / 'sockets'
        sockets.mkdir()
        config.write_text(BUS_CONFIG.format(dir=sockets))
        self.processes = []
        daemon = self.spawn(['dbus-daemon', '--config-file', str(config), '--nofork', '--print-address=1'],
                            stdout=subprocess.PIPE, text=True)
        self.address = daemon.stdout.readline().strip()
        assert self.address.startswith('unix:'), self.address

    def spawn(self, argv: list[str], **kw) -> subprocess.Popen:
        p = subprocess.Popen(argv, **kw)
        self.processes.append(p)
        return p

    def has_owner(self, name: str) -> bool:
        with open_dbus_connection(self.address) as conn:
            return conn.send_and_get_reply(message_bus.NameHasOwner(name), timeout=10).body[0]

    def start_keyring(self, folder: Path) -> subprocess.Popen:
        """gnome-keyring-daemon's Secret Service on this bus, its login keyring made and
        unlocked with KEYRING_PASSWORD, its files under folder."""
        env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=self.address, XDG_RUNTIME_DIR=str(folder / 'run'),
                   XDG_DATA_HOME=str(folder / 'data'), XDG_CONFIG_HOME=str(folder / 'config'),
                   HOME=str(folder))
        (folder / 'run').mkdir(mode=0o700, parents=True)
        keyring = self.spawn(['gnome-keyring-daemon', '--foreground', '--unlock', '--components=secrets'],
                             env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        keyring.stdin.write(KEYRING_PASSWORD.encode())
        keyring.stdin.close()
        # waiting for a daemon to start, not timing what the plugin does
        deadline = time.monotonic() + 60
        while not self.has_owner('org.freedesktop.secrets'):
            if keyring.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f'gnome-keyring-daemon did not start: {keyring.stderr.read().decode()}')
            time.sleep(0.05)
        return keyring

    def stop(self) -> None:
        for p in reversed(self.processes):
            p.kill()
            p.wait()


@pytest.fixture
def session_bus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A session bus of the test's own, with no Secret Service on it, set as this process's."""
    bus = SessionBus(tmp_path / 'bus')
    monkeypatch.setenv('DBUS_SESSION_BUS_ADDRESS', bus.address)
    yield bus
    bus.stop()


@pytest.fixture
def gnome_keyring(session_bus: SessionBus, tmp_path: Path) -> SessionBus:
    """session_bus, with GNOME Keyring's Secret Service on it, the default collection unlocked."""
    session_bus.start_keyring(tmp_path / 'keyring')
    return session_bus


@pytest.fixture
def no_session_bus(monkeypatch: pytest.MonkeyPatch) -> None:
    """No session bus at all: this process has no DBUS_SESSION_BUS_ADDRESS."""
    monkeypatch.delenv('DBUS_SESSION_BUS_ADDRESS', raising=False)


class Keyring:
    """The keyring read directly, with the Secret Service's own calls: what it holds of Book AI's."""

    def __init__(self, address: str):
        self.conn = open_dbus_connection(address)
        self.service = DBusAddress('/org/freedesktop/secrets', bus_name='org.freedesktop.secrets',
                                   interface='org.freedesktop.Secret.Service')
        self.session = self.call(self.service, 'OpenSession', 'sv', 'plain', ('s', ''))[1]

    def call(self, address: DBusAddress, method: str, signature: str | None = None, *body) -> tuple:
        return unwrap_msg(self.conn.send_and_get_reply(new_method_call(address, method, signature, body),
                                                       timeout=30))

    def items(self) -> dict[tuple[str, str], str]:
        """{(provider, name): secret} of the items marked application=calibre-bookai."""
        unlocked, locked = self.call(self.service, 'SearchItems', 'a{ss}', {'application': 'calibre-bookai'})
        assert not locked
        found = {}
        for path in unlocked:
            item = DBusAddress(path, bus_name='org.freedesktop.secrets', interface='org.freedesktop.Secret.Item')
            sig, attrs = self.get_property(item, 'Attributes')
            (secrets,) = self.call(self.service, 'GetSecrets', 'aoo', [path], self.session)
            key = (attrs['provider'], attrs['name'])
            assert key not in found, 'one item per key'
            found[key] = bytes(secrets[path][2]).decode('utf-8')
        return found

    def add_item(self, attrs: dict[str, str], secret: str) -> None:
        collection = self.call(self.service, 'ReadAlias', 's', 'default')[0]
        address = DBusAddress(collection, bus_name='org.freedesktop.secrets',
                              interface='org.freedesktop.Secret.Collection')
        properties = {'org.freedesktop.Secret.Item.Label': ('s', 'another program'),
                      'org.freedesktop.Secret.Item.Attributes': ('a{ss}', attrs)}
        self.call(address, 'CreateItem', 'a{sv}(oayays)b', properties,
                  (self.session, b'', secret.encode(), 'text/plain'), True)

    def all_secrets(self) -> list[str]:
        """The secrets of every item in the default collection, Book AI's or not."""
        collection = self.call(self.service, 'ReadAlias', 's', 'default')[0]
        address = DBusAddress(collection, bus_name='org.freedesktop.secrets',
                              interface='org.freedesktop.Secret.Collection')
        items = self.get_property(address, 'Items')[1]
        (secrets,) = self.call(self.service, 'GetSecrets', 'aoo', items, self.session)
        return sorted(bytes(s[2]).decode() for s in secrets.values())

    def get_property(self, address: DBusAddress, name: str):
        return unwrap_msg(self.conn.send_and_get_reply(Properties(address).get(name), timeout=30))[0]

    def lock(self) -> None:
        collection = self.call(self.service, 'ReadAlias', 's', 'default')[0]
        locked, prompt = self.call(self.service, 'Lock', 'ao', [collection])
        assert locked == [collection] and prompt == '/'

    def close(self) -> None:
        self.conn.close()
