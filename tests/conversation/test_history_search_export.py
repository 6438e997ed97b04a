# License: GPLv3 Copyright: the Book AI developers
"""The History searched and exported (conversation/history.py, conversation/export.py): every word
must be found, in any case, in a title, a book or the text of a question or an answer; title and
book hits come before text-only ones, then the newest; an export holds the title, the books, the
dates, the model, each question and answer with its cited passages and its web pages, in
Markdown and in HTML, the same bytes every time, and nothing of an answer obeyed."""

import json
from html.parser import HTMLParser

from calibre_plugins.bookai.conversation.books import BookInfo
from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.export import as_html, as_markdown, export, format_of, inert_markdown
from calibre_plugins.bookai.conversation.history import MAX_SEARCH_WORDS, History, search_words
from calibre_plugins.bookai.conversation.prompts import numbered_block
from calibre_plugins.bookai.core.messages import WebLink
from calibre_plugins.bookai.grounding.scopes import Place
from helpers.conversations import answered

LIBRARY = 'lib'
RAW = ('\x1b', '\x9b', '\x07', '\u202e')


def conversation(title, authors, question, answer, asked, conv_id, places=(), passages='', links=()):
    return answered(BookInfo(1, title, authors), LIBRARY, question, answer, asked, asked - 60, conv_id, places,
                    passages, links)


def grounded(answer='Paul meets the Reverend Mother [1], then the desert [2].', conv_id='dune'):
    block = numbered_block([('Chapter 1, at 3%', 'The Reverend Mother tests Paul with the box.'),
                            ('Chapter 9, at 40%', 'The desert is vast and the worms are near.')])
    return conversation('Dune', ('Frank Herbert',), 'Who tests Paul?', answer, 1_700_000_000, conv_id,
                        (Place('Chapter 1', 0.03), Place('Chapter 9', 0.40)), block,
                        (WebLink('Dune (novel)', 'https://en.wikipedia.org/wiki/Dune_(novel)'),))


def library(tmp_path, *convs):
    history = History(str(tmp_path))
    for conv in convs:
        history.save(conv)
    return history


def ids(found):
    return [s.id for s in found]


# search {{{

def test_every_word_must_match_in_any_case(tmp_path):
    h = library(tmp_path, conversation('Emma', ('Jane Austen',), 'Who marries Emma?', 'Mr Knightley.', 100, 'emma'),
                conversation('Persuasion', ('Jane Austen',), 'Where is Bath?', 'In Somerset.', 200, 'persuasion'))
    assert ids(h.search(LIBRARY, 'AUSTEN')) == ['persuasion', 'emma']           # newest first
    assert ids(h.search(LIBRARY, 'austen knightley')) == ['emma']               # both words, one of them in an answer
    assert ids(h.search(LIBRARY, 'somerset BATH')) == ['persuasion']            # a question and an answer
    assert ids(h.search(LIBRARY, 'austen dickens')) == []                       # one word found nowhere
    assert ids(h.search(LIBRARY, '  ')) == ['persuasion', 'emma']               # no words: all of them


def test_title_and_book_hits_come_before_text_only_hits(tmp_path):
    in_text = conversation('Emma', ('Jane Austen',), 'Is there rain?', 'Rain at Highbury.', 900, 'newest')
    in_title = conversation('Rain', ('Someone',), 'What happens?', 'Weather.', 100, 'oldest')
    in_author = conversation('Clouds', ('Ann Rain',), 'What happens?', 'Weather.', 500, 'middle')
    h = library(tmp_path, in_text, in_title, in_author)
    assert ids(h.search(LIBRARY, 'rain')) == ['middle', 'oldest', 'newest']


def test_the_words_of_a_search_are_bounded():
    words = search_words(' '.join(f'w{i}' for i in range(1000)) + ' ' + 'x' * 10_000)
    assert len(words) == MAX_SEARCH_WORDS and all(len(w) <= 100 for w in words)
    assert search_words('Rain rain RAIN') == ['rain']


def test_a_damaged_file_is_set_aside_and_the_search_goes_on(tmp_path):
    h = library(tmp_path, grounded())
    folder = tmp_path / LIBRARY
    (folder / 'broken.json').write_text('{"format": 1, "id":')
    (folder / 'deep.json').write_text('[' * 100_000)
    assert ids(h.search(LIBRARY, 'dune')) == ['dune']
    assert len(h.damaged) == 2 and all(name.endswith('.damaged') for name in h.damaged)
    assert sorted(p.name for p in folder.iterdir()) == ['broken.json.damaged', 'deep.json.damaged', 'dune.json']


def test_search_of_a_library_without_history(tmp_path):
    assert History(str(tmp_path)).search(LIBRARY, 'anything') == []

# }}}


# export {{{

def test_markdown_holds_everything_the_conversation_holds():
    md = as_markdown([grounded()])
    assert md.startswith('# Dune\n')
    for expected in ('Dune by Frank Herbert', '2023-11-14 22:12 UTC', 'openai · gpt-5-mini', '> Who tests Paul?',
                     'Paul meets the Reverend Mother [1], then the desert [2].',
                     '1. *Chapter 1, at 3%*', 'The Reverend Mother tests Paul with the box.',
                     '2. *Chapter 9, at 40%*', 'The desert is vast',
                     '[Dune (novel)](<https://en.wikipedia.org/wiki/Dune_(novel)>)'):
        assert expected in md, expected


def test_html_holds_everything_and_links_citations_to_their_passages():
    html = as_html([grounded()])
    assert html.startswith('<!DOCTYPE html>') and "default-src 'none'" in html
    for expected in ('<h1>Dune</h1>', 'Dune by Frank Herbert', 'openai · gpt-5-mini', 'Who tests Paul?',
                     '<a href="#c1-q1-p1">1</a>', '<a href="#c1-q1-p2">2</a>', 'id="c1-q1-p1"', 'Chapter 9, at 40%',
                     'The Reverend Mother tests Paul with the box.',
                     '<a href="https://en.wikipedia.org/wiki/Dune_(novel)" rel="noreferrer noopener">Dune (novel)</a>'):
        assert expected in html, expected


def test_an_answer_that_cites_nothing_shows_the_passages_it_repeats():
    conv = grounded('The Reverend Mother tests Paul with the box, they say.')
    assert 'Passages whose words it repeats:' in as_markdown([conv])
    assert 'id="c1-q1-p1"' in as_html([conv])


HOSTILE = ('<script>alert(1)</script> [click](javascript:alert(2)) ![x](https://evil.example/pixel.png)'
           ' <img src=https://evil.example/a.png onerror=alert(3)> \x1b]52;c;cHduZWQ=\x07\x1b[2J\x9b31m \u202eevil\n\n'
           '[ref]: javascript:alert(4)\n\n<a href="javascript:alert(5)">x</a>')


def hostile():
    return conversation('<b>Title</b>\x1b[2J', ('\u202eAuthor',), 'Why?\x07 <script>q()</script>', HOSTILE, 1000,
                        'bad', links=(WebLink('<script>t()</script>', 'https://user:pw@example.org/x'),
                                      WebLink('evil', 'javascript:alert(6)')))


class Tags(HTMLParser):
    """Every tag and attribute a browser would make of a document."""

    def __init__(self, html):
        super().__init__()
        self.tags, self.attrs = set(), []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs += [(tag, k, v or '') for k, v in attrs]


def obeyed(html):
    """What of html would run or load: script, an image, an embed, an event handler, a link to
    anything but the document, http, https or mailto."""
    t = Tags(html)
    bad = sorted(t.tags & {'script', 'img', 'iframe', 'object', 'embed', 'svg', 'link', 'base', 'form'})
    bad += [(tag, k, v) for tag, k, v in t.attrs if k.startswith('on') or k in ('src', 'srcset')
            or k == 'href' and not v.startswith(('#', 'http:', 'https:', 'mailto:'))]
    return bad


def test_nothing_of_a_hostile_answer_is_obeyed_in_html():
    html = as_html([hostile()])
    assert obeyed(html) == []
    assert not [c for c in RAW if c in html]
    assert r'\x1b]52;c;cHduZWQ=\x07' in html and r'\u202e' in html  # shown, not obeyed
    assert 'user:pw' not in html and '&lt;script&gt;alert(1)&lt;/script&gt;' in html


def test_nothing_of_a_hostile_answer_is_obeyed_in_markdown():
    md = as_markdown([hostile()])
    import markdown  # as any renderer would show the file, raw HTML passed through
    assert obeyed(markdown.markdown(md)) == []
    assert not [c for c in RAW if c in md]
    assert 'user:pw' not in md and '&lt;script>alert(1)&lt;/script>' in md
    assert '[x](https://evil.example/pixel.png)' in md and '![' not in md  # an image only as a link
    assert ' click ' in md  # a link to script: its words only


def test_code_in_an_answer_is_left_as_code():
    text = 'Run `x < y` here.\n\n```\n<script>kept as code</script>\n```\n\nAfter <b>.'
    out = inert_markdown(text)
    assert '`x < y`' in out and '<script>kept as code</script>' in out and 'After &lt;b>.' in out
    assert inert_markdown('```\nunclosed <b>') == '```\nunclosed <b>\n```'


def test_export_is_the_same_bytes_every_time_and_holds_several_conversations():
    convs = [grounded(), hostile()]
    for fmt in ('md', 'html'):
        assert export(convs, fmt) == export([Conversation.from_dict(json.loads(json.dumps(c.as_dict())))
                                             for c in convs], fmt)
    assert export(convs, 'md').count('\n---\n') == 1 and export(convs, 'html').count('<article') == 2


def test_the_format_follows_the_file_name():
    assert [format_of(p) for p in ('a.html', 'b.HTM', 'c.md', 'd.markdown', 'e', 'f.txt', 'x.y/z')] == [
        'html', 'html', 'md', 'md', 'md', 'md', 'md']
    assert format_of('noext', 'html') == 'html'

# }}}
