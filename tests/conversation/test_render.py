# License: GPLv3 Copyright: the Book AI developers
"""A model's Markdown as the chat shows it: tables rendered, nothing obeyed, nothing loaded
(the hostile replies themselves: test_sanitising.py)."""

import pytest

from calibre_plugins.bookai.conversation.render import markdown_to_html, stable_end


def test_tables_lists_and_code():
    html = markdown_to_html('| a | b |\n|---|---|\n| 1 | 2 |\n\n1. one\n2. two\n\n```\nx < y\n```\n')
    assert '<table border="1"' in html and '<td>1</td>' in html
    assert '<ol>' in html and '<li>one</li>' in html
    assert '<code>x &lt; y' in html


def test_items_nested_the_commonmark_way_stay_in_one_list():
    """Models indent what belongs to an item by the width of its marker (3 spaces after "1. "):
    one list of four items, each with its own bullet, not four lists that all start at 1."""
    answer = ('Each part:\n\n' + '\n\n'.join(f'{n}. **Part {n}**: "x"\n   - What part {n} is.' for n in range(1, 5))
              + '\n\nThat is all.\n\n```\n1. code\n   - stays as it is\n```\n')
    html = markdown_to_html(answer)
    assert html.count('<ol>') == 1 and html.count('<li>') == 8 and html.count('<ul>') == 4, html
    assert html.index('Part 4') < html.index('</ol>') < html.index('That is all.')
    assert '1. code\n   - stays as it is' in html  # inside a code block nothing moves
    # a line indented under a paragraph (not a list) is left alone
    assert markdown_to_html('Text\n   more') == '<p>Text\n   more</p>'


def test_citations_become_what_cite_makes_them_outside_code():
    html = markdown_to_html('Use the button [1]; see [2, 3] and passage 4.\n\n`[5]` and\n\n```\n[6]\n```\n',
                            lambda n: f'<a href="bookai:cite/0/{n}">{n}</a>')
    for n in (1, 2, 3, 4):
        assert f'<a href="bookai:cite/0/{n}">{n}</a>' in html
    assert 'passage <a href="bookai:cite/0/4">' in html
    assert 'cite/0/5' not in html and 'cite/0/6' not in html and '[5]' in html and '[6]' in html
    assert markdown_to_html('[1]') == '<p>[1]</p>'  # without cite: left as text


def test_safe_links_stay_links_and_images_become_links():
    html = markdown_to_html('[calibre](https://calibre-ebook.com) ![cover](https://example.org/c.png)')
    assert '<a href="https://calibre-ebook.com">calibre</a>' in html
    assert '<a href="https://example.org/c.png">cover</a>' in html


@pytest.mark.parametrize('text, end', [
    ('', 0),
    ('one paragraph, still arriving', 0),
    ('first\n\nsecond', len('first\n\n')),
    ('first\n\nsecond\n\nthi', len('first\n\nsecond\n\n')),
    ('- a\n\n  still in a\n', 0),                       # an indented line continues the item
    ('```\ncode\n\nmore\n', 0),                          # a blank line inside a fence ends nothing
    ('```\ncode\n\nmore\n```\n\nafter\n', len('```\ncode\n\nmore\n```\n\n')),
    ('p\n\n```\ncode', len('p\n\n')),
])
def test_stable_end(text, end):
    assert stable_end(text) == end


def test_links_open_in_the_browser_only_when_clicked_and_only_web_ones(qapp, monkeypatch):
    import calibre.gui2
    from qt.core import QUrl
    from calibre_plugins.bookai.gui.chat import ChatView
    opened, ours = [], []
    monkeypatch.setattr(calibre.gui2, 'open_url', lambda url: opened.append(url.toString()))
    view = ChatView()
    view.link_activated.connect(lambda what, index: ours.append((what, index)))
    view.setHtml(markdown_to_html('[site](https://example.org/) [bad](javascript:alert(1))'))
    assert opened == []  # showing a link opens nothing
    for url in ('https://example.org/', 'javascript:alert(1)', 'file:///etc/passwd', 'bookai:copy/2'):
        view.on_link(QUrl(url))
    assert opened == ['https://example.org/'] and ours == [('copy', 2)]
