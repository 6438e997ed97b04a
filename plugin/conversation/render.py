# License: GPLv3 Copyright: the Book AI developers
"""A model's Markdown as safe HTML for the chat (no Qt here).

Uses the python-markdown calibre bundles, with tables. What a model writes is
shown, never obeyed: raw HTML in a reply is escaped and shown as text, links
keep only http, https and mailto targets, and images become plain links, so
rendering a reply loads nothing from anywhere.

For streaming, stable_end() says how much of a growing reply is made of
finished blocks: those are rendered once, and only the unfinished tail is
rendered again as more text arrives.
"""

import re
from collections.abc import Callable, Iterable, Iterator
from html import escape
from typing import TYPE_CHECKING

from calibre_plugins.bookai.grounding.citations import linked

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

    from markdown import Markdown

SAFE_SCHEMES = ('http:', 'https:', 'mailto:')
FENCE = re.compile(r'^ {0,3}(`{3,}|~{3,})')

_markdown = None


def renderer() -> 'Markdown':
    """The one Markdown converter, made on first use (with python-markdown, imported then)."""
    global _markdown
    if _markdown is None:
        # python-markdown is imported on the first render, not by every module that imports this one
        import markdown
        from markdown.treeprocessors import Treeprocessor

        class Safe(Treeprocessor):
            """Makes a rendered reply inert: images become links, links keep safe targets only."""

            def run(self, root: 'Element') -> None:
                for el in root.iter():
                    if el.tag == 'img':
                        src, alt = el.get('src', ''), el.get('alt', '') or el.get('src', '')
                        el.attrib.clear()
                        el.tag = 'a'
                        el.text = alt
                        if is_safe(src):
                            el.set('href', src)
                    elif el.tag == 'a':
                        href = el.get('href', '')
                        title = el.get('title')
                        el.attrib.clear()
                        if is_safe(href):
                            el.set('href', href)
                        if title:
                            el.set('title', title)

        md = markdown.Markdown(extensions=['tables', 'fenced_code', 'sane_lists'])
        # raw HTML is shown as the text it is, never passed through
        md.preprocessors.deregister('html_block')
        md.inlinePatterns.deregister('html')
        md.treeprocessors.register(Safe(md), 'bookai_safe', 0)
        _markdown = md
    return _markdown


def is_safe(url: str) -> bool:
    """Whether a link may keep url: http, https and mailto only."""
    url = url.strip().lower()
    return url.startswith(SAFE_SCHEMES)


# Qt's rich text draws no table borders unless the table asks for them
TABLE = '<table border="1" cellspacing="0" cellpadding="4" style="border-collapse: collapse">'


TEXT, OPENS, CODE, CLOSES = 'text', 'opens', 'code', 'closes'  # where a line is, as fenced() tells


def closes(fence: str, m: 're.Match[str] | None', line: str) -> bool:
    """Whether line (m: FENCE's match of it) ends the code block fence opened: the same
    character, at least as many, and nothing after them."""
    return m is not None and m.group(1).startswith(fence) and not line.strip()[len(m.group(1)):]


def fenced(lines: Iterable[str]) -> Iterator[tuple[str, str, str]]:
    """(line, where, fence) for each of lines: where is TEXT outside fenced code, OPENS for the line
    that opens a block, CODE inside it, CLOSES for the line that ends it; fence is the block's
    (three of its character: what closes it), '' outside. The one walk over fenced code blocks
    that rendering, streaming and export share."""
    fence = ''
    for line in lines:
        m = FENCE.match(line)
        if fence:
            if closes(fence, m, line):
                yield line, CLOSES, fence
                fence = ''
            else:
                yield line, CODE, fence
        elif m:
            fence = m.group(1)[0] * 3
            yield line, OPENS, fence
        else:
            yield line, TEXT, ''


LIST_ITEM = re.compile(r'(?:\d{1,9}[.)]|[-*+])[ \t]')
SHALLOW = re.compile(r'( {1,3})(?=\S)')


def nested_lists(text: str) -> str:
    """text with the lines under a list item indented by 1 to 3 spaces indented by 4, as
    python-markdown wants them: models write nested items the CommonMark way ("1. x" then
    "   - y"), which python-markdown would otherwise read as a new list after each item."""
    out, in_list = [], False
    for line, where, _fence in fenced(text.splitlines(keepends=True)):
        if where == TEXT:
            if line.strip() and not line[0].isspace():
                in_list = bool(LIST_ITEM.match(line))
            elif in_list and (shallow := SHALLOW.match(line)):
                line = '    ' + line[shallow.end():]
        out.append(line)
    return ''.join(out)


def markdown_to_html(text: str, cite: Callable[[int], str] | None = None) -> str:
    """cite(number) -> HTML: what each [n] citation of a passage becomes (None: left as text)."""
    md = renderer()
    try:
        html = md.reset().convert(nested_lists(text)).replace('<table>', TABLE)
    except Exception:  # python-markdown failing on odd input: show the words
        html = '<p>' + escape(text).replace('\n', '<br>') + '</p>'
    return html if cite is None else with_citations(html, cite)


TAG = re.compile(r'(<[^>]*>)')


def with_citations(html: str, cite: Callable[[int], str]) -> str:
    """The citations in html's text (not in code): their numbers through cite()."""
    parts, in_code = TAG.split(html), 0
    for i, part in enumerate(parts):
        if i % 2:  # a tag
            name = part[1:].lstrip('/').split(None, 1)[0].rstrip('>').lower() if len(part) > 2 else ''
            if name in ('code', 'pre'):
                in_code += -1 if part.startswith('</') else 1
        elif not in_code and '[' in part:
            parts[i] = linked(part, cite)
    return ''.join(parts)


def stable_end(text: str) -> int:
    """The length of the leading part of text made of finished blocks: up to the last
    blank line (outside a code fence) that is followed by an unindented line, so that
    a block cannot change once it is rendered. 0 when nothing is finished yet."""
    end = pos = 0
    previous_blank = in_code = False
    for line, where, _fence in fenced(text.splitlines(keepends=True)):
        if not line.endswith('\n'):  # a line still arriving: if it starts a new block, the one before is done
            if not in_code and previous_blank and not line[0].isspace():
                end = pos
            break
        if previous_blank and (where == OPENS or where == TEXT and line.strip() and not line[0].isspace()):
            end = pos
        in_code = where in (OPENS, CODE)
        previous_blank = not line.strip() and not in_code
        pos += len(line)
    return end
