# License: GPLv3 Copyright: the Book AI developers
"""Local means the address in use is loopback, and nothing else (issue 15, finding 5).

Being local skips the consent before book text goes out and lets the whole book
go for embeddings, so a name that only looks local (127.evil.example) must not
count, and every provider decides it from the address it will connect to.
"""

import pytest

from calibre_plugins.bookai.core.transport import Transport, is_local
from calibre_plugins.bookai.providers.registry import PROVIDERS, get_provider

LOCAL = ('127.0.0.1', '127.1.2.3', '127.255.255.254', '::1', '[::1]', '[::ffff:127.0.0.1]', '::ffff:127.9.9.9',
         'localhost', 'LOCALHOST.', 'LocalHost', 'a.localhost', 'b.a.localhost.')
# 0.0.0.0 and :: are the unspecified address: Linux connects them to this machine, Windows
# refuses them, and they name no machine in particular; not local, so the reader is asked.
NOT_LOCAL = ('127.evil.example', '127.0.0.1.evil.example', 'localhost.evil.example', 'evil-localhost',
             'evil.localhost.example', '10.0.0.1', '192.168.1.2', '0.0.0.0', '::', '[::]', 'example.com',
             '::ffff:10.0.0.1', '128.0.0.1', '126.255.255.255', '127.1', '2130706433', '0x7f000001', '', None,
             '.localhost', 'a..localhost')


@pytest.mark.parametrize('host', LOCAL)
def test_loopback_is_local(host):
    assert is_local(host)


@pytest.mark.parametrize('host', NOT_LOCAL)
def test_what_only_looks_local_is_not(host):
    assert not is_local(host)


def no_proxy():
    return Transport(proxies={})


def provider_at(name, url, transport=None):
    return get_provider(name, settings={'base_url': url}, secrets=None, transport=transport or no_proxy())


SERVICES = ('openai', 'anthropic', 'gemini', 'openrouter', 'github', 'grok', 'venice')


@pytest.mark.parametrize('name', list(PROVIDERS))
def test_every_provider_is_local_only_at_a_loopback_address(name):
    for url in ('http://127.0.0.1:8080/v1', 'http://localhost:11434', 'http://[::1]:1234/v1'):
        # a service on the internet reached through a local gateway is not local: the text goes on
        assert provider_at(name, url).connection.is_local == (name not in SERVICES), url
    for url in ('http://127.evil.example/v1', 'http://localhost.evil.example:11434', 'http://10.0.0.1:11434',
                'https://api.example.com/v1', 'http://0.0.0.0:8080/v1', 'http://[::ffff:10.0.0.1]:8080/v1'):
        assert not provider_at(name, url).connection.is_local, url


@pytest.mark.parametrize('name', list(PROVIDERS))
def test_no_provider_class_says_local_of_itself(name):
    from calibre_plugins.bookai.providers.connection import Connection
    from calibre_plugins.bookai.providers.registry import provider_class
    cls = provider_class(name)
    assert not [c for c in cls.__mro__ if 'is_local' in c.__dict__]  # its connection decides, from the address
    assert type(get_provider(name, settings={}, secrets=None, transport=no_proxy()).connection) is Connection


def test_by_default_only_the_providers_on_this_computer_are_local():
    local = {name for name in PROVIDERS
             if get_provider(name, settings={}, secrets=None, transport=no_proxy()).connection.is_local}
    assert local == {'ollama', 'lmstudio'}


def test_an_address_reached_through_calibres_proxy_is_not_local():
    class Proxied(Transport):
        def proxy_for(self, scheme, host):
            from urllib.parse import urlsplit
            return urlsplit('http://proxy.example:3128')
    assert not provider_at('ollama', 'http://localhost:11434', Proxied(proxies={})).connection.is_local
    # calibre's own proxy setting is never used for loopback, and is used for a look-alike
    t = Transport(proxies={'http': 'proxy.example:3128'})
    assert t.proxy_for('http', '127.0.0.1') is None
    assert t.proxy_for('http', '127.evil.example') is not None
    assert provider_at('ollama', 'http://127.0.0.1:11434', t).connection.is_local


def test_consent_is_asked_before_book_text_goes_to_a_look_alike(prefs):
    from calibre_plugins.bookai.gui.passages import needs_consent
    prefs['book_text_consent'] = []
    for name in ('openai_compatible', 'ollama', 'lmstudio'):
        assert needs_consent('book:1', provider_at(name, 'http://127.evil.example/v1'))
        assert not needs_consent('book:1', provider_at(name, 'http://127.0.0.1:8080/v1'))


def test_the_window_says_where_the_text_goes(qapp):
    from calibre_plugins.bookai.gui.preview import destination
    assert 'on this computer' not in destination(provider_at('ollama', 'http://127.evil.example/v1'))
    assert '127.evil.example' in destination(provider_at('ollama', 'http://127.evil.example/v1'))


def test_the_whole_book_is_not_sent_for_embeddings_to_a_look_alike(prefs):
    from calibre_plugins.bookai.conversation.question import by_meaning
    prefs['retrieval'] = 'embeddings'
    for name in ('ollama', 'lmstudio'):
        assert not by_meaning(provider_at(name, 'http://127.evil.example/v1'), 'book')
        assert not by_meaning(provider_at(name, 'http://127.evil.example/v1'), 'position')
        assert by_meaning(provider_at(name, 'http://127.0.0.1:11434'), 'book')
