# License: GPLv3 Copyright: the Book AI developers
"""What a web source shows is what a click opens (core.web_links): no user:password@ kept,
printed or linked; a host that could pass for another (mixed scripts, a whole-script
look-alike, a Latin look-alike letter, a mark, mixed digits, a full-width letter) kept and
shown as its punycode; hosts of one script, and the mixes browsers allow, shown as they are."""

from urllib.parse import urlsplit

import pytest

from calibre_plugins.bookai.core.messages import WebLink
from calibre_plugins.bookai.core.web_links import (
    is_web_address, kept_links, label_is_safe, shown_host, site, web_address,
)

CYRILLIC_PAYPAL = 'раураl.com'  # р а у р а Cyrillic, l Latin


def opened_host(url: str) -> str:
    """The host a browser is sent to for url: its IDNA (punycode) form."""
    host = urlsplit(url).hostname
    return '.'.join(label if label.isascii() else 'xn--' + label.encode('punycode').decode('ascii')
                    for label in host.split('.'))


@pytest.mark.parametrize('host', [
    CYRILLIC_PAYPAL,            # Cyrillic and Latin in one label
    'аррӏе.com',                # wholly Cyrillic, every letter a Latin look-alike
    'ѕсоре.com',                # the same
    'οικο.com',                 # wholly Greek look-alikes
    'goog\u0131e.com',          # dotless i
    'gооgle.com',               # two Cyrillic o among Latin letters
    'paypa\u1d0c.com',          # a small capital L
    'exam\u0438ple.com',        # one Cyrillic letter
    'i\u0307nfo.example',       # i with a combining dot above: looks like i
    'ex\u0301\u0301ample.org',  # a mark twice
    'ｐａｙｐａｌ.com',          # full-width Latin letters (NFKC changes them)
    'pay\u0661al.com',          # an Arabic-Indic digit among Latin letters
    '1\u0662\u0663.example',    # digits of two numbering systems
    'ᚠᚢᚦ.example',              # a script not recommended for identifiers (runic)
    'αβc.example',              # Greek with Latin
    'мир中.example',            # Cyrillic with Han: no allowed mix
])
def test_a_host_that_could_pass_for_another_is_kept_and_shown_as_punycode(host):
    url = f'https://{host}/login'
    (link,), left_out = kept_links([WebLink('PayPal', url)])
    assert left_out == 0
    kept_host = urlsplit(link.url).hostname
    assert kept_host.isascii() and 'xn--' in kept_host
    assert kept_host == opened_host(url)                       # the same site, written as a browser is sent to it
    assert site(link.url) == kept_host == shown_host(kept_host)  # and shown as it is opened
    assert site(url) == kept_host                              # whatever form it comes in
    assert kept_links([link]) == ((link,), 0)                  # kept again: nothing changes


@pytest.mark.parametrize('host', [
    'bücher.example', 'straße.de', 'münchen.de', 'пример.рф', 'москва.рф', 'ελληνικά.gr', '例え.jp',
    'ドメイン名例.jp', 'mail.日本語.jp', 'abcひらがなカタカナ漢字.example', 'abc中文ㄅㄆ.example', 'abc한국어漢字.example',
    'नमस्ते.example', 'ไทย.example', 'עברית.example', 'عربي.example', 'საქართველო.ge', 'example.org',
    '١٢٣.example',  # Arabic-Indic digits alone
])
def test_a_host_of_one_script_or_an_allowed_mix_is_shown_as_it_is(host):
    url = f'https://{host}/'
    (link,), _n = kept_links([WebLink('t', url)])
    assert link.url == url
    assert site(url) == host
    assert all(label_is_safe(label) for label in host.split('.'))


def test_a_safe_punycode_host_is_shown_in_unicode_an_unsafe_one_as_punycode():
    assert shown_host('xn--bcher-kva.example') == 'bücher.example'
    cyrillic = opened_host(f'https://{CYRILLIC_PAYPAL}/')
    assert shown_host(cyrillic) == cyrillic
    for fake in ('xn--broken-punycode-.example', 'xn--zz-zzz.example', 'xn--.example'):  # not what they decode to
        assert shown_host(fake) == fake
    # one unsafe label shows the whole host as punycode, as browsers do
    mixed = shown_host(f'bücher.{CYRILLIC_PAYPAL}')
    assert mixed.isascii() and mixed.startswith('xn--bcher-kva.xn--')


@pytest.mark.parametrize('url, kept', [
    ('https://user:password@example.org/a?q=1#f', 'https://example.org/a?q=1#f'),
    ('https://sk-or-v1-secret@example.org/', 'https://example.org/'),
    ('http://paypal.com@evil.example/login', 'http://evil.example/login'),
    ('http://paypal.com:443@evil.example:8080/x', 'http://evil.example:8080/x'),
    ('http://evil.example\\@paypal.com/', 'http://paypal.com/'),   # a backslash in what urlsplit calls userinfo
    ('https://u:p@[::1]:8443/x', 'https://[::1]:8443/x'),
    (f'https://u:p@{CYRILLIC_PAYPAL}/', f'https://{opened_host("https://" + CYRILLIC_PAYPAL)}/'),
])
def test_no_user_or_password_is_kept_shown_or_linked(url, kept):
    (link,), left_out = kept_links([WebLink('t', url)])
    assert (link.url, left_out) == (kept, 0)
    assert web_address(url) == kept
    assert '@' not in urlsplit(link.url).netloc and 'password' not in link.url and 'secret' not in link.url


def test_an_address_that_differs_only_by_its_userinfo_is_kept_once():
    links, left_out = kept_links([WebLink('a', 'https://example.org/'), WebLink('b', 'https://u:p@example.org/')])
    assert links == (WebLink('a', 'https://example.org/'),) and left_out == 0


@pytest.mark.parametrize('url', [
    'https://pay%70al.com/', 'https://paypal\u3002com/', 'https://paypal\uff0ecom/', 'https://a\\b.example/',
    'https://exa!mple.org/', 'https://example.org:port/', 'https://example.org:99999/', 'https://[not:v6]/',
    'https://example.org\u2044evil.example/',
])
def test_a_host_of_any_other_shape_is_not_a_web_address(url):
    assert not is_web_address(url)
    assert web_address(url) is None
    assert kept_links([WebLink('t', url)]) == ((), 1)
    if 'example.org:' not in url:  # a bad port leaves the host as good as it is
        assert site(url) == ''
