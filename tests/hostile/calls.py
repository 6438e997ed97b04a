# License: GPLv3 Copyright: the Book AI developers
"""Outside bytes handed to a function: web pages an answer names, a book's comments and its
full-text index, templates and prompts, what calibre's viewer and conversion worker say; books
in every format Book AI reads; and a cover put on a book of a real library.
"""

import io
import zipfile
from pathlib import Path
from typing import Any

from helpers import images
from hostile import payloads as P
from hostile.isolation import Observed
from hostile.stores import SENTINEL, FileSurface
from hostile.surfaces import MB, Context, Payload, Surface, bound_value, plugin

GOOD = 'The good chapter.'
READ_DIRECTLY = ('EPUB', 'KEPUB')
# calibre's conversion of a book, in its worker, lowered from half an hour (a long PDF's time) for a
# hostile book of a few MB: that it is ended, with a sentence, is what the battery sees. Seconds of
# CPU time (core.isolated): a good book of the battery converts in about one
CONVERSION_SECONDS = 5


def code_ran(where: Path) -> list[str]:
    return [f'code from outside ran: {p} was written' for p in (where / SENTINEL, where.parent / SENTINEL)
            if p.exists()]


class CallSurface(Surface):
    """A function given the bytes (or the text, the values) directly, as its callers give them."""

    def __init__(self, attacks: tuple[str, ...]):
        self.attacks = attacks

    def use(self, handle: Any, ctx: Context, where: Path) -> Observed:
        return self.call(handle, where, ctx)

    def call(self, data: Any, where: Path, ctx: Context) -> Observed:
        raise NotImplementedError

    def left(self, payload: Payload, handle: Any, where: Path, observed: Observed) -> list[str]:
        return code_ran(where)


# a model's calls of tools {{{

class ToolCalls(CallSurface):
    """The tools a model asks to be run, as a stream's reader hands them on (ToolCallsRead, then
    ToolCall: bounded, one printable line of a name) and as they are sent back to the service
    (providers.base.arguments_object: the arguments as an object, {} when they are not one).
    Quiet: a call cut (ToolCall.cut), or with arguments that are no object, is the model's to be
    told of (the lookup loop answers it as a bad call), not the reader's."""

    quiet = True

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        if attack == 'control_chars':
            return [Payload('escapes in the name and the id', [(P.with_escapes('id'), P.with_escapes('search'), '{}')])]
        if attack == 'oversized':
            return [Payload('arguments of 64 MB', [('a', 'search', '"' + 'x' * 64 * MB + '"')], 64 * MB),
                    Payload('a name of 64 MB', [('a', 'x' * 64 * MB, '{}')], 64 * MB),
                    Payload('100,000 calls', [(str(i), 'search', '{}') for i in range(100_000)], 20 * MB)]
        if attack == 'deep_json':
            return [Payload('arguments nested 100,000 levels', [('a', 'search', P.DEEP.decode())])]
        if attack == 'wrong_types':
            return [Payload(f'{k} as {name}', [(v, 'search', '{}') if k == 'id' else ('a', v, '{}') if k == 'name'
                                              else ('a', 'search', v)])
                    for k in ('id', 'name', 'arguments') for name, v in P.JSON_TYPES.items() if not isinstance(v, str)]
        raise ValueError(attack)

    def call(self, data: Any, where: Path, ctx: Context) -> Observed:
        from calibre_plugins.bookai.providers.base import arguments_object
        from calibre_plugins.bookai.providers.streaming import ToolCallsRead
        read = ToolCallsRead()
        for i, (call_id, name, arguments) in enumerate(data):
            read.begin(i, call_id, name)
            read.add(i, arguments)
        calls = read.finished()
        sent = [arguments_object(c.arguments) for c in calls]
        seen = Observed(facts={'count': len(calls), 'sent': len(sent)})
        seen.shown = [t for c in calls for t in (c.id, c.name, c.arguments)]
        return seen


# }}}


# web pages an answer names {{{

class WebLinks(CallSurface):
    """The web pages an answer names (a Done's web_links, a History file's), as a turn keeps them
    (core.web_links.kept_links) and the command line and the chat show them."""

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        if attack == 'urls':
            out = [Payload(f'look-alike host {h}', [('A page', u)])
                   for h, u in zip(P.LOOKALIKE_HOSTS, P.LOOKALIKE_URLS)]
            out.append(Payload('the address as its title', [(u, u) for u in P.LOOKALIKE_URLS]))
            out.append(Payload('user:password in the address', [('A page', P.USERINFO_URL)]))
            out.append(Payload('user:password as its title', [(P.USERINFO_URL, P.USERINFO_URL)]))
            return out
        if attack == 'control_chars':
            return [Payload('escapes in titles and addresses', [
                (P.with_escapes('A page'), 'https://example.org/' + P.ESCAPES),
                (P.with_escapes('B'), 'https://b.example/')])]
        if attack == 'oversized':
            return [Payload('200,000 pages', [(f'Page {i}', f'https://example.org/{i}') for i in range(200_000)],
                            100 * MB),
                    Payload('a title of 64 MB', [('x' * 64 * MB, 'https://example.org/')], 64 * MB),
                    Payload('an address of 64 MB', [('A page', 'https://example.org/' + 'x' * 64 * MB)], 64 * MB)]
        if attack == 'wrong_types':
            return [Payload(f'{k} as {name}', [(v, 'https://example.org/') if k == 'title' else ('A page', v)])
                    for k in ('title', 'url') for name, v in P.JSON_TYPES.items() if not isinstance(v, str)]
        raise ValueError(attack)

    def call(self, data: Any, where: Path, ctx: Context) -> Observed:
        from calibre_plugins.bookai import cli
        from calibre_plugins.bookai.core.messages import WebLink
        from calibre_plugins.bookai.core.web_links import kept_links, site
        links, left_out = kept_links([WebLink(t, u) for t, u in data])
        out = io.StringIO()
        for w in links:
            cli.say(out, f'- {w.title} <{w.url}>')
        cut = sum(1 for w in links if w.title.endswith('…'))  # a title cut shows it was: the reader sees it
        return Observed(shown=[out.getvalue()] + [t for w in links for t in (w.title, w.url, site(w.url))],
                        facts={'kept': len(links), 'left out': left_out + cut})

# }}}


# what a lookup the model made says, under the answer {{{

class LookupsShown(CallSurface):
    """The lookups the model made while answering (conversation.lookups.Lookup: its tool's name and
    arguments as the model wrote them, the summary of what came of it, a History file's as its
    own), as the windows show them under the answer (gui.lookups: lines of plain text, as HTML)."""

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        good = ('search_book', '{"query": "the keeper"}', "searched 'the keeper': 1 passage")
        if attack == 'control_chars':
            return [Payload('escapes in the summary and the arguments',
                            [(good[0], P.with_escapes(good[1]), P.with_escapes(good[2]))])]
        if attack == 'oversized':
            return [Payload('a summary of 64 MB', [(good[0], good[1], 'x' * 64 * MB)], 64 * MB),
                    Payload('200,000 lookups', [good] * 200_000, 20 * MB)]
        if attack == 'wrong_types':
            return [Payload(f'the summary as {name}', [(good[0], good[1], v)])
                    for name, v in P.JSON_TYPES.items() if not isinstance(v, str)]
        raise ValueError(attack)

    def call(self, data: Any, where: Path, ctx: Context) -> Observed:
        from calibre_plugins.bookai.conversation.lookups import Lookup
        from calibre_plugins.bookai.grounding.scopes import Place
        lookups = plugin('gui.lookups')
        made = [Lookup(tool, arguments, summary, 1, (Place('Chapter 1', 0.1),)) for tool, arguments, summary in data]
        lines = [lookups.lookup_line(lookup) for lookup in made[:lookups.MOST_LOOKUPS_SHOWN]]
        html = lookups.lookups_html(0, made, True)
        cut = sum(1 for line in lines if line.endswith('…'))  # a line cut shows it was: the reader sees it
        return Observed(shown=lines + [html], facts={'left out': max(0, len(made) - len(lines)) + cut})

# }}}


# a book's comments, and its text in calibre's full-text index {{{

def hostile_html(variant: str) -> str:
    """The hostile chapter of a variant, as HTML (a book's comments, a page of text)."""
    chapters = P.hostile_chapters()
    if variant == 'zip bomb':
        return '<p>' + ' ' * (64 * MB) + '</p>'
    body = chapters[variant][1]
    return body.decode('utf-8') if isinstance(body, bytes) else f'<div>{body}</div>'


class BookComments(CallSurface):
    """A book's comments (HTML, often downloaded with its metadata): sent with a question as
    Markdown (conversation.books.comments_as_markdown) and with a cover's prompt as plain text
    (covers.prompt.description_text)."""

    variants_of = {'hostile_book': ('millions of elements', 'deep nesting', 'huge chapter', 'many attributes',
                                    'entity expansion')}

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        if attack == 'hostile_book':
            html = hostile_html(variant)
            return [Payload(variant, html, len(html))]
        if attack == 'control_chars':
            return [Payload('escapes in the comments', f'<p>{P.with_escapes("A comment")}</p>')]
        raise ValueError(attack)

    def call(self, html: str, where: Path, ctx: Context) -> Observed:
        from calibre.ebooks.metadata.book.base import Metadata
        books = plugin('conversation.books')
        prompt = plugin('covers.prompt')
        markdown = books.comments_as_markdown(html)
        mi = Metadata('A book', ['An author'])
        mi.comments = html
        description = prompt.description_text(mi)
        return Observed(shown=[description], facts={'markdown': len(markdown)})


class FullTextIndex(CallSurface):
    """A book's text as calibre's full-text index gives it back, its matches marked, read into the
    passages Ask my library sends (grounding.library_passages.best_passages)."""

    variants_of = {'hostile_book': ('millions of elements', 'huge chapter')}

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        lib = plugin('grounding.library_passages')
        hit = f'{lib.HIT_START}rain{lib.HIT_END}'
        if variant == 'millions of elements':  # a match in every word
            text = f'{hit} ' * 3_000_000
        else:  # one paragraph of 64 MB with a match at its end
            text = 'word ' * (64 * MB // 5) + hit
        return [Payload(variant, text, len(text))]

    def call(self, marked: str, where: Path, ctx: Context) -> Observed:
        lib = plugin('grounding.library_passages')
        found = lib.best_passages(marked)
        return Observed(facts={'passages': len(found), 'longest': max((len(p[2]) for p in found), default=0)})

# }}}


# templates and prompts {{{

class CoverTemplates(CallSurface):
    """The calibre templates that make a cover's title, authors and series (the cover settings,
    or carried over from calibre's gui.json), evaluated for the prompt (covers.prompt.cover_texts)."""

    # a python: template in the reader's own settings is the reader's own code, as calibre runs it; one
    # from calibre's files is the calibre/gui.json entry's (carried over only with consent)
    variants_of = {'code': ('backtracking regex', 'looping template', 'format attacks')}

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        sentinel = ctx.scratch / SENTINEL
        template = {'python template': P.python_template(sentinel), 'backtracking regex': P.BACKTRACKING_TEMPLATE,
                    'looping template': P.LOOPING_TEMPLATE, 'format attacks': P.FORMAT_ATTACKS[0]}[variant]
        return [Payload(variant, {'title': template, 'authors': template, 'series': template})]

    def call(self, templates: dict, where: Path, ctx: Context) -> Observed:
        from calibre.ebooks.metadata.book.base import Metadata
        prompt = plugin('covers.prompt')
        mi = Metadata(P.BACKTRACKING_TITLE, ['An author'])
        texts = prompt.cover_texts(mi, templates)
        return Observed(shown=list(texts), facts={'texts': list(texts)})


class QuickActions(CallSurface):
    """A quick action's prompt template (the settings, or calibre's files carried over), filled
    in with the book's and the selection's values (conversation.actions.fill_template)."""

    variants_of = {'code': ('python template', 'format attacks')}

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        if variant == 'python template':
            return [Payload(variant, P.python_template(ctx.scratch / SENTINEL))]
        return [Payload(f'format attack {t}', t) for t in P.FORMAT_ATTACKS]

    def call(self, template: str, where: Path, ctx: Context) -> Observed:
        actions = plugin('conversation.actions')
        filled = actions.fill_template(template, {'title': 'A book', 'authors': 'An author', 'selected': 'a word'})
        seen = Observed(shown=[filled[:1000]], facts={'length': len(filled)})
        if filled != template and ('<class' in filled or 'mro' in filled or 'function' in filled):
            seen.facts['ran'] = f'the template reached into Python objects: {filled[:200]!r}'
        if len(filled) > len(template) + 1000:
            seen.facts['ran'] = f'the template made {len(filled)} characters of {len(template)}'
        return seen

# }}}


# a model's answer to a chapter's summary request {{{

class SummaryAnswer(CallSurface):
    """A model's answer to a chapter's summary request, read as it streams and checked before it is
    kept (conversation.summaries.ask_summary, checked_summary): reading stops past MAX_SUMMARY_CHARS;
    what is not a summary is said. The answer comes in the chunks a provider's text_chat() yields."""

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        if attack == 'oversized':
            return [Payload('an answer of 64 MB in one piece', ('whole', 64 * MB), 64 * MB),
                    Payload('an answer of 64 MB in pieces of 64 characters', ('pieces', 64 * MB), 64 * MB)]
        if attack == 'endless':
            return [Payload('an answer that never ends', ('endless', 0))]
        if attack == 'control_chars':
            return [Payload('escapes in the answer', ('text', P.with_escapes('Elizabeth meets Mr Darcy [2].')))]
        raise ValueError(attack)

    def call(self, data: Any, where: Path, ctx: Context) -> Observed:
        summaries = plugin('conversation.summaries')
        messages = plugin('core.messages')
        cancel = plugin('core.cancel').CancelToken()
        kind, value = data

        def chunks():
            if kind == 'text':
                yield messages.TextDelta(value)
            elif kind == 'whole':
                yield messages.TextDelta('w' * value)
            else:
                piece = 'words of a summary that goes on and on, '[:64]
                count = 0
                while kind == 'endless' or count < value:
                    yield messages.TextDelta(piece)
                    count += len(piece)
            yield messages.Done(model='m')

        class Provider:
            def text_chat(self, _messages, use_model='', cancel=None, max_tokens=None):
                return chunks()
        sent = ['[1] (Chapter 1)\nIt is a truth universally acknowledged.']
        text, _usage = summaries.ask_summary(Provider(), 'm', [], cancel, 'Chapter 1', sent, 1, 3)
        return Observed(shown=[text], facts={'length': len(text)})

# }}}


# what calibre's viewer and conversion worker say {{{

class HighlightAnnot(CallSurface):
    """What calibre's E-book viewer sends with a selection: the highlight it is on, as JSON
    (viewer.panel.highlight_uuid). Quiet: what is not a highlight's JSON is taken as the uuid itself."""

    quiet = True

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        good = {'uuid': 'h-1', 'type': 'highlight', 'style': {'kind': 'color', 'which': 'yellow'}}
        if attack == 'deep_json':
            return [Payload('JSON nested 100,000 levels', P.deep_in(good).decode())]
        if attack == 'many_values':
            text = P.tiny_values(16 * MB).decode()
            return [Payload('millions of empty objects', text, len(text))]
        if attack == 'wrong_types':
            return [Payload(label, P.dumps(v).decode()) for label, v in P.wrong_types(good)]
        raise ValueError(attack)

    def call(self, annot: str, where: Path, ctx: Context) -> Observed:
        panel = plugin('viewer.panel')
        uuid = panel.highlight_uuid(annot)
        return Observed(facts={'uuid': str(uuid)[:100]})


class ConversionFeedback(CallSurface):
    """What calibre's conversion worker ends with when it cannot convert a book (its log's last
    line: ConversionUserFeedBack and its JSON), as the reader is told it (grounding.formats.job_error)."""

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        good = {'title': 'Could not convert', 'msg': 'The book is damaged.', 'level': 'error', 'det_msg': ''}
        if attack == 'deep_json':
            return [Payload('JSON nested 100,000 levels', P.deep_in(good).decode())]
        if attack == 'many_values':
            text = P.tiny_values(16 * MB).decode()
            return [Payload('millions of empty objects', text, len(text))]
        if attack == 'wrong_types':
            return [Payload(label, P.dumps(v).decode()) for label, v in P.wrong_types(good)]
        if attack == 'control_chars':
            return [Payload('escapes in its words', P.dumps(P.strings_replaced(good, P.with_escapes)).decode())]
        raise ValueError(attack)

    def call(self, message: str, where: Path, ctx: Context) -> Observed:
        formats = plugin('grounding.formats')
        details = ('Traceback (most recent call last):\n  File "x", line 1, in <module>\n'
                   f'calibre.ebooks.conversion.ConversionUserFeedBack: {message}\n')
        error = formats.job_error('/books/a book.mobi', details)
        return Observed(sentence=str(error), shown=[str(error)])

# }}}


class ToolArguments(CallSurface):
    """A tool call's arguments as a model writes them (core.messages.ToolCall, bounded there), run
    by the book's tools (grounding.book_tools.BookTools.run) and read by the lookups' loop
    (conversation.lookups: a repeated call, a call written as text, read as the call): refused in
    words, never raised."""

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        good = {'query': 'the keeper', 'k': 3, 'passage': 1, 'position': 0.2, 'name': 'Bill'}
        if attack == 'deep_json':
            return [Payload('JSON nested 100,000 levels', P.deep_in(good).decode())]
        if attack == 'many_values':
            text = P.tiny_values(16 * MB).decode()
            return [Payload('millions of empty objects', text, len(text))]
        if attack == 'wrong_types':
            return [Payload(label, P.dumps(v).decode()) for label, v in P.wrong_types(good)]
        if attack == 'control_chars':
            return [Payload('escapes in every text', P.dumps(P.strings_replaced(good, P.with_escapes)).decode())]
        if attack == 'oversized':
            return [Payload('arguments of 64 MB', '{"query": "' + 'x' * 64 * MB + '"}', 64 * MB)]
        raise ValueError(attack)

    def call(self, arguments: str, where: Path, ctx: Context) -> Observed:
        extract, tools_module = plugin('grounding.extract'), plugin('grounding.book_tools')
        lookups, messages = plugin('conversation.lookups'), plugin('core.messages')
        text = 'The keeper of the light was Bill. ' * 40
        book = extract.Book([extract.Chapter('One', 0), extract.Chapter('Two', len(text) + 1)],
                            [extract.Paragraph(0, 0, text), extract.Paragraph(1, len(text) + 1, text)])
        tools = tools_module.BookTools(book, 0.5, 'position', xray=tools_module.KeptXRay(0, lambda name: None))
        names = {t.name for t in tools.tools()}
        results = [tools.run(messages.ToolCall('c', name, arguments), 1) for name in sorted(names)]
        lookups.normalized(arguments)
        lookups.written_call(arguments, names)
        for written in (arguments, '{"name": "search_book", "arguments": ' + arguments + '}',
                        '<tool_call>' + arguments + '</tool_call>\n' + arguments):
            for call in lookups.calls_written(written, names):  # a small model's call as text: run as the call
                results.append(tools.run(call, 1))
            lookups.may_be_calls(written)
        refused = [r for r in results if r.refused]
        from calibre_plugins.bookai import cli
        shown = [r.summary for r in results] + [cli.looked_up_line(lookups.Lookup(n, arguments[:100], r.summary))
                                                 for n, r in zip(sorted(names), results)]
        return Observed(sentence=refused[0].text if refused else '', shown=shown)


class JSONAnswer(CallSurface):
    """A model's answer of JSON (structured output), attacked as such: GOOD, the answer of the shape
    asked for, with one of its texts 64 MB (oversized()), nested, of millions of values after
    MANY_HEAD, of wrong types, of escapes, of odd numbers."""

    GOOD: dict = {}
    MANY_HEAD = b'{"x": ['

    def oversized(self) -> dict:
        raise NotImplementedError

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        good = self.GOOD
        if attack == 'oversized':
            text = P.dumps(self.oversized()).decode()
            return [Payload('an answer of 64 MB', text, len(text))]
        if attack == 'deep_json':
            return [Payload('JSON nested 100,000 levels', P.deep_in(good).decode())]
        if attack == 'many_values':
            text = P.tiny_values(16 * MB, head=self.MANY_HEAD).decode()
            return [Payload('millions of empty objects', text, len(text))]
        if attack == 'wrong_types':
            return [Payload(label, P.dumps(v).decode()) for label, v in P.wrong_types(good)]
        if attack == 'control_chars':
            return [Payload('escapes in every text', P.dumps(P.strings_replaced(good, P.with_escapes)).decode())]
        if attack == 'numbers':
            return [Payload(name, P.dumps(P.numbers_replaced(good, n)).decode()) for name, n in P.BAD_NUMBERS.items()]
        raise ValueError(attack)


class XRayAnswer(JSONAnswer):
    """A model's answer for a chapter of the X-Ray, read as the X-Ray reads it (conversation.xray.
    parse_answer): the entities of the shape asked for whose names the passages sent hold."""

    GOOD = {'entities': [{'name': 'Elizabeth', 'kind': 'character', 'other_names': ['Lizzy'],
                          'description': 'The second daughter.', 'passages': [1, 2]}]}
    MANY_HEAD = b'{"entities": ['

    def oversized(self) -> dict:
        return {'entities': [dict(self.GOOD['entities'][0], description='x' * 64 * MB)]}

    def call(self, text: str, where: Path, ctx: Context) -> Observed:
        xr, index = plugin('conversation.xray'), plugin('grounding.index')
        sent = [index.Passage(10, 1, 0, 44, 'Elizabeth, whom they all called Lizzy, laughed.'),
                index.Passage(11, 1, 45, 80, 'She was the second daughter.')]
        reading = xr.parse_answer(text, sent)
        return Observed(sentence=reading.problem, shown=[t for m in reading.mentions
                                                         for t in (m.name, *m.other_names, m.description)],
                        facts={'numbers': [n for m in reading.mentions for n in m.passages]})


class MetadataAnswer(JSONAnswer):
    """A model's answer for AI metadata, read as a run reads it (metadata.asking.parsed_answer): each
    field's value checked (metadata.fields.checked), what is not of its field refused in words."""

    GOOD = {'tags': ['Science Fiction', 'Lighthouses'], 'description': 'A keeper and his light.',
            'languages': ['English'], 'custom_mood': 'Hopeful', 'custom_level': 7}
    MANY_HEAD = b'{"tags": ['

    def oversized(self) -> dict:
        return dict(self.GOOD, description='x' * 64 * MB)

    def call(self, text: str, where: Path, ctx: Context) -> Observed:
        asking, fields = plugin('metadata.asking'), plugin('metadata.fields')
        asked = [fields.standard_field('tags'), fields.standard_field('comments'), fields.standard_field('languages'),
                 fields.custom_field('#mood', {'datatype': 'enumeration', 'name': 'Mood',
                                               'display': {'enum_values': ['Dark', 'Hopeful']}}),
                 fields.custom_field('#level', {'datatype': 'int', 'name': 'Level'})]
        found, problem = asking.parsed_answer(text, asked, {'tags': ['Science Fiction']})
        values = [c.value for c in found.values() if c.value is not None]
        shown = [v for value in values for v in (value if isinstance(value, tuple) else (value,)) if isinstance(v, str)]
        notes = [n for c in found.values() for n in c.notes]
        return Observed(sentence=problem or ' '.join(notes), shown=shown + notes,
                        facts={'numbers': [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]})


class LibraryToolCall(CallSurface):
    """A model's call of one of the library's tools (Ask my library with lookups): its name and its
    arguments as the JSON text the model wrote, run as the lookups' loop runs it (grounding.
    library_tools.LibraryTools.run) over a real calibre library of one book. Whatever the arguments,
    a result comes back, refused in words when they are not what the tool takes."""

    may_raise = ()  # a Toolbox answers every call with a result (conversation/lookups.py): no error at all
    GOOD = {'search_library': {'query': 'the good chapter', 'k': 3},
            'book_chapters': {'book_id': 1},
            'read_book': {'book_id': 1, 'query': 'good', 'chapter': 1, 'position': 0.5}}

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        out = []
        for name, good in self.GOOD.items():
            if attack == 'oversized':
                text = P.dumps({**good, 'query': 'x' * 64 * MB}).decode()
                out.append(Payload(f'{name}: arguments of 64 MB', (name, text), len(text)))
            elif attack == 'deep_json':
                out += [Payload(f'{name}: JSON nested 100,000 levels', (name, P.deep_in(good).decode())),
                        Payload(f'{name}: JSON nested as deep as a call holds', (name, '[' * 7000 + ']' * 900))]
            elif attack == 'many_values':
                text = P.tiny_values(16 * MB).decode()
                out += [Payload(f'{name}: millions of empty objects', (name, text), len(text)),
                        Payload(f'{name}: as many as a call holds', (name, P.tiny_values(7900).decode()))]
            elif attack == 'wrong_types':
                out += [Payload(f'{name}: {label}', (name, P.dumps(v).decode())) for label, v in P.wrong_types(good)]
            elif attack == 'control_chars':
                out += [Payload(f'{name}: escapes in every text',
                                (name, P.dumps(P.strings_replaced(good, P.with_escapes)).decode())),
                        Payload(f'{name}: escapes in its name', (P.with_escapes(name), P.dumps(good).decode()))]
            elif attack == 'numbers':
                out += [Payload(f'{name}: {label}', (name, P.dumps(P.numbers_replaced(good, n)).decode()))
                        for label, n in P.BAD_NUMBERS.items()]
            else:
                raise ValueError(attack)
        return out

    def call(self, data: Any, where: Path, ctx: Context) -> Observed:
        messages = plugin('core.messages')
        tools = self.tools(ctx.scratch)
        name, arguments = data
        r = tools.run(messages.ToolCall('call-1', name, arguments), 1)
        # the reader is told the summary; the text goes to the model
        seen = Observed(sentence=r.summary, shown=[r.text], facts={'numbers': [p.position for p in r.places]})
        if not r.refused and ctx.attack in ('oversized', 'deep_json'):
            seen.facts['ran'] = f'{name} ran with arguments it cannot have read: {r.text[:200]!r}'
        return seen

    _tools: Any = None

    def tools(self, scratch: Path) -> Any:
        """The library's tools over a real library of one book, made once in the case's process."""
        if LibraryToolCall._tools is None:
            from calibre.ebooks.metadata.book.base import Metadata
            from calibre.library import db as open_db
            lt = plugin('grounding.library_tools')
            book = scratch / 'made' / 'good.epub'
            book.parent.mkdir(exist_ok=True)
            book.write_bytes(P.epub_bytes([f'<h1>One</h1><p>{GOOD}</p>', '<h1>Two</h1><p>Another chapter.</p>']))
            cache = open_db(str(scratch / 'library')).new_api
            cache.add_books([(Metadata('A good book', ['An author']), {'EPUB': str(book)})])
            LibraryToolCall._tools = lt.LibraryTools(cache, None)
        return LibraryToolCall._tools


class RetryAfter(CallSurface):
    """A service's Retry-After header, read for how long to wait (core.transport.parse_retry_after):
    whatever it says, a wait that is a number of seconds, finite and not negative, or none."""

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        return [Payload(v, v) for v in ('NaN', 'inf', '-Infinity', '-5', '1e308', '9' * 400, '0x10', '3' + P.ESCAPES,
                                        'Fri, 31 Dec 9999 23:59:59 GMT', 'Thu, 01 Jan 1970 00:00:00 GMT')]

    def call(self, value: str, where: Path, ctx: Context) -> Observed:
        transport = plugin('core.transport')
        wait = transport.parse_retry_after(value)
        return Observed(facts={'amounts': [wait]})


# books {{{

class BookFile(FileSurface):
    """A book file of the library, read for its text (grounding.formats.read_book: EPUB and KEPUB
    directly, any other format converted by calibre first)."""

    json = False
    bound = ''
    may_raise = ('calibre_plugins.bookai.',)

    def __init__(self, fmt: str, attacks: tuple[str, ...]):
        super().__init__(attacks)
        self.fmt = fmt
        self.name = f'book.{fmt.lower()}'
        if fmt not in READ_DIRECTLY:  # calibre converts it first: the attacks on its structure, each up to the bound
            self.variants_of = {'hostile_book': ('zip bomb', 'deep nesting', 'millions of elements',
                                                 'entity expansion')}

    def good_bytes(self, where: Path) -> bytes:
        return self.packed([f'<p>{GOOD}</p>', '<p>Another chapter.</p>'])

    def packed(self, chapters: list) -> bytes:
        if self.fmt in ('EPUB', 'KEPUB'):
            return P.epub_bytes(chapters)
        out = io.BytesIO()
        with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as zf:  # HTMLZ: index.html, metadata.opf
            body = ''.join(c.decode('utf-8', 'replace') if isinstance(c, bytes) else c for c in chapters)
            zf.writestr('index.html', f'<html><head><title>t</title></head><body>{body}</body></html>')
        return out.getvalue()

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        if attack == 'hostile_book':
            if variant == 'zip bomb':
                path = ctx.scratch / 'made' / f'bomb.{self.fmt.lower()}'
                path.parent.mkdir(exist_ok=True)
                unpacked = 1024 * MB
                if self.fmt in ('EPUB', 'KEPUB'):
                    P.write_bomb(path, unpacked)
                else:
                    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
                        with zf.open('index.html', 'w', force_zip64=True) as f:
                            f.write(f'<html><body><p>{GOOD}</p><p>'.encode())
                            for _ in range(unpacked // MB):
                                f.write(b' ' * MB)
                            f.write(b'</p></body></html>')
                return [Payload(variant, ('bytes', path.read_bytes()), 0)]
            chapters = P.hostile_chapters()[variant]
            chapters = [f'<p>{GOOD}</p>', chapters[1]]
            return [Payload(variant, ('bytes', self.packed(chapters)), 0)]
        return super().variants(attack, variant, ctx)

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        formats = plugin('grounding.formats')
        if hasattr(formats, 'CONVERSION_SECONDS'):  # lowered: the bound is what is seen to hold, not its value
            formats.CONVERSION_SECONDS = min(formats.CONVERSION_SECONDS, CONVERSION_SECONDS)
        book = formats.read_book(str(path), self.fmt, str(where / 'work'))
        texts = [p.text for p in book.paragraphs]
        seen = Observed(facts={'paragraphs': len(texts), 'skipped': list(book.skipped),
                               'whole': ctx.attack == 'damaged' and len(texts) >= 2 and not book.skipped})
        if ctx.attack == 'hostile_book' and GOOD not in texts[:5]:
            seen.facts['lost'] = f'the good chapter was not read ({texts[:2]!r})'
        if ctx.attack == 'hostile_book' and ctx.variant != 'entity expansion' and len(texts) < 2 and not book.skipped:
            seen.facts['lost'] = ('the hostile chapter was left out without a word: the book says nothing skipped, '
                                  f'and has {len(texts)} paragraph(s)')
        seen.sentence = book.skipped_note() if hasattr(book, 'skipped_note') else ''
        return seen

    def left(self, payload: Payload, handle: dict, where: Path, observed: Observed) -> list[str]:
        return []  # a book is only read

# }}}


# a cover put on a book {{{

class LibraryCover(CallSurface):
    """A new cover put on a book of a real calibre library, as Apply does (main_window.cover_actions:
    covers_to_apply, then put_cover): the old cover kept until the new one reads back, else back."""

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        if attack == 'crafted_image':
            from hostile.wire import crafted
            data = crafted(variant)
            return [Payload(variant, data, len(data))]
        if attack == 'damaged':
            good = images.png(64, 96)
            return [Payload(label, data) for label, data in (
                ('cut short', good[:len(good) // 2]), ('damaged pixel data', images.png_damaged()),
                ('not an image', b'<svg xmlns="http://www.w3.org/2000/svg"/>'), ('empty', b''))]
        if attack == 'oversized':
            bound = bound_value('core.limits:MAX_IMAGE_BYTES') or 32 * MB
            data = images.png(8, 8) + b'\x00' * bound
            return [Payload('an image over its bound', data, len(data))]
        raise ValueError(attack)

    def call(self, data: bytes, where: Path, ctx: Context) -> Observed:
        from calibre.library import db as open_db
        from calibre.ebooks.metadata.book.base import Metadata
        covers = plugin('main_window.cover_actions')
        undo_module = plugin('covers.undo')
        lib = where / 'library'
        lib.mkdir(exist_ok=True)
        cache = open_db(str(lib)).new_api
        old = images.png(20, 30, grey=0x40)
        try:
            (book_id,) = cache.create_book_entry(Metadata('A book', ['An author']), add_duplicates=True),
            cache.set_cover({book_id: old})
            old = cache.cover(book_id)  # as calibre keeps it
            undo = undo_module.CoverUndo(str(where / 'undo'))
            (cover,) = covers.covers_to_apply([(book_id, data)])
            problem = covers.put_cover(cache, 'lib', book_id, cover, undo)
            now = cache.cover(book_id)
            kept = undo.last('lib', book_id)
            seen = Observed(sentence=problem or '', facts={'replaced': now != old})
            if now != old and (kept is None or kept.data != old):
                seen.facts['lost'] = 'the old cover is neither on the book nor kept for Undo'
            if not now:
                seen.facts['lost'] = 'the book has no cover left'
            return seen
        finally:
            cache.close()

# }}}
