# License: GPLv3 Copyright: the Book AI developers
"""Secrets in the Secret Service (GNOME Keyring, KWallet, KeePassXC...), spoken to over
the session bus with jeepney, the D-Bus library calibre itself uses.

The protocol: https://specifications.freedesktop.org/secret-service/latest/
The secrets go over a "plain" session: the bus is private to the user's session.
"""

from calibre_plugins.bookai.settings.keyring import StoreError, Unavailable

BUS_NAME = 'org.freedesktop.secrets'
SERVICE_PATH = '/org/freedesktop/secrets'
SERVICE = 'org.freedesktop.Secret.Service'
COLLECTION = 'org.freedesktop.Secret.Collection'
ITEM = 'org.freedesktop.Secret.Item'
PROMPT = 'org.freedesktop.Secret.Prompt'
APPLICATION = 'calibre-bookai'  # the attribute that marks Book AI's items
NO_PROMPT = '/'


def message(path, interface, method, signature=None, *body):
    from jeepney import DBusAddress, new_method_call
    return new_method_call(DBusAddress(path, bus_name=BUS_NAME, interface=interface), method, signature, body)


def attributes(provider=None, name=None):
    attrs = {'application': APPLICATION}
    if provider is not None:
        attrs.update(provider=provider, name=name)
    return attrs


class SecretService:

    label = 'Secret Service'

    def __init__(self, prompt_timeout=120, call_timeout=25):
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

    def call(self, path, interface, method, signature=None, *body):
        from jeepney import DBusErrorResponse
        from jeepney.wrappers import unwrap_msg
        msg = message(path, interface, method, signature, *body)
        try:
            return unwrap_msg(self.conn.send_and_get_reply(msg, timeout=self.call_timeout))
        except DBusErrorResponse as e:
            raise StoreError(f'{interface}.{method}: {e.name}') from None
        except (OSError, TimeoutError) as e:
            raise StoreError(f'{interface}.{method}: {type(e).__name__}') from None

    def prompt(self, path):
        """Show the service's prompt (a password, a confirmation) and wait for the user."""
        if path == NO_PROMPT:
            return
        from jeepney.bus_messages import MatchRule, message_bus
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

    def unlock(self, objects):
        if objects:
            unlocked, prompt = self.call(SERVICE_PATH, SERVICE, 'Unlock', 'ao', objects)
            self.prompt(prompt)

    def items(self, attrs):
        unlocked, locked = self.call(SERVICE_PATH, SERVICE, 'SearchItems', 'a{ss}', attrs)
        try:
            self.unlock(locked)
        except Unavailable as e:
            raise StoreError(str(e)) from None
        return list(unlocked) + list(locked)

    def get(self, provider, name):
        items = self.items(attributes(provider, name))
        if not items:
            return ''
        (secrets,) = self.call(SERVICE_PATH, SERVICE, 'GetSecrets', 'aoo', items[:1], self.session)
        session, parameters, value, content_type = secrets[items[0]]
        return bytes(value).decode('utf-8')

    def set(self, provider, name, value):
        properties = {
            f'{ITEM}.Label': ('s', f'Book AI: {provider} {name}'),
            f'{ITEM}.Attributes': ('a{ss}', attributes(provider, name)),
        }
        secret = (self.session, b'', value.encode('utf-8'), 'text/plain; charset=utf8')
        item, prompt = self.call(self.collection, COLLECTION, 'CreateItem', 'a{sv}(oayays)b', properties, secret, True)
        self.confirm(prompt)

    def delete(self, provider, name):
        self.delete_items(attributes(provider, name))

    def delete_all(self, names=()):
        """Book AI's every secret, found by its mark. The number deleted."""
        return self.delete_items(attributes())

    def delete_items(self, attrs):
        items = self.items(attrs)
        for item in items:
            self.confirm(self.call(item, ITEM, 'Delete')[0])
        return len(items)

    def confirm(self, prompt):
        try:
            self.prompt(prompt)
        except Unavailable as e:
            raise StoreError(str(e)) from None
