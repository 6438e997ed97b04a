# License: GPLv3 Copyright: the Book AI developers
"""The web pages an answer used, as kept and shown (core.web_links): web addresses only,
each once, a bounded number (the rest counted), titles on one line with their control
characters shown and never obeyed, cut at a bounded length; the same rules applied twice
change nothing."""

import pytest

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.messages import WebLink
from calibre_plugins.bookai.core.printable import one_line as shown
from calibre_plugins.bookai.core.web_links import is_web_address, kept_links, site


def test_pages_are_kept_in_order_each_once():
    links, left_out = kept_links([WebLink('A', 'https://example.org/a'), WebLink('B', 'http://example.org/b'),
                                  WebLink('A again', 'https://example.org/a'), WebLink('C', ' https://c.example/ ')])
    assert links == (WebLink('A', 'https://example.org/a'), WebLink('B', 'http://example.org/b'),
                     WebLink('C', 'https://c.example/'))
    assert left_out == 0


@pytest.mark.parametrize('url', [
    'javascript:alert(1)', 'JAVASCRIPT:alert(1)', 'data:text/html,<script>alert(1)</script>', 'file:///etc/passwd',
    'bookai:settings/0', 'mailto:someone@example.org', 'ftp://example.org/x', '//example.org/x', 'example.org/x',
    'https://', 'http:///path', 'https://[::1', 'https://example.org/a b', 'https://example.org/\x1b[31m',
    'https://example.org/\u202egpj.exe', 'https://exa\u200bmple.org/', '',
    'https://example.org/' + 'x' * limits.MAX_WEB_LINK_URL_CHARS])
def test_only_web_addresses_are_kept(url):
    assert not is_web_address(url.strip())
    assert kept_links([WebLink('t', url)]) == ((), 1)


@pytest.mark.parametrize('url', ['https://example.org', 'HTTPS://Example.org/Path?q=1#f', 'http://127.0.0.1:8080/',
                                 'https://[::1]/x', 'https://bücher.example/straße',
                                 'https://example.org/' + 'x' * (limits.MAX_WEB_LINK_URL_CHARS - 20)])
def test_web_addresses_are_kept(url):
    assert is_web_address(url)
    assert kept_links([WebLink('t', url)]) == ((WebLink('t', url),), 0)


def test_a_title_shows_its_control_characters_and_stays_on_one_line():
    title = '<script>alert(1)</script>\x1b[31mRed\x07\n\tNext line\u202eevil\u2066\x85\x00end\u2028more'
    (link,), _n = kept_links([WebLink(title, 'https://example.org/')])
    # NEL (0x85) and the line separator are line breaks: spaces, as a line feed is
    assert link.title == ('<script>alert(1)</script>\\x1b[31mRed\\x07 Next line\\u202eevil\\u2066 \\x00end more')
    assert link.title.isprintable()  # nothing a terminal or a text layout would obey
    assert shown('\ud800x') == '\\ud800x'


def test_a_long_title_is_cut_and_an_empty_one_stays_empty():
    (long_one, empty), _n = kept_links([WebLink('word ' * 1000, 'https://example.org/1'),
                                        WebLink(' \n ', 'https://example.org/2')])
    assert len(long_one.title) <= limits.MAX_WEB_LINK_TITLE_CHARS and long_one.title.endswith('…')
    assert empty.title == ''


def test_at_most_the_limit_is_kept_and_the_rest_is_counted():
    many = [WebLink(f'Page {i}', f'https://example.org/{i}') for i in range(limits.MAX_WEB_LINKS + 7)]
    many += [WebLink('bad', 'javascript:1'), 'not a link', WebLink(None, 'https://example.org/none'),
             WebLink('Page 0', 'https://example.org/0')]  # a repeat is not one more page
    links, left_out = kept_links(many)
    assert [w.url for w in links] == [f'https://example.org/{i}' for i in range(limits.MAX_WEB_LINKS)]
    assert left_out == 7 + 3


def test_keeping_what_was_kept_changes_nothing():
    links = [WebLink('\x1b]8;;https://evil.example\x07 ' + 'long ' * 200, 'https://example.org/a'),
             WebLink('<b>x</b> \u202e', 'https://example.org/b')]
    once = kept_links(links)[0]
    assert kept_links(once) == (once, 0)


def test_the_site_beside_a_title():
    assert site('https://Docs.Example.org:443/a') == 'docs.example.org'
    assert site('https://[::1') == '' and site('no address') == ''
