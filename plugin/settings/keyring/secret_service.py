# License: GPLv3 Copyright: the Book AI developers
"""Secrets in the Secret Service (GNOME Keyring, KWallet, KeePassXC...), spoken to over
the session bus with jeepney, the D-Bus library calibre itself uses.

The protocol: https://specifications.freedesktop.org/secret-service/latest/
The secrets go over a "plain" session: the bus is private to the user's session.
jeepney is imported when the store is opened, not with this module: a calibre without
it has no Secret Service for Book AI (Unavailable), which is not an error.
"""

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from calibre_plugins.bookai.settings.keyring.store import StoreError, Unavailable

if TYPE_CHECKING:
    from jeepney import Message

BUS_NAME = 'org.freedesktop.secrets'
SERVICE_PATH = '/org/freedesktop/secrets'
SERVICE = 'org.freedesktop.Secret.Service'
COLLECTION = 'org.freedesktop.Secret.Collection'
ITEM = 'org.freedesktop.Secret.Item'
PROMPT = 'org.freedesktop.Secret.Prompt'
APPLICATION = 'calibre-bookai'  # the attribute that marks Book AI's items
NO_PROMPT = '/'


def message(path: str, interface: str, method: str, signature: str | None = None, *body: Any) -> 'Message':
    from jeepney import DBusAddress, new_method_call  # imported late: see the module's docstring
    return new_method_call(DBusAddress(path, bus_name=BUS_NAME, interface=interface), method, signature, body)


def attributes(provider: str | None = None, name: str | None = None) -> dict[str, str]:
    """The attributes that find Book AI's items: all of them, or one provider's secret name."""
    attrs = {'application': APPLICATION}
    if provider is not None:
        attrs.update(provider=provider, name=cast(str, name))  # name is given with provider
    return attrs


class SecretService:

    label = 'Secret Service'

    def __init__(self, prompt_timeout: float = 120, call_timeout: float = 25) -> None:
        """Connects, and unlocks the default collection (the system may ask the user for a
        password: they get prompt_timeout seconds). Raises Unavailable if any of it fails."""
        self.prompt_timeout, self.call_timeout = prompt_timeout, call_timeout
        try:
            from jeepney.io.blocking import open_dbus_connection
        except ImportError:
            raise Unavailable('jeepney is missing') from None
        try:
            self.conn = open_dbus_connection(bus='SESSION')  # KeyError: no session bus
        except Exception as e:
            raise Unavailable(f'no session bus: {type(e).__name__}') from None
        try:
            self.session = self.call(SERVICE_PATH, SERVICE, 'OpenSession', 'sv', 'plain', ('s', ''))[1]
            self.collection = self.call(SERVICE_PATH, SERVICE, 'ReadAlias', 's', 'default')[0]
            if self.collection == NO_PROMPT:
                raise Unavailable('no default collection')
            self.unlock([self.collection])
        except Exception as e:
            self.conn.close()
            raise Unavailable(str(e)) from None

    def call(self, path: str, interface: str, method: str, signature: str | None = None, *body: Any) -> tuple:
        """The body of the reply to a method call; StoreError when the call fails."""
        from jeepney import DBusErrorResponse  # imported late: see the module's docstring
        from jeepney.wrappers import unwrap_msg
        msg = message(path, interface, method, signature, *body)
        try:
            return unwrap_msg(self.conn.send_and_get_reply(msg, timeout=self.call_timeout))
        except DBusErrorResponse as e:
            raise StoreError(f'{interface}.{method}: {e.name}') from None
        except (OSError, TimeoutError) as e:
            raise StoreError(f'{interface}.{method}: {type(e).__name__}') from None

    def prompt(self, path: str) -> None:
        """Show the service's prompt (a password, a confirmation) and wait for the user."""
        if path == NO_PROMPT:
            return
        from jeepney.bus_messages import MatchRule, message_bus  # imported late: see the module's docstring
        rule = MatchRule(type='signal', interface=PROMPT, member='Completed', path=path)
        self.conn.send_and_get_reply(message_bus.AddMatch(rule), timeout=self.call_timeout)
        with self.conn.filter(rule) as completed:
            self.call(path, PROMPT, 'Prompt', 's', '')
            try:
                dismissed, result = self.conn.recv_until_filtered(completed, timeout=self.prompt_timeout).body
            except TimeoutError:
                self.conn.send(message(path, PROMPT, 'Dismiss'))
                raise Unavailable('the prompt was not answered') from None
        if dismissed:
            raise Unavailable('the prompt was dismissed')

    def unlock(self, objects: list[str]) -> None:
        if objects:
            unlocked, prompt = self.call(SERVICE_PATH, SERVICE, 'Unlock', 'ao', objects)
            self.prompt(prompt)

    def items(self, attrs: dict[str, str]) -> list[str]:
        unlocked, locked = self.call(SERVICE_PATH, SERVICE, 'SearchItems', 'a{ss}', attrs)
        try:
            self.unlock(locked)
        except Unavailable as e:
            raise StoreError(str(e)) from None
        return list(unlocked) + list(locked)

    def get(self, provider: str, name: str) -> str:
        items = self.items(attributes(provider, name))
        if not items:
            return ''
        (secrets,) = self.call(SERVICE_PATH, SERVICE, 'GetSecrets', 'aoo', items[:1], self.session)
        session, parameters, value, content_type = secrets[items[0]]
        return bytes(value).decode('utf-8')

    def set(self, provider: str, name: str, value: str) -> None:
        properties = {
            f'{ITEM}.Label': ('s', f'Book AI: {provider} {name}'),
            f'{ITEM}.Attributes': ('a{ss}', attributes(provider, name)),
        }
        secret = (self.session, b'', value.encode('utf-8'), 'text/plain; charset=utf8')
        item, prompt = self.call(self.collection, COLLECTION, 'CreateItem', 'a{sv}(oayays)b', properties, secret, True)
        self.confirm(prompt)

    def delete(self, provider: str, name: str) -> None:
        self.delete_items(attributes(provider, name))

    def delete_all(self, names: Iterable[tuple[str, str]] = ()) -> int:
        """Book AI's every secret, found by its mark. The number deleted."""
        return self.delete_items(attributes())

    def delete_items(self, attrs: dict[str, str]) -> int:
        items = self.items(attrs)
        for item in items:
            self.confirm(self.call(item, ITEM, 'Delete')[0])
        return len(items)

    def confirm(self, prompt: str) -> None:
        try:
            self.prompt(prompt)
        except Unavailable as e:
            raise StoreError(str(e)) from None
