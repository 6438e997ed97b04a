# License: GPLv3 Copyright: the Book AI developers
"""Conversations of the History written out for the reader, as Markdown or as HTML: each one's
title, books, dates and model, then every question and its answer, with the passages the answer
cites (and where each is in the book) and the web pages it used.

Everything in a conversation came from outside (a model's answer, a service's model name, a
History file that anyone could have edited), so nothing of it is obeyed where the file is read:
control characters are shown as escapes (core.printable), addresses as core.web_links shows
them, and an answer's Markdown is made inert: in HTML it goes through conversation.render (raw
HTML shown as text, links to http, https and mailto only, images as links), and the document
forbids scripts and loads nothing (its Content-Security-Policy); in Markdown, raw HTML is
escaped, and links and images to anything but http, https and mailto keep only their words.

The same conversations give the same bytes: dates are written in UTC, nothing depends on when
or where the export runs.

No Qt: the History window and the command line both use it.
"""

import re
import time
from collections.abc import Sequence
from html import escape

from calibre_plugins.bookai.conversation.conversation import Conversation, Turn
from calibre_plugins.bookai.conversation.history import book_line
from calibre_plugins.bookai.conversation.prompts import passage_texts
from calibre_plugins.bookai.conversation.render import CODE, OPENS, TEXT, fenced, is_safe, markdown_to_html
from calibre_plugins.bookai.core.printable import inert, one_line
from calibre_plugins.bookai.core.web_links import is_web_address, kept_links, shown_address, site
from calibre_plugins.bookai.grounding.citations import cited_numbers, repeated_passages

load_translations()

FORMATS = ('md', 'html')  # by the extension of the file each is written to


def format_of(path: str, default: str = 'md') -> str:
    """The format a file's name asks for: html for .html and .htm, md for .md and .markdown, else default."""
    ext = path.rpartition('.')[2].lower() if '.' in path.rpartition('/')[2] else ''
    if ext in ('html', 'htm', 'xhtml'):
        return 'html'
    if ext in ('md', 'markdown', 'txt'):
        return 'md'
    return default


def export(convs: Sequence[Conversation], fmt: str) -> str:
    """convs as one document in fmt ('md' or 'html')."""
    return as_html(convs) if fmt == 'html' else as_markdown(convs)


# what each part of a turn shows {{{

def when(seconds: float) -> str:
    """A date and time, in UTC, the same wherever the export runs."""
    try:
        return time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(seconds))
    except (OverflowError, ValueError, OSError):  # a date no clock can show, from a hand-edited file
        return '?'


def shown_model(conv: Conversation) -> str:
    models = [conv.model] + [t.model for t in conv.turns]
    model = next((m for m in models if m), '')
    return one_line(f'{conv.provider} · {model}' if conv.provider and model else conv.provider or model)


def books_of(conv: Conversation) -> list[str]:
    return [one_line(book_line(b.title, b.authors_text)) for b in conv.books]


def cited(turn: Turn) -> tuple[list[tuple[int, str, str]], bool]:
    """The passages the answer of turn cites, as (number, where it is, its text), in the order
    first cited; for an answer that cites none, those whose words it repeats, and True."""
    if not turn.answer or not turn.places:
        return [], False
    texts = passage_texts(turn.passages)
    count = len(turn.places)
    numbers = [n for n in cited_numbers(turn.answer) if 0 < n <= count]
    repeated = False
    if not numbers:
        numbers = repeated_passages(turn.answer, [texts.get(n, '') for n in range(1, count + 1)])
        repeated = bool(numbers)
    out = []
    for n in numbers:
        place = turn.places[n - 1]
        where = _('{chapter}, at {position:.0%}').format(chapter=one_line(place.chapter), position=place.position) \
            if place.chapter else _('at {position:.0%}').format(position=place.position)
        out.append((n, where, inert(texts.get(n, '').strip())))
    return out, repeated


def sources(turn: Turn) -> tuple[list[tuple[str, str, str, str]], int]:
    """The web pages the answer of turn used, as (title, address, address shown, site), and how many
    more were left out."""
    links, left_out = kept_links(turn.web_links)  # held to the rules however the turn was made
    return [(w.title, w.url, shown_address(w.url), site(w.url)) for w in links if is_web_address(w.url)], \
        left_out + turn.web_links_left_out

# }}}


# Markdown {{{

MD_SPECIAL = re.compile(r'([\\`*_\[\]<>#|!{}])')


def md_text(text: str) -> str:
    """Plain text from outside as Markdown that shows it as it is: inert, its Markdown escaped."""
    return MD_SPECIAL.sub(r'\\\1', inert(text))


MD_LINK = re.compile(r'(!?)\[([^\]\n]*)\]\(\s*<?((?:[^()<>\s]|\([^()<>\s]*\))*)>?(?:\s+"[^"\n]*")?\s*\)')
MD_REFERENCE = re.compile(r'^( {0,3}\[[^\]\n]+\]:\s*)<?(\S*?)>?(\s.*)?$')
CODE_SPAN = re.compile(r'(`+)(?:.+?)\1')


def safe_link(m: 're.Match[str]') -> str:
    """A Markdown link or image kept only when it goes to http, https or mailto; an image as a link."""
    bang, words, target = m.groups()
    if target and not is_safe(target):
        return words
    return m.group(0)[len(bang):]  # an image only as a link to it: nothing is loaded where it is read


def inert_line(line: str) -> str:
    """A line of an answer's Markdown, outside code: its raw HTML escaped, its links to anything but
    http, https and mailto kept as their words, its images as links."""
    ref = MD_REFERENCE.match(line)
    if ref and ref.group(2) and not is_safe(ref.group(2)):
        return ref.group(1) + '#'
    out, pos = [], 0
    for code in CODE_SPAN.finditer(line):  # code spans are shown as they are by every renderer
        out.append(MD_LINK.sub(safe_link, line[pos:code.start()].replace('<', '&lt;')))
        out.append(code.group())
        pos = code.end()
    out.append(MD_LINK.sub(safe_link, line[pos:].replace('<', '&lt;')))
    return ''.join(out)


def inert_markdown(text: str) -> str:
    """An answer's Markdown, as a Markdown file may hold it: inert (control characters shown), raw
    HTML escaped and unsafe links left as words outside code blocks (inside them, shown as text by
    every renderer)."""
    out, where, fence = [], TEXT, ''
    for line, where, fence in fenced(inert(text).splitlines()):
        out.append(inert_line(line) if where == TEXT else line)
    if where in (OPENS, CODE):
        out.append(fence)  # an unclosed block would swallow what follows it
    return '\n'.join(out)


def quoted(text: str) -> str:
    return '\n'.join('> ' + line if line else '>' for line in text.splitlines() or [''])


def as_markdown(convs: Sequence[Conversation]) -> str:
    return '\n\n---\n\n'.join(conversation_markdown(c) for c in convs) + '\n'


def conversation_markdown(conv: Conversation) -> str:
    parts = [f'# {md_text(conv.title or _("Conversation"))}', '']
    for book in books_of(conv):
        parts.append(f'- {_("Book:")} {md_text(book)}')
    parts.append(f'- {_("Date:")} {when(conv.created)} – {when(conv.updated)}')
    if model := shown_model(conv):
        parts.append(f'- {_("Model:")} {md_text(model)}')
    if conv.selection:
        parts += ['', f'{_("About this passage:")}', '', quoted(md_text(conv.selection))]
    for i, turn in enumerate(conv.turns, 1):
        parts += ['', f'## {_("Question {n}").format(n=i)}', '', quoted(md_text(turn.question)), '']
        if turn.answer:
            parts += [f'### {_("Answer")}', '', inert_markdown(turn.answer)]
        if turn.error:
            parts += ['', f'*{_("Not answered:")}* {md_text(turn.error)}']
        passages, repeated = cited(turn)
        if passages:
            parts += ['', f'**{_("Passages whose words it repeats:") if repeated else _("Passages cited:")}**', '']
            for n, where, text in passages:
                parts.append(f'{n}. *{md_text(where)}*')
                if text:
                    parts += ['', '\n'.join('    ' + line for line in quoted(md_text(text)).splitlines()), '']
        pages, left_out = sources(turn)
        if pages or left_out:
            parts += ['', f'**{_("Sources:")}**', '']
            for title, address, shown, host in pages:
                parts.append(f'- [{md_text(title or host)}](<{address}>) — {md_text(shown)}' if '>' not in address
                             else f'- {md_text(title or host)} — {md_text(shown)}')
            if left_out:
                parts.append('- ' + md_text(ngettext('and {count} more page that is not kept',
                                                     'and {count} more pages that are not kept',
                                                     left_out).format(count=left_out)))
    return '\n'.join(parts)

# }}}


# HTML {{{

STYLE = ('body{font-family:sans-serif;max-width:48em;margin:2em auto;padding:0 1em;line-height:1.45}'
         'blockquote{border-left:3px solid #bbb;margin:0.5em 0;padding:0 1em;color:#333}'
         '.meta,.muted{color:#666}.question{background:#f3f3f3;padding:0.5em 1em;border-radius:4px}'
         'pre{background:#f6f6f6;padding:0.5em;overflow-x:auto}hr{margin:2em 0}')
# what the file may do when opened: nothing but show itself, its own style and its own links
POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def as_html(convs: Sequence[Conversation]) -> str:
    title = convs[0].title if len(convs) == 1 else _('Book AI conversations')
    body = '\n<hr>\n'.join(conversation_html(c, i) for i, c in enumerate(convs, 1))
    return ('<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">\n'
            '<meta name="referrer" content="no-referrer">\n'
            f'<title>{escape(inert(title or _("Conversation")))}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n'
            f'{body}\n</body>\n</html>\n')


def text_html(text: str) -> str:
    return escape(inert(text)).replace('\n', '<br>\n')


def conversation_html(conv: Conversation, index: int) -> str:
    parts = [f'<article id="c{index}">', f'<h1>{escape(inert(conv.title or _("Conversation")))}</h1>',
             '<ul class="meta">']
    for book in books_of(conv):
        parts.append(f'<li>{escape(_("Book:"))} {escape(book)}</li>')
    parts.append(f'<li>{escape(_("Date:"))} {when(conv.created)} – {when(conv.updated)}</li>')
    if model := shown_model(conv):
        parts.append(f'<li>{escape(_("Model:"))} {escape(model)}</li>')
    parts.append('</ul>')
    if conv.selection:
        parts.append(f'<p>{escape(_("About this passage:"))}</p><blockquote>{text_html(conv.selection)}</blockquote>')
    for i, turn in enumerate(conv.turns, 1):
        anchor = f'c{index}-q{i}'
        parts.append(f'<h2 id="{anchor}">{escape(_("Question {n}").format(n=i))}</h2>')
        parts.append(f'<div class="question">{text_html(turn.question)}</div>')
        passages, repeated = cited(turn)
        count = len(turn.places)

        def cite(n: int, anchor: str = anchor) -> str:
            if 0 < n <= count:
                return f'<a href="#{anchor}-p{n}">{n}</a>'
            return f'{n}?'
        if turn.answer:
            parts.append(f'<h3>{escape(_("Answer"))}</h3>')
            parts.append(markdown_to_html(inert(turn.answer), cite if count else None))
        if turn.error:
            parts.append(f'<p class="muted"><i>{escape(_("Not answered:"))}</i> {text_html(turn.error)}</p>')
        if passages:
            label = _('Passages whose words it repeats:') if repeated else _('Passages cited:')
            parts.append(f'<p><b>{escape(label)}</b></p><ol>')
            for n, where, text in passages:
                parts.append(f'<li value="{n}" id="{anchor}-p{n}"><i>{escape(where)}</i>'
                             + (f'<blockquote>{text_html(text)}</blockquote>' if text else '') + '</li>')
            parts.append('</ol>')
        pages, left_out = sources(turn)
        if pages or left_out:
            parts.append(f'<p><b>{escape(_("Sources:"))}</b></p><ul>')
            for title, address, shown, host in pages:
                parts.append(f'<li><a href="{escape(address)}" rel="noreferrer noopener">{escape(title or host)}</a>'
                             f' <span class="muted">— {escape(shown)}</span></li>')
            if left_out:
                parts.append('<li class="muted">' + escape(ngettext(
                    'and {count} more page that is not kept', 'and {count} more pages that are not kept',
                    left_out).format(count=left_out)) + '</li>')
            parts.append('</ul>')
    parts.append('</article>')
    return '\n'.join(parts)

# }}}
