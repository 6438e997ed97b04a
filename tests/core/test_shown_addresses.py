# License: GPLv3 Copyright: the Book AI developers
"""Every address Book AI prints or shows besides web sources (core.web_links.shown_address): a
service's address in its errors, where a service redirects to, where "What will be sent" says the
text goes: no user:password@, a look-alike host as its punycode, control characters shown."""

import pytest

from calibre_plugins.bookai.core import errors
from calibre_plugins.bookai.core.messages import Answer, Message, Role
from calibre_plugins.bookai.core.web_links import shown_address
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.scripted_server import Reply, ScriptedServer

LOOKALIKE, LOOKALIKE_ASCII = 'раураl.com', 'xn--l-7sba6dbr.com'


@pytest.mark.parametrize('url, shown', [
    ('https://api.example.org/v1', 'https://api.example.org/v1'),
    ('HTTPS://API.Example.org/v1', 'HTTPS://API.Example.org/v1'),     # nothing to hide: as it is
    ('https://user:hunter2@api.example.org:8443/v1', 'https://api.example.org:8443/v1'),
    (f'https://{LOOKALIKE}/v1', f'https://{LOOKALIKE_ASCII}/v1'),
    (f'https://u:p@{LOOKALIKE}:9/v1', f'https://{LOOKALIKE_ASCII}:9/v1'),
    ('https://xn--bcher-kva.example/', 'https://bücher.example/'),    # a safe IDN, as browsers show it
    ('https://u:p@[::1]:8080/v1', 'https://[::1]:8080/v1'),
    ('https://u:p@[::1/v1', 'https://[::1/v1'),                       # does not parse: userinfo gone anyway
    ('http://host\x1b[2J/v1', 'http://host\\x1b[2J/v1'),
    ('ftp://u:p@example.org/', 'ftp://example.org/'),
])
def test_an_address_is_shown_without_userinfo_and_with_a_lookalike_as_punycode(url, shown):
    assert shown_address(url) == shown


def ask(base_url):
    p = get_provider('openai_compatible', settings={'base_url': base_url, 'model': 'm', 'api_key': 'sk-0123456789ab'})
    answer = Answer()
    for chunk in p.text_chat([Message(Role.USER, 'Hello?')]):
        answer.add(chunk)
    return answer


def test_a_services_address_in_an_error_shows_no_userinfo_and_no_lookalike():
    from calibre_plugins.bookai.core.transport import Route
    route = Route.to(f'https://someone:hunter2@{LOOKALIKE}:8443/v1/chat', lambda scheme, host: None, 'Book AI')
    assert route.shown_url == f'https://{LOOKALIKE_ASCII}:8443/v1/chat'  # what every connection error names
    # (the settings refuse an address with a user:password@ before anything is sent: options.py)


def test_where_a_service_redirects_to_is_shown_without_userinfo():
    location = 'http://someone:hunter2@127.0.0.2:9/v1/chat/completions'
    with ScriptedServer([Reply(307, headers=[('Location', location)])]) as s:
        answer = ask(s.url + '/v1')
    assert isinstance(answer.failed.error, errors.RedirectRefused)
    assert 'http://127.0.0.2:9' in answer.failed.message
    assert 'someone' not in answer.failed.message and 'hunter2' not in answer.failed.message
