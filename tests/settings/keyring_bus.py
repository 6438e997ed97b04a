# License: GPLv3 Copyright: the Book AI developers
"""Fixtures (imported by the tests that use them: a conftest.py here would shadow the suite's
own for pytest 7). A private session bus, with a real GNOME Keyring on it for the tests that need one.

The bus runs from a config of our own that activates no service, so nothing starts
unless a test starts it, and the test process only ever sees this bus: the user's
session bus and keyring are never reached (the suite runs with no
DBUS_SESSION_BUS_ADDRESS; these fixtures set it for one test and put it back).
"""

import os
import subprocess
import time

import pytest

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

    def __init__(self, folder):
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

    def spawn(self, argv, **kw):
        p = subprocess.Popen(argv, **kw)
        self.processes.append(p)
        return p

    def has_owner(self, name):
        from jeepney import new_method_call
        from jeepney.bus_messages import message_bus
        from jeepney.io.blocking import open_dbus_connection
        with open_dbus_connection(self.address) as conn:
            return conn.send_and_get_reply(message_bus.NameHasOwner(name), timeout=10).body[0]

    def start_keyring(self, folder):
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

    def stop(self):
        for p in reversed(self.processes):
            p.kill()
            p.wait()


@pytest.fixture
def session_bus(tmp_path, monkeypatch):
    """A session bus of the test's own, with no Secret Service on it, set as this process's."""
    bus = SessionBus(tmp_path / 'bus')
    monkeypatch.setenv('DBUS_SESSION_BUS_ADDRESS', bus.address)
    yield bus
    bus.stop()


@pytest.fixture
def gnome_keyring(session_bus, tmp_path):
    """session_bus, with GNOME Keyring's Secret Service on it, the default collection unlocked."""
    session_bus.start_keyring(tmp_path / 'keyring')
    return session_bus


@pytest.fixture
def no_session_bus(monkeypatch):
    monkeypatch.delenv('DBUS_SESSION_BUS_ADDRESS', raising=False)
