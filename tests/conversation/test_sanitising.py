# License: GPLv3 Copyright: the Book AI developers
"""A hostile reply is shown, never obeyed: through the real renderer and the real chat view
(offscreen), no tag, attribute or link scheme in it comes alive, nothing is loaded from
anywhere, and no link in it opens anything but a web page when clicked. The model's name,
and the chapter titles its citations point to, are no way in either."""

from html.parser import HTMLParser

import pytest

from calibre_plugins.bookai.conversation.conversation import Turn
from calibre_plugins.bookai.grounding.scopes import Place
from calibre_plugins.bookai.conversation.render import markdown_to_html

HOSTILE = [
    '<script>alert(1)</script>',
    'hello <iframe src="https://example.org"></iframe>',
    '<div>\n<object data="https://example.org/x.swf"></object>\n</div>',
    '<embed src="https://example.org/x.swf">',
    '<img src="http://tracker.example/p.png">',
    '<img src=x onerror="alert(1)">',
    '<a href="javascript:alert(1)">x</a>',
    '<a href="#" onclick="steal()">x</a>',
    '[click](javascript:alert(1))',
    '[x](data:text/html,<script>alert(1)</script>)',
    '[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)',
    '<svg onload="alert(1)"><circle r="1"/></svg>',
    '<style>p { background: url(http://tracker.example/bg.png) }</style>',
    '<meta http-equiv="refresh" content="0; url=http://evil.example/">',
    '<form action="http://evil.example/"><input name="q"><button>Go</button></form>',
    '<link rel="stylesheet" href="http://tracker.example/s.css">',
    '<base href="http://evil.example/">',
    '<p style="background-image: url(http://tracker.example/bg.png)">x</p>',
    '<table background="http://tracker.example/bg.png"><tr><td>x</td></tr></table>',
    '![](http://remote.example/x.png)',
    '![a picture](https://tracker.example/p.png "title")',
    '![x][img]\n\n[img]: http://remote.example/x.png',
    '[x](&#106;avascript:alert(1))',
    '<a href="&#106;avascript:alert(1)">x</a>',
    '[x](JaVaScRiPt:alert(1))',
    '[x]( javascript:alert(1))',
    '[x](java\tscript:alert(1))',
    '[x](\x01javascript:alert(1))',
    '[x](<javascript:alert(1)>)',
    '[x][ref]\n\n[ref]: javascript:alert(1)',
    '[x](vbscript:msgbox(1))',
    '[x](file:///etc/passwd)',
    '[settings](bookai:settings/0) and [a passage](bookai:cite/0/1)',  # a reply cannot make our links
    '[x](https://ok.example/ "a\\" onmouseover=\\"alert(1)")',
    '```html\n<script>alert(1)</script>\n```',
    '| a | b |\n|---|---|\n| <img src=http://remote.example/t.png> | [x](javascript:alert(1)) |',
    'As [1] says <img src=http://remote.example/[1].png> and [2](javascript:alert(1))',
]
TAGS = {'p', 'a', 'em', 'strong', 'code', 'pre', 'ul', 'ol', 'li', 'blockquote', 'hr', 'br', 'table', 'thead',
        'tbody', 'tr', 'th', 'td', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'span'}
WEB = ('http:', 'https:', 'mailto:')
PLACES = (Place('Chapter "1"><img src=http://remote.example/c.png onerror=alert(1)>', 0.1),
          Place("<script>alert('chapter')</script>", 0.5))
ASSISTANT = 'evil-model<img src=http://remote.example/m.png>'


def elements(html):
    """(tag, attributes) of every element in html, attribute values unescaped as a browser would."""
    found = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, dict(attrs)))
        handle_startendtag = handle_starttag
    Collect().feed(html)
    return found


def assert_inert(html, own_links=()):
    for tag, attrs in elements(html):
        assert tag in TAGS, (tag, html)
        for name, value in attrs.items():
            assert name in ('href', 'title', 'style', 'class', 'border', 'cellspacing', 'cellpadding', 'align'), (name, html)
            assert 'url(' not in (value or '') and 'expression' not in (value or ''), html
        href = attrs.get('href')
        if href is not None:
            # as a browser reads a scheme: control characters and blanks dropped, any case
            scheme = ''.join(c for c in href if c > ' ').lower()
            assert scheme.startswith(WEB) or href in own_links, html


@pytest.mark.parametrize('reply', HOSTILE)
def test_the_rendered_html_has_nothing_live(reply):
    assert_inert(markdown_to_html(reply))
    cite = lambda n: f'<a href="bookai:cite/0/{n}">{n}</a>'  # noqa: E731
    assert_inert(markdown_to_html(reply, cite), {'bookai:cite/0/1', 'bookai:cite/0/2'})


@pytest.fixture
def view(qapp):
    from qt.core import QUrl
    from calibre_plugins.bookai.gui.chat import ChatView

    class Recording(ChatView):
        """The real view, its loadResource calls recorded."""
        asked = []

        def loadResource(self, kind, url):
            self.asked.append(QUrl(url).toString())
            return super().loadResource(kind, url)
    v = Recording()
    v.asked = []
    v.resize(600, 400)
    v.show()
    yield v
    v.close()


def document_links_and_images(view):
    """The link targets and the images in the view's document, as Qt holds them."""
    from qt.core import QTextFormat
    links, images = set(), []
    block = view.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fmt = it.fragment().charFormat()
            if fmt.isAnchor():
                links.update(h for h in (fmt.anchorHref(),) if h)
            if fmt.objectType() == QTextFormat.ObjectTypes.ImageObject.value or fmt.isImageFormat():
                images.append(fmt.toImageFormat().name())
            it += 1
        block = block.next()
    return links, images


def assert_view_is_inert(view, monkeypatch):
    import calibre.gui2
    from qt.core import QApplication, QUrl
    view.grab()  # paints: anything the document would load, it asks for now
    QApplication.processEvents()
    assert view.asked == []
    links, images = document_links_and_images(view)
    assert images == []
    ours = {'bookai:copy/0', 'bookai:cite/0/1', 'bookai:cite/0/2'}
    assert all(h.lower().startswith(WEB) or h in ours for h in links), links
    assert 'bookai:copy/0' in links  # the view's own links are there: the check looks at real links
    opened, signalled = [], []
    monkeypatch.setattr(calibre.gui2, 'open_url', lambda url: opened.append(url.toString()))
    view.link_activated.connect(lambda what, index: signalled.append((what, index)))
    view.citation_activated.connect(lambda turn, n: signalled.append(('cite', turn, n)))
    for href in links:  # every link in the reply clicked
        view.on_link(QUrl(href))
    assert all(u.lower().startswith(WEB) for u in opened), opened
    assert set(signalled) <= {('copy', 0), ('cite', 0, 1), ('cite', 0, 2)}, signalled


def turn_for(reply):
    return Turn('question <img src=http://remote.example/q.png>', reply, model=ASSISTANT, places=PLACES,
                finish_reason='stop')


@pytest.mark.parametrize('reply', HOSTILE)
def test_the_chat_view_shows_a_whole_reply_inertly(view, reply, monkeypatch):
    view.show_conversation([turn_for(reply + '\n\nSee [1] and [2].')], ASSISTANT)
    assert_view_is_inert(view, monkeypatch)


@pytest.mark.parametrize('reply', HOSTILE)
def test_the_chat_view_shows_a_streamed_reply_inertly(view, reply, monkeypatch):
    from calibre_plugins.bookai.gui.chat import citing
    turn = turn_for(reply + '\n\nSee [1] and [2].')
    view.begin_answer(turn.question, ASSISTANT, citing(0, turn))
    for i in range(0, len(turn.answer), 5):  # as it streams: five characters at a time
        view.add_text(turn.answer[i:i + 5])
        view.flush()
    view.end_answer(0, turn, ASSISTANT)
    assert_view_is_inert(view, monkeypatch)


def test_the_recording_sees_what_a_live_image_would_load(view):
    """The check above can fail: raw HTML with an image, set directly, is asked for."""
    from qt.core import QApplication
    view.setHtml('<p>x <img src="http://remote.example/x.png"></p>')
    view.grab()
    QApplication.processEvents()
    assert 'http://remote.example/x.png' in view.asked
    assert document_links_and_images(view)[1] == ['http://remote.example/x.png']


def test_the_chat_loads_no_resource(qapp):
    from qt.core import QTextDocument, QUrl
    from calibre_plugins.bookai.gui.chat import ChatView
    view = ChatView()
    for url in ('https://tracker.example/p.png', 'file:///etc/passwd', 'data:image/png;base64,AAAA'):
        assert view.loadResource(QTextDocument.ResourceType.ImageResource.value, QUrl(url)) is None
