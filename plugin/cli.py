# License: GPLv3 Copyright: the Book AI developers
"""The command line: calibre-debug -r "Book AI" -- COMMAND

    providers                       the providers, and whether each is ready
    models PROVIDER [--refresh]     the models PROVIDER offers
    configure PROVIDER key=value... set a provider's options
    ask --library PATH --book ID... (--action NAME | --prompt TEXT) [--provider NAME] [--model ID] [--json]
        [--scope metadata|selection|chapter|position|so-far|book] [--yes] [--position FRACTION] [--text TEXT]
        [--show-sent]
    ask-library QUESTION --library PATH [--book ID...] [--provider NAME] [--model ID] [--json] [--show-sent]
    import-calibre [--library PATH...] [--yes [--with-python-templates]]
        what of calibre's own AI settings can be carried over; --yes does it (templates that run as
        Python code only with --with-python-templates)
    cover --library PATH BOOK_ID [--style NAME] [--provider NAME] [--prompt-only] [--out FILE] [--apply] [--undo]
        a cover made by the image provider (covers/): its prompt only, saved to FILE, put on the book
        (the old cover kept for Undo), or the old one put back
    recap --library PATH --book ID [--provider NAME] [--model ID] [--position FRACTION] [--json]
        [--since FRACTION | --series] [--yes]
        the story so far, up to the reader's place (or since an earlier place, or the earlier books of
        the book's series), its paragraphs citing the passages; the text read whole when it fits the
        model, else the earlier chapters as summaries, made once and kept. The estimate of what goes
        is said first; an online provider gets a book's text the first time only with --yes
    summaries --library PATH --book ID... [--provider NAME] [--model ID] [--position FRACTION] [--yes] [--json]
        the chapters read to their end, up to the reader's place, summarized once per book and model and
        kept (what the so-far scope, recap and xray use); a book with no place known gets nothing
    history search --library PATH [WORD...] [--json]
        the conversations kept for the library that hold every word, the best first
    history export --library PATH ID... [--format md|html] [--output FILE [--force]]
        conversations as Markdown or HTML, on standard output or in FILE (never over a file without --force)
    xray --library PATH --book ID [--provider NAME] [--model ID] [--position FRACTION] [--search TEXT] [--yes]
        [--json]
        the characters, places and terms met up to the reader's place (conversation/xray.py), made by the
        model chapter by chapter and kept; the estimate first, and --yes before a book's text first goes
        to a provider on the internet
    read-next --library PATH [--book ID...] [--from-library [--search EXPRESSION] [--read-field NAME]
        [--embeddings-provider NAME] [--embeddings-model ID] [--yes]] [--provider NAME] [--model ID] [--json]
        [--show-sent]
        what to read next after the books given: from anywhere, or chosen among the library's books nearest
        them in meaning, the ones not read yet first (library_search/read_next.py); the books the answer names
        by their numbers are listed after it

Exit codes: 0 done, 2 bad usage (also: book text asked for up to the reader's place
when no place is known; for recap, book text for an online provider without --yes; nothing
is sent), 3 provider not configured (or, for ask-library, the library has no full-text index),
4 provider error, 5 nothing in the library matches (for cover --undo: nothing to put back;
for history: no conversation; for recap: nothing read, no earlier book; for summaries: nothing to
summarize), 6 the settings, the conversation
or a cover could not be written (the answer was given; a damaged settings file is kept
under a new name first; a cover is not put on a book whose old cover could not be kept
for Undo), 7 one of calibre's
settings files could not be read (nothing of it is used; it is left as it is), or a conversation of the
History (it is set aside, never overwritten), 130 stopped by
Ctrl-C (what came of the answer is kept in the history, as Stop does in a window);
each failure with one sentence on standard error.

What is printed can come from outside (a service's answer, reasoning and errors, model
names, a book's text): a control character in it could steer the terminal (OSC 52
writes the clipboard, CSI 2J clears the screen). Everything goes through say() or,
with --json, emit(): plain output shows each control character but line feed and tab
(C0, DEL, C1) as \\xNN, ESC as \\x1b; JSON escapes those and U+2028, U+2029 as \\uNNNN.

An API key is never taken from the command line itself: api_key=- reads it from
standard input, api_key=env:NAME from the environment variable NAME; an empty one is
refused, and configure PROVIDER --forget-key deletes the stored key. Every value given
to configure is checked (providers.options.Option) before anything is saved.
"""

import argparse
import io
import json
import math
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, NoReturn, TextIO, cast

from calibre_plugins.bookai.conversation.actions import find_action, library_actions
from calibre_plugins.bookai.conversation.conversation import Conversation, cache_text
from calibre_plugins.bookai.conversation.exchange import Exchange
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.conversation.lookups import LookedUp, Lookup, LookupNotice
from calibre_plugins.bookai.conversation.question import (
    MEANING_FAILED, Question, book_question, book_text_room, by_meaning, embedder, library_book_text, library_question,
    meaning,
)
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.core.messages import (
    Answer, Chunk, Done, Failed, Message, ReasoningDelta, TextDelta, estimated_tokens,
)
from calibre_plugins.bookai.core.printable import CONTROL, inert, one_line
from calibre_plugins.bookai.core.web_links import kept_links
from calibre_plugins.bookai.grounding.citations import Citation, cited_numbers, citations
from calibre_plugins.bookai.grounding.extract import UnreadableBook
from calibre_plugins.bookai.grounding.formats import choose_format
from calibre_plugins.bookai.grounding.library_passages import (
    LibraryExcerpt, LibrarySearchError, fts_message, library_citations,
)
from calibre_plugins.bookai.grounding.reading_position import saved_position
from calibre_plugins.bookai.grounding.embeddings import EmbeddingIndex
from calibre_plugins.bookai.grounding.scopes import SCOPES, Excerpt, NoPlace, Place, check_place
from calibre_plugins.bookai.providers.base import AIProviderPlugin
from calibre_plugins.bookai.providers.options import Option
from calibre_plugins.bookai.providers.pricing import sending_estimate
from calibre_plugins.bookai.providers.registry import (
    PROVIDERS, chosen_provider, get_provider, provider_id, provider_names,
)
from calibre_plugins.bookai.settings.keyring import StoreError
from calibre_plugins.bookai.settings.prefs import not_saved, plugin_prefs, problems
from calibre_plugins.bookai.settings.secrets import not_kept

if TYPE_CHECKING:
    from calibre.db.cache import Cache
    from calibre.utils.config import JSONConfig

    from calibre_plugins.bookai.conversation.xray import XRay
    from calibre_plugins.bookai.conversation.recap import RecapJob
    from calibre_plugins.bookai.core.images import ImageResult
    from calibre_plugins.bookai.covers.styles import CoverStyle
    from calibre_plugins.bookai.grounding.extract import Book
    from calibre_plugins.bookai.grounding.index import Index
    from calibre_plugins.bookai.library_search.building import Embedder
    from calibre_plugins.bookai.library_search.vectors import BookVectors
    from calibre_plugins.bookai.metadata.asking import BookAnswer

load_translations()

OK, USAGE, NOT_CONFIGURED, PROVIDER_ERROR = 0, 2, 3, 4
NOT_WRITTEN = 6  # the settings, or the conversation in the History, could not be written
NOT_READ = 7     # a settings file of calibre's own AI could not be read
STOPPED = 130  # Ctrl-C, by the shell's convention (128 + SIGINT)

# What json.dumps(ensure_ascii=False) leaves raw and a terminal or a JSON-lines reader may obey: what
# core/printable.py makes inert (json.dumps has written C0 as \u escapes already), and the line and
# paragraph separators. Written as JSON's \u escapes, so the value read back is the same.
JSON_RAW = re.compile(f'{CONTROL.pattern}|[\u2028\u2029]')


def say(stream: TextIO, text: str = '', end: str = '\n') -> None:
    """Print text (from anywhere) on the command line's output: the one writer of plain output."""
    stream.write(inert(text) + end)  # nothing from outside obeyed (core/printable.py)
    stream.flush()


def json_safe(value: object) -> object:
    """value with every number JSON cannot hold (NaN, infinity) as null, in lists and objects too."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def emit(stream: TextIO, event: dict) -> None:
    """One --json event on a line of its own: the one writer of JSON output, always valid JSON
    (json_safe(), then allow_nan=False: never NaN or Infinity, which are not JSON)."""
    line = json.dumps(json_safe(event), ensure_ascii=False, allow_nan=False)
    stream.write(JSON_RAW.sub(lambda m: f'\\u{ord(m.group()):04x}', line) + '\n')
    stream.flush()


class Exit(Exception):
    """Ends a command: its exit code, and the sentence said on standard error."""

    def __init__(self, code: int, sentence: str) -> None:
        super().__init__(sentence)
        self.code, self.sentence = code, sentence


class Parser(argparse.ArgumentParser):

    def error(self, message: str) -> NoReturn:
        raise Exit(USAGE, message)


def parser() -> Parser:
    p = Parser(prog='calibre-debug -r "Book AI" --', description=_('Book AI on the command line.'))
    sub = p.add_subparsers(dest='command', metavar='COMMAND')
    sub.add_parser('providers', help=_('List the providers and whether each is ready to use'))
    m = sub.add_parser('models', help=_('List the models a provider offers'))
    m.add_argument('provider', metavar='PROVIDER')
    m.add_argument('--refresh', action='store_true', help=_('Ask the service again instead of using the list '
                                                            'kept for a day'))
    c = sub.add_parser('configure', help=_('Set options of a provider'),
                       description=_('Every provider takes base_url (its API root), model and timeout (seconds), '
                                     'plus its own options (see "providers"). api_key=- reads the key from '
                                     'standard input, api_key=env:NAME from the environment variable NAME.'))
    c.add_argument('provider', metavar='PROVIDER')
    c.add_argument('settings', nargs='*', metavar='key=value')
    c.add_argument('--use', action='store_true', help=_('Make it the provider answers come from'))
    c.add_argument('--forget-key', action='store_true', help=_('Delete the API key stored for PROVIDER'))
    a = sub.add_parser('ask', help=_('Ask about books of a library; the answer streams to standard output'))
    a.add_argument('--library', required=True, metavar='PATH', help=_('The calibre library folder'))
    a.add_argument('--book', required=True, action='append', type=int, metavar='ID', help=_('A book id (repeatable)'))
    what = a.add_mutually_exclusive_group(required=True)
    what.add_argument('--action', metavar='NAME', help=_('A quick action, by name or label'))
    what.add_argument('--prompt', metavar='TEXT', help=_('Your own question'))
    a.add_argument('--provider', metavar='NAME', help=_('Instead of the provider chosen in the settings'))
    a.add_argument('--model', metavar='ID', help=_('Instead of the configured model'))
    a.add_argument('--json', action='store_true', help=_('One JSON event per line: text, reasoning, usage, '
                                                         'error, done, citation'))
    a.add_argument('--scope', default='metadata', choices=SCOPES,
                   help=_('What of the book\'s text is sent: nothing (metadata, the default), the selection with '
                          'its neighbours, the current chapter, the best passages up to the reading position, '
                          'everything up to the reading position (so-far: as much as the model reads at once), or '
                          'the best passages of the whole book'))
    a.add_argument('--yes', action='store_true', help=_('Send everything up to the reading position to a '
                                                        'provider not on this computer (without it, only what it '
                                                        'would send and cost is said)'))
    a.add_argument('--position', type=float, metavar='FRACTION', help=_('The reading position, as a fraction of the '
                                                                        'book (default: where the viewer last was)'))
    a.add_argument('--text', metavar='TEXT', help=_('The selected text, for the selection scope'))
    a.add_argument('--show-sent', action='store_true', help=_('Print the exact messages that would be sent, with '
                                                              'their token count, and send nothing'))
    a.add_argument('--no-lookups', action='store_true', help=_('Do not let the model look things up in the book '
                                                               'while it answers'))
    add_ask_library(sub)
    i = sub.add_parser('import-calibre', help=_("Carry calibre's own AI settings over into Book AI's"),
                       description=_("Lists what calibre's own AI (calibre 8.11 and later) kept: providers, keys, "
                                     'the chosen provider, the answer language, quick actions, the fields sent, the '
                                     "viewer's highlight style; and where each lands in Book AI. calibre's files are "
                                     'only read.'))
    i.add_argument('--library', action='append', default=[], metavar='PATH',
                   help=_('Also read the fields chosen for this library (repeatable; the libraries calibre '
                          'has used are read anyway)'))
    i.add_argument('--yes', action='store_true', help=_('Carry them over (without it, nothing is changed)'))
    i.add_argument('--with-python-templates', action='store_true',
                   help=_('With --yes, also carry over the templates that run as Python code (listed whole '
                          'without --yes; left out otherwise)'))
    add_cover(sub)
    add_history(sub)
    add_xray(sub)
    add_recap(sub)
    add_summaries(sub)
    add_metadata(sub)
    add_by_meaning(sub)
    add_read_next(sub)
    return p


def add_cover(sub: 'argparse._SubParsersAction') -> None:
    c = sub.add_parser('cover', help=_('Make a cover for a book with the image provider, put it on the book, or '
                                       'put the old one back'),
                       description=_('The prompt is built from the book and the choices last made in the cover '
                                     'window (text on the cover, templates, description, aspect ratio, extra '
                                     'instructions). A replaced cover is kept in Book AI\'s cache for Undo.'))
    c.add_argument('book', type=int, metavar='BOOK_ID')
    c.add_argument('--library', required=True, metavar='PATH', help=_('The calibre library folder'))
    c.add_argument('--style', metavar='NAME', help=_('A cover style, by key or name (default: the one last used)'))
    c.add_argument('--provider', metavar='NAME', help=_('Instead of the image provider chosen in the settings'))
    c.add_argument('--prompt-only', action='store_true', help=_('Print the prompt that would be sent, and send '
                                                                'nothing'))
    c.add_argument('--out', metavar='FILE', help=_('Save the new cover in FILE'))
    c.add_argument('--apply', action='store_true', help=_('Put the new cover on the book'))
    c.add_argument('--undo', action='store_true', help=_('Put back the cover Book AI last replaced on the book'))


def add_metadata(sub: 'argparse._SubParsersAction') -> None:
    m = sub.add_parser('metadata', help=_('Fill in books\' tags, description, languages and custom columns with the '
                                          'model; shown first, written only with --apply, undone with --undo'),
                       description=_('Each book\'s details (the fields you let go, as with every question) are sent '
                                     'to the model, which is asked for the fields named. What it gives is checked '
                                     'and shown beside what the book has; nothing is written without --apply. A '
                                     'field changed since it was read is left as it is. The values replaced are '
                                     'kept for --undo.'))
    m.add_argument('books', type=int, nargs='*', metavar='BOOK_ID')
    m.add_argument('--library', required=True, metavar='PATH', help=_('The calibre library folder'))
    m.add_argument('--provider', metavar='NAME', help=_('Instead of the provider chosen in the settings'))
    m.add_argument('--model', metavar='ID', help=_('Instead of the configured model'))
    m.add_argument('--fields', default='tags,comments', metavar='NAMES',
                   help=_('The fields to fill, by calibre\'s lookup names, separated by commas: tags, comments (a '
                          'description, for books that have none), languages, and custom columns such as #mood '
                          '(default: tags,comments)'))
    m.add_argument('--instruction', action='append', default=[], metavar='FIELD=TEXT',
                   help=_('What a field is to hold, in your words (repeatable): "#mood=the mood of the book in a '
                          'word"'))
    m.add_argument('--at-once', type=int, default=2, metavar='N', help=_('Requests at once (default: 2, at most 8)'))
    m.add_argument('--with-text', action='store_true', help=_("Send the opening of each book's text too (its first "
                                                              'pages, past your place in a book not yet read)'))
    m.add_argument('--apply', action='store_true', help=_('Write the values given into the library'))
    m.add_argument('--undo', action='store_true', help=_('Put back the values the last --apply replaced'))


def add_ask_library(sub: 'argparse._SubParsersAction') -> None:
    q = sub.add_parser('ask-library', help=_('Ask a question answered from passages of the books of a library, '
                                             'found by calibre\'s full-text search, with citations'))
    q.add_argument('question', metavar='QUESTION')
    q.add_argument('--library', required=True, metavar='PATH', help=_('The calibre library folder'))
    q.add_argument('--book', action='append', type=int, metavar='ID', help=_('Search this book only (repeatable; '
                                                                            'default: the whole library)'))
    q.add_argument('--provider', metavar='NAME', help=_('Instead of the provider chosen in the settings'))
    q.add_argument('--model', metavar='ID', help=_('Instead of the configured model'))
    q.add_argument('--json', action='store_true', help=_('One JSON event per line: text, reasoning, usage, '
                                                         'error, done, citation'))
    q.add_argument('--show-sent', action='store_true', help=_('Print the exact messages that would be sent, with '
                                                              'their token count, and send nothing'))
    q.add_argument('--no-lookups', action='store_true', help=_('Do not let the model search the library and read '
                                                               'its books while it answers'))


def main(argv: list[str], stdin: TextIO | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    p = parser()
    try:
        args = p.parse_args(argv)
        if not args.command:
            raise Exit(USAGE, _('Name a command: providers, models, configure, ask, ask-library, '
                                'import-calibre, cover, history, recap, summaries or xray.'))
        settings_problems(stderr)
        return COMMANDS[args.command](args, stdin, stdout)
    except Exit as e:
        say(stderr, e.sentence)
        return e.code
    except KeyboardInterrupt:  # Ctrl-C outside an answer (an answer stops as stream_answer says)
        say(stderr, _('Stopped.'))
        return STOPPED


def provider_named(name: str, **kw: object) -> AIProviderPlugin:
    """The provider name gives: its id or its name as shown, in any case."""
    found = provider_id(name)
    if found is None:
        raise Exit(USAGE, _('There is no provider named "{name}". The providers are: {names}.').format(
            name=name, names=', '.join(f'{shown_name} ({pid})' for pid, shown_name in provider_names())))
    return get_provider(found, **kw)


def cmd_providers(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    current = plugin_prefs()['provider']
    for name in PROVIDERS:
        p = provider_named(name)
        problem = p.config.missing_setup()
        mark = '*' if name == current else ' '
        state = _('ready') if not problem else problem
        where = _('local') if p.connection.is_local else _('online')
        say(stdout, f'{mark} {name:18} {p.display_name} ({where}): {state}')
        options = ', '.join(o.name for o in p.all_options() if o.name not in ('api_key', 'enabled'))
        say(stdout, '    ' + _('options: {options}').format(options=options))
    if not current:
        say(stdout, _('No provider is chosen yet: "configure PROVIDER ... --use" chooses one.'))
    return OK


def cmd_models(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    p = provider_named(args.provider)
    if problem := p.config.missing_setup():
        raise Exit(NOT_CONFIGURED, problem)
    try:
        models = p.models(refresh=args.refresh)
    except ProviderError as e:
        raise Exit(PROVIDER_ERROR, str(e)) from None
    for m in models:
        say(stdout, m.id if m.display_name == m.id else f'{m.id}\t{m.display_name}')
    return OK


def cmd_configure(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    p = provider_named(args.provider)
    values, key = {}, None
    for item in args.settings:
        name, eq, text = item.partition('=')
        name = name.strip()
        if not eq:
            raise Exit(USAGE, _('"{item}" is not key=value.').format(item=item))
        if name == 'api_key':
            key = read_key(text, stdin)
            continue
        names = ('connect_timeout', 'read_timeout') if name == 'timeout' else (name,)
        for n in names:
            try:
                option = p.option_named(n)
            except KeyError:
                raise Exit(USAGE, _('{provider} has no option "{name}". Its options are: {names}.').format(
                    provider=p.display_name, name=name,
                    names=', '.join(['timeout'] + [o.name for o in p.all_options()]))) from None
            try:
                values[n] = option.parse(text)
            except ValueError as e:
                raise Exit(USAGE, f'{name}: {e}') from None
    prefs = plugin_prefs()
    told = settings_problems(io.StringIO())
    with written(prefs):
        providers = dict(prefs['providers'])
        providers[p.name] = dict(providers.get(p.name, {}), **values)
        prefs['providers'] = providers  # a damaged file is set aside first
    if args.forget_key:
        with written(p.config.secrets.config):
            p.config.secrets.delete(p.name, 'api_key')
    if key is not None:
        try:
            with written(p.config.secrets.config):
                p.config.secrets.set(p.name, 'api_key', key)
        except StoreError:
            raise Exit(NOT_CONFIGURED, not_kept(p.display_name)) from None
    if args.use or not prefs['provider']:
        with written(prefs):
            prefs['provider'] = p.name
    settings_problems(sys.stderr, told)
    configured = provider_named(p.name)
    problem = configured.config.missing_setup()
    say(stdout, problem or _('{provider} is ready.').format(provider=configured.display_name))
    if prefs['provider'] == p.name:
        say(stdout, _('Answers come from {provider}.').format(provider=configured.display_name))
    return OK


def read_key(text: str, stdin: TextIO) -> str:
    """The key api_key=- (standard input) or api_key=env:NAME gives; never empty: deleting
    the stored key is --forget-key."""
    if text == '-':
        value = stdin.readline().strip()
        if not value:
            raise Exit(USAGE, _('No key came on standard input, so the stored key is kept. To delete it, use '
                                '--forget-key.'))
        return checked_key(value)
    if text.startswith('env:'):
        value = os.environ.get(text[4:], '').strip()
        if not value:
            raise Exit(USAGE, _('The environment variable {name} is empty or not set.').format(name=text[4:]))
        return checked_key(value)
    raise Exit(USAGE, _('An API key is not given on the command line, where other users and the shell history '
                        'can see it: use api_key=- to read it from standard input, or api_key=env:NAME.'))


@contextmanager
def written(config: 'JSONConfig') -> Iterator[None]:
    """Exit (NOT_WRITTEN) with a sentence when the settings file config could not be written."""
    try:
        yield
    except OSError as e:
        raise Exit(NOT_WRITTEN, not_saved(config, e)) from None


def checked_key(value: str) -> str:
    try:
        return Option('api_key', 'API key', 'secret').check(value)
    except ValueError as e:
        raise Exit(USAGE, f'api_key: {e}.') from None


def settings_problems(stderr: TextIO, told: Sequence[str] = ()) -> list[str]:
    """What was wrong with Book AI's settings files, on standard error (the defaults are
    used), but for what was told already; returns what has been told."""
    plugin_prefs()
    now = problems()
    for problem in now:
        earlier = next((t for t in told if problem.startswith(t)), None)
        if earlier is None:
            say(stderr, problem)
        elif problem != earlier:  # now with where the damaged file was kept
            say(stderr, problem[len(earlier):].strip())
    return now


def answer_and_keep(library: BookLibrary, conv: Conversation, provider: AIProviderPlugin, question: Question,
                    args: argparse.Namespace, stdout: TextIO) -> tuple[Answer, bool]:
    """question asked in conv of provider as the windows ask it (conversation.exchange): the
    answer streams to stdout, finishes conv and is kept in the library's History. Returns
    (Answer, whether it was kept: if not, said on standard error); raises the Exit for Ctrl-C
    (what came is kept)."""
    exchange = Exchange(conv, provider, question, use_model=args.model or '',
                        lookups=False if getattr(args, 'no_lookups', False) else None)
    stream_answer(exchange, args, stdout)
    not_kept = exchange.finish(library.history.save)
    if not_kept:
        say(sys.stderr, not_kept)
    if stop := stopped(exchange.answer, not not_kept):
        raise stop
    return exchange.answer, not not_kept


def cmd_ask(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    return in_library(args, ask, stdout)


def in_library(args: argparse.Namespace, command: Callable[[BookLibrary, argparse.Namespace, TextIO], int],
               stdout: TextIO) -> int:
    """command(library, args, stdout) on the library at --library, closed after."""
    library = BookLibrary.open(args.library)
    if library is None:
        raise Exit(USAGE, _('There is no calibre library at {path}.').format(path=args.library))
    try:
        return command(library, args, stdout)
    finally:
        # closed here, not when garbage collected at exit: with full-text indexing on, calibre 8
        # can wait forever there for its indexing threads
        library.db.close()


def ask(library: BookLibrary, args: argparse.Namespace, stdout: TextIO) -> int:
    missing = [b for b in args.book if not library.has_book(b)]
    if missing:
        raise Exit(USAGE, _('The library has no book with the id {ids}.').format(ids=', '.join(map(str, missing))))
    conv = Conversation.about(library, args.book)
    if args.action:
        action = find_action(library_actions(), args.action)
        if action is None:
            raise Exit(USAGE, _('There is no quick action "{name}". The actions are: {names}.').format(
                name=args.action, names=', '.join(a.name for a in library_actions())))
        text = action.prompt(conv.books)
    else:
        text = args.prompt
    question = Question(text) if args.scope == 'metadata' else with_book_text(library, args, text, conv)
    provider = None if args.show_sent else provider_for(args)
    if provider is not None:
        check_large_send(provider, question, conv, args)
    for notice in question.notices:  # as the windows tell them, before anything is sent
        say(sys.stderr, notice)
    if provider is None:
        return show_sent(question.messages(conv), stdout)
    answer, kept = answer_and_keep(library, conv, provider, question, args, stdout)
    if question.excerpt is not None and answer.failed is None:
        show_citations(answer.text, cast(Excerpt, question.excerpt), args.json, stdout,
                       conv.turns[-1].places[len(question.places):])
    if answer.failed is not None:
        raise Exit(PROVIDER_ERROR, answer.failed.message)
    return OK if kept else NOT_WRITTEN


def check_large_send(provider: AIProviderPlugin, question: Question, conv: Conversation,
                     args: argparse.Namespace) -> None:
    """Everything read so far goes to a provider not on this computer only with --yes, as the windows
    ask before it goes: without it, what it would send and cost is said, and nothing is sent."""
    ex = question.excerpt
    if provider.connection.is_local or args.yes or not isinstance(ex, Excerpt) or ex.scope != 'so-far':
        return
    model = args.model or conv.model or provider.config.option('model') or ''
    raise Exit(USAGE, _('Everything up to where you are would go to {provider}. {estimate} Nothing was sent: add '
                        '--yes to send it.').format(provider=provider.display_name, estimate=sending_estimate(
                            provider.name, model, estimated_tokens(question.messages(conv)), False)))


def with_book_text(library: BookLibrary, args: argparse.Namespace, text: str, conv: Conversation) -> Question:
    """The question with the passages of the book that --scope sends, from the format
    choose_format() picks: EPUB and KEPUB read directly, other formats converted by calibre in
    this process, once (the text is kept in the text cache). Ranked by meaning too where the
    settings say so (by_meaning(): the provider set up, when it is one on this computer), and
    within the reader's "Book text per question, at most", never more than the model has room
    for in conv (book_text_room()), as the windows do (conversation/question.py)."""
    if len(args.book) != 1:
        raise Exit(USAGE, _('Book text can be sent about one book at a time.'))
    if args.scope == 'selection' and not args.text:
        raise Exit(USAGE, _('The selection scope needs the selected text: --text TEXT.'))
    if args.position is not None and not 0 <= args.position <= 1:
        raise Exit(USAGE, _('--position is a fraction of the book, from 0 to 1.'))
    book_id = args.book[0]
    db = library.db
    book, index, fmt = library_book(library, book_id)
    position = args.position
    if position is None and args.scope != 'book':
        position = saved_position(db.format_abspath(book_id, fmt), book)
    try:
        check_place(args.scope, position)  # before anything is embedded: nothing goes without a place
        provider = ranking_provider(args)
        room = None
        if provider is not None:  # first, as the windows learn it (gui/conversation_panel.py)
            cancel = CancelToken()
            try:
                with ctrl_c_cancels(cancel):
                    room = book_text_room(provider, conv, text, args.model or '', cancel, scope=args.scope)
            except Cancelled:
                raise Exit(STOPPED, _('Stopped.')) from None
        vectors = book_meaning(provider, args.scope, index, text)
        embedding_index, question_vector = vectors or (None, None)
        summaries = None
        if provider is not None and args.scope == 'so-far':  # the summaries kept, when the text read does not fit
            from calibre_plugins.bookai.conversation.recap import SoFarSummaries  # the so-far scope only
            from calibre_plugins.bookai.conversation.summaries import BookKey
            summaries = SoFarSummaries(provider, BookKey(db.library_id, book_id, fmt), args.model or '')
        kept = None
        if provider is not None and args.scope != 'metadata' and not getattr(args, 'no_lookups', False):
            from calibre_plugins.bookai.conversation.lookup_sources import kept_for_lookups  # lookups only
            from calibre_plugins.bookai.conversation.summaries import BookKey
            kept = kept_for_lookups(provider, args.model or conv.model or provider.config.option('model') or '',
                                    book, position, BookKey(db.library_id, book_id, fmt),
                                    f'{db.library_id}:{book_id}', conv.language)
        return book_question(text, args.scope, book, index, position, args.text or '', None, embedding_index,
                             question_vector, room, summaries, kept,
                             embedder(provider, embedding_index) if provider is not None else None)
    except NoPlace:
        raise Exit(USAGE, _('Book AI does not know where you are in this book, so it cannot keep to what you have '
                            'read: give your place with --position FRACTION, or open the book in calibre\'s E-book '
                            'viewer, which saves it when you close the book. Or use --scope book. Nothing was '
                            'sent.')) from None


def book_meaning(provider: AIProviderPlugin | None, scope: str, index: 'Index',
                 text: str) -> tuple[EmbeddingIndex, list[float]] | tuple[()]:
    """What the passages are ranked by meaning with, when the settings say so (by_meaning());
    () for words alone, said on standard error when ranking by meaning failed."""
    if provider is None or not by_meaning(provider, scope):
        return ()
    cancel = CancelToken()
    try:
        with ctrl_c_cancels(cancel):
            return meaning(provider, index, text, cancel=cancel)
    except Cancelled:
        raise Exit(STOPPED, _('Stopped.')) from None
    except ProviderError as e:
        say(sys.stderr, MEANING_FAILED.format(error=e))
        return ()


def show_sent(messages: list[Message], stdout: TextIO) -> int:
    for m in messages:
        say(stdout, f'--- {m.role.value}')
        say(stdout, m.text)
    say(stdout, '--- ' + _('about {tokens} tokens; nothing was sent').format(tokens=estimated_tokens(messages)))
    return OK


REPEATED_NOTE = _('The model cited no passage; its answer repeats the words of these:')


def show_citations(answer: str, excerpt: Excerpt, as_json: bool, stdout: TextIO,
                   looked_up: Sequence[Place] = ()) -> None:
    """The answer's citations of excerpt's passages, and of the passages the model looked up
    (looked_up: their places, numbered on from excerpt's)."""
    found = [with_lookup(c, len(excerpt.passages), looked_up) for c in citations(answer, excerpt)]
    for c in found:
        if as_json:
            emit(stdout, {'type': 'citation', 'number': c.number, 'sent': c.sent, 'chapter': c.chapter,
                          'position': round(c.position, 4), 'repeated': c.repeated})
            continue
        if c is found[0] and c.repeated:
            say(stdout, REPEATED_NOTE)
        if c.sent:
            say(stdout, f'[{c.number}] {c.chapter} ({c.position:.0%})')
        else:
            say(stdout, f'[{c.number}] ' + _('(not a passage that was sent)'))


def with_lookup(c: Citation, sent: int, looked_up: Sequence[Place]) -> Citation:
    """c, when it cites a passage the model looked up (numbered after the sent ones), with its place."""
    if c.sent or not 0 < c.number - sent <= len(looked_up):
        return c
    place = looked_up[c.number - sent - 1]
    return replace(c, sent=True, chapter=place.chapter, position=place.position)


def looked_up_line(lookup: Lookup) -> str:
    """A lookup the model made, in one line for standard error, with its passages' numbers as the
    windows show them (gui/lookups.py)."""
    shown, more = lookup.shown_numbers()
    numbers = [f'[{n}]' for n in shown] + (['…'] if more else [])
    return _('looked up: {summary}').format(summary=one_line(lookup.summary)) + ''.join(' ' + n for n in numbers)


def lookup_event(lookup: Lookup) -> dict:
    """The --json event of a lookup the model made: its tool, its arguments as the model wrote them,
    what it gave in words, and its passages, numbered from first, each with where it is."""
    return {'type': 'lookup', 'tool': lookup.tool, 'arguments': lookup.arguments, 'summary': lookup.summary,
            'refused': lookup.refused, 'first': lookup.first,
            'passages': [{'number': lookup.first + i, 'chapter': p.chapter, 'position': p.position, 'cfi': p.cfi}
                         for i, p in enumerate(lookup.places)]}


def events_of(chunk: Chunk) -> list[dict]:
    """The --json events for a chunk of the answer stream."""
    if isinstance(chunk, TextDelta):
        return [{'type': 'text', 'text': chunk.text}]
    if isinstance(chunk, ReasoningDelta):
        return [{'type': 'reasoning', 'text': chunk.text}]
    if isinstance(chunk, Failed):
        return [{'type': 'error', 'kind': type(chunk.error).__name__, 'message': chunk.message}]
    if isinstance(chunk, Done):
        return [dict(type='usage', **asdict(chunk.usage)),  # tokens, and cost (None: unknown)
                {'type': 'done', 'model': chunk.model, 'finish_reason': chunk.finish_reason,
                 'web_links': [{'title': w.title, 'url': w.url} for w in kept_links(chunk.web_links)[0]]}]
    return []


NOTHING_FOUND = 5


def cmd_ask_library(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    """ask-library: the question answered from passages found in the library's full-text index."""
    return in_library(args, ask_library, stdout)


def ask_library(library: BookLibrary, args: argparse.Namespace, stdout: TextIO) -> int:
    missing = [b for b in args.book or () if not library.has_book(b)]
    if missing:
        raise Exit(USAGE, _('The library has no book with the id {ids}.').format(ids=', '.join(map(str, missing))))
    try:
        question = library_question(library.db, args.question, args.book)
    except LibrarySearchError as e:
        raise Exit(NOT_CONFIGURED, str(e)) from None
    if note := fts_message(library.db):  # still indexing: said, and the books indexed so far are searched
        say(sys.stderr, note)
    for notice in question.notices:
        say(sys.stderr, notice)
    if not question.passages:
        raise Exit(NOTHING_FOUND, _('Nothing in the full-text index of the library matches the question.'))
    conv = Conversation.about(library, args.book or cast(LibraryExcerpt, question.excerpt).book_ids)
    if args.show_sent:
        return show_sent(question.messages(conv), stdout)
    provider = provider_for(args)
    check_large_send(provider, question, conv, args)
    answer, kept = answer_and_keep(library, conv, provider, question, args, stdout)
    if answer.failed is not None:
        raise Exit(PROVIDER_ERROR, answer.failed.message)
    show_library_citations(answer.text, cast(LibraryExcerpt, question.excerpt), args.json, stdout)
    return OK if kept else NOT_WRITTEN


def ranking_provider(args: argparse.Namespace) -> AIProviderPlugin | None:
    """provider_for(), or None when none is ready: passages then rank by words, and asking says
    that no provider is ready once the book's text is found (--show-sent needs none)."""
    try:
        return provider_for(args)
    except Exit:
        return None


def provider_for(args: argparse.Namespace) -> AIProviderPlugin:
    """The provider named by --provider, else the one chosen in the settings; ready to use."""
    provider = provider_named(args.provider) if args.provider else chosen_provider()
    if provider is None:
        raise Exit(NOT_CONFIGURED, _('No provider is chosen yet: "configure PROVIDER ... --use" chooses one.'))
    if problem := provider.config.missing_setup():
        raise Exit(NOT_CONFIGURED, problem)
    return provider


def stream_answer(exchange: Exchange, args: argparse.Namespace, stdout: TextIO) -> None:
    """exchange's question sent; the answer streams to stdout (as text, or as --json events: the
    usage event holds the tokens read from the provider's cache and written to it), then, as
    text, the tokens read from the cache on standard error (cache_text()). Ctrl-C stops it as
    Stop does in a window: the stream ends with a cancelled Done (a "done" event whose
    finish_reason is "cancelled"), and what came is kept (see stopped())."""
    answer = exchange.answer
    with ctrl_c_cancels(exchange.cancel):
        for chunk in exchange.chunks():
            exchange.take(chunk)
            if isinstance(chunk, LookupNotice):
                say(sys.stderr, chunk.text)
            elif isinstance(chunk, LookedUp):  # as it happens, before the answer
                if args.json:
                    emit(stdout, lookup_event(chunk.lookup))
                else:
                    say(sys.stderr, looked_up_line(chunk.lookup))
            elif args.json:
                for event in events_of(chunk):
                    emit(stdout, event)
            elif isinstance(chunk, TextDelta):
                say(stdout, chunk.text, end='')
    if not args.json and answer.text and not answer.text.endswith('\n'):
        say(stdout)
    if not args.json and answer.done is not None:
        links, left_out = kept_links(answer.done.web_links)
        if links:
            say(stdout, _('Sources:'))
        for w in links:
            say(stdout, f'- {w.title} <{w.url}>')
        if left_out:
            say(stdout, ngettext('{count} more page the answer named is not shown.',
                                 '{count} more pages the answer named are not shown.', left_out).format(count=left_out))
        if cached := cache_text(answer.done.usage):  # beside the answer, as the notices are
            say(sys.stderr, cached)


@contextmanager
def ctrl_c_cancels(cancel: CancelToken) -> Iterator[None]:
    """Within: Ctrl-C cancels the request (a second one interrupts, should the first not end it)."""
    def interrupted(signum, frame):
        if cancel.cancelled:
            raise KeyboardInterrupt
        # from a thread: this handler may run while this thread holds the token's lock
        threading.Thread(target=cancel.cancel, daemon=True).start()
    try:
        previous = signal.signal(signal.SIGINT, interrupted)
    except ValueError:  # not the main thread: no signals come here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def stopped(answer: Answer, kept: bool = True) -> Exit | None:
    """The Exit for an answer stopped by Ctrl-C, else None. kept: whether the conversation
    could be kept in the history (if not, answer_and_keep() said so already)."""
    if answer.failed is None and answer.done is not None and answer.done.finish_reason == 'cancelled':
        return Exit(STOPPED, _('Stopped: the part of the answer that came is kept in the history.') if kept
                    else _('Stopped.'))
    return None


def show_library_citations(answer: str, excerpt: LibraryExcerpt, as_json: bool, stdout: TextIO) -> None:
    """The answer's [n] citations: "[n] Title — the passage's beginning…", or citation events."""
    found = library_citations(answer, excerpt)
    for c in found:
        if as_json:
            emit(stdout, {'type': 'citation', 'number': c.number, 'sent': c.sent,
                          'book_id': c.book_id if c.sent else None, 'title': c.title, 'format': c.format,
                          'text': c.text, 'repeated': c.repeated})
            continue
        if c is found[0] and c.repeated:
            say(stdout, REPEATED_NOTE)
        if c.sent:
            say(stdout, f'[{c.number}] {c.title} — {snippet(c.text)}')
        else:
            say(stdout, f'[{c.number}] ' + _('(not a passage that was sent)'))


def snippet(text: str, size: int = 100) -> str:
    """The beginning of text, cut at a word, on one line."""
    text = ' '.join(text.split())
    return text if len(text) <= size else text[:size].rsplit(' ', 1)[0] + '…'


def cmd_import_calibre(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    from calibre_plugins.bookai.from_calibre import carry_over as calibre_settings  # this command only
    found = calibre_settings.read(libraries=args.library)
    for line in found.summary().splitlines():
        say(stdout, line)
    if not found.items and not found.problems:
        say(stdout, _("calibre's own AI settings were not found in {folder}.").format(
            folder=calibre_settings.calibre_config_dir()))
    code = found.code_items()
    if args.yes and found.found:
        failed = calibre_settings.carry_over(found, with_code=args.with_python_templates)
        if failed:
            raise Exit(NOT_WRITTEN, '\n'.join(failed + found.problems))
        say(stdout, _('Carried over into Book AI.'))
        if code and not args.with_python_templates:
            say(stdout, ngettext(
                'Not carried over: {names}, a template that runs as Python code (listed whole above). Only if you '
                'know what it does: import-calibre --yes --with-python-templates, or type it in the settings of '
                'Book AI.',
                'Not carried over: {names}, templates that run as Python code (listed whole above). Only if you '
                'know what they do: import-calibre --yes --with-python-templates, or type them in the settings of '
                'Book AI.', len(code)).format(names=', '.join(i.setting for i in code)))
    elif found.found:
        say(stdout, _('Nothing was changed: add --yes to carry these over.'))
    if found.problems:
        raise Exit(NOT_READ, '\n'.join(found.problems))
    return OK


def cmd_metadata(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    """metadata: books' fields filled by the model, shown, written with --apply, undone (metadata/)."""
    if args.undo and (args.books or args.apply):
        raise Exit(USAGE, _('--undo puts back what the last --apply replaced: it takes no book and no --apply.'))
    if not args.undo and not args.books:
        raise Exit(USAGE, _('Name the books to fill in, by their ids.'))
    return in_library(args, metadata, stdout)


def metadata(library: BookLibrary, args: argparse.Namespace, stdout: TextIO) -> int:
    # AI metadata's modules: the other commands start without them
    from calibre_plugins.bookai.metadata.asking import Asking, ask_books
    from calibre_plugins.bookai.metadata.changes import MetadataUndo, apply, undo_last
    from calibre_plugins.bookai.metadata.fields import NotFillable
    from calibre_plugins.bookai.metadata.reading import books_read, fields_of, known_tags
    db, library_id, undo = library.db, str(library.db.library_id), MetadataUndo()
    if args.undo:
        undone = undo_last(db, library_id, undo)
        if undone is None:
            raise Exit(NOTHING_FOUND, _('Book AI has written no metadata in this library that it could put back.'))
        say(stdout, ngettext('{n} value put back.', '{n} values put back.', len(undone.restored)).format(
            n=len(undone.restored)))
        for book_id, key in undone.conflicts:
            say(stdout, _('Book {id}: {field} was changed since, and is left as it is.').format(id=book_id, field=key))
        return OK
    missing = [b for b in args.books if not library.has_book(b)]
    if missing:
        raise Exit(USAGE, _('The library has no book with the id {ids}.').format(ids=', '.join(map(str, missing))))
    instructions = {}
    for given in args.instruction:
        key, sep, text = given.partition('=')
        if not sep:
            raise Exit(USAGE, _('An instruction is FIELD=TEXT: "#mood=the mood of the book in a word".'))
        instructions[key.strip()] = text
    try:
        fields = fields_of(db, args.fields.split(','), instructions)
    except NotFillable as e:
        raise Exit(USAGE, str(e)) from None
    if not fields:
        raise Exit(USAGE, _('Name the fields to fill with --fields.'))
    provider = provider_for(args)
    from calibre_plugins.bookai.conversation.books import answer_language
    run = Asking(provider, args.model or provider.config.option('model') or '', fields, {'tags': known_tags(db)},
                 answer_language())
    answers = []
    cancel = CancelToken()
    with ctrl_c_cancels(cancel):
        for answer in ask_books(run, books_read(db, library_id, args.books, fields, args.with_text), args.at_once,
                                cancel):
            answers.append(answer)
            say(stdout, metadata_answer_text(answer))
    if cancel.cancelled:
        say(sys.stderr, _('Stopped: the books answered by then are shown above.'))
    proposals = [p for a in answers for p in a.proposals]
    if not args.apply:
        say(stdout, _('Nothing was written: --apply writes these values.') if proposals else
            _('The model gave nothing to write.'))
        return OK if answers and not all(a.error for a in answers) else PROVIDER_ERROR
    try:
        done = apply(db, library_id, proposals, undo)
    except OSError as e:
        raise Exit(NOT_WRITTEN, _('The values they replace could not be kept for Undo, so nothing was written: '
                                  '{reason}').format(reason=e.strerror or e)) from None
    say(stdout, ngettext('{n} value written; "metadata --undo" puts the old one back.',
                         '{n} values written; "metadata --undo" puts the old ones back.', len(done.written)).format(
        n=len(done.written)))
    for p in done.conflicts:
        say(stdout, _('Book {id}: {field} was changed since it was read, and is left as it is.').format(
            id=p.book_id, field=p.label))
    for p, why in done.failed:
        say(stdout, _('Book {id}: {field}: {why}').format(id=p.book_id, field=p.label, why=why))
    return OK if not done.failed else NOT_WRITTEN


def metadata_answer_text(answer: 'BookAnswer') -> str:
    """One book's answer, for the terminal: each value proposed beside the book's, then the notes."""
    lines = [_('Book {id}: {title}').format(id=answer.book.book_id, title=one_line(answer.book.title))]
    for p in answer.proposals:
        lines.append('  ' + _('{field}: {old} → {new}').format(field=p.label, old=shown_value(p.old),
                                                                new=shown_value(p.new)))
    lines += ['  ' + one_line(note) for note in answer.notes]
    if answer.error:
        lines.append('  ' + one_line(answer.error))
    elif not answer.proposals:
        lines.append('  ' + _('Nothing to change.'))
    return '\n'.join(lines)


def shown_value(value: object) -> str:
    """A field's value in one line: a list joined, a description's text without its tags."""
    if value is None or value == '' or value == ():
        return _('(none)')
    if isinstance(value, (list, tuple)):
        return one_line(', '.join(map(str, value)))
    if isinstance(value, str) and value.startswith('<'):
        from html import unescape
        value = unescape(re.sub(r'<[^>]+>', ' ', value))
    text = one_line(str(value))
    return text if len(text) <= 300 else text[:299].rstrip() + '…'


def cmd_cover(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    """cover: a book's cover made, saved, put on the book, or the old one put back (covers/)."""
    if args.undo and (args.prompt_only or args.out or args.apply or args.style or args.provider):
        raise Exit(USAGE, _('--undo puts the old cover back: it takes no other option but --library.'))
    if not (args.undo or args.prompt_only or args.out or args.apply):
        raise Exit(USAGE, _('Say what to do with the cover: --out FILE, --apply, or both; --prompt-only shows the '
                            'prompt; --undo puts the old cover back.'))
    return in_library(args, cover, stdout)


def cover(library: BookLibrary, args: argparse.Namespace, stdout: TextIO) -> int:
    # the cover commands only: the others start without the covers
    from calibre_plugins.bookai.covers.library import BookGone, NotReplaced, library_id_of, replace_cover, undo_cover
    from calibre_plugins.bookai.covers.making import book_requests, decoded_image
    from calibre_plugins.bookai.covers.prompt import choices_from_prefs
    from calibre_plugins.bookai.covers.undo import CoverUndo, UndoNotKept
    db, book_id = library.db, args.book
    if not library.has_book(book_id):
        raise Exit(USAGE, _('The library has no book with the id {ids}.').format(ids=book_id))
    library_id, undo = library_id_of(db), CoverUndo()
    if args.undo:
        try:
            done = undo_cover(db, library_id, book_id, undo)
        except NotReplaced as e:
            raise Exit(NOT_WRITTEN, str(e)) from None
        if not done:
            raise Exit(NOTHING_FOUND, _('Book AI has replaced no cover of book {id} that it could put back.').format(
                id=book_id))
        say(stdout, _('The cover book {id} had before is back.').format(id=book_id))
        return OK
    style_text = cover_style(args.style).template if args.style else None
    choices = choices_from_prefs(style_text)
    if not choices.style_text.strip():
        raise Exit(USAGE, _('The style "{name}" has no prompt of its own: choose another with --style.').format(
            name=args.style or plugin_prefs()['cover_style']))
    # the templates evaluated in calibre's worker, bounded; for --prompt-only (nothing sent), no Python run
    (request,), notes = book_requests(db, [book_id], choices, preview=args.prompt_only)
    prompt = request.prompt
    for note in notes:
        say(sys.stderr, note)
    if args.prompt_only:
        say(stdout, prompt)
        say(stdout, '--- ' + _('aspect ratio {aspect}; nothing was sent').format(aspect=choices.aspect))
        return OK
    provider = image_provider_for(args)
    result = make_image(provider, prompt, choices.aspect)
    say(stdout, cover_summary(provider, result))
    data = result.image.data
    if args.out:
        try:
            with open(args.out, 'wb') as f:
                f.write(data)
        except OSError as e:
            raise Exit(NOT_WRITTEN, _('The cover could not be saved in {path}: {reason}').format(
                path=args.out, reason=e.strerror or e)) from None
        say(stdout, _('The cover ({kind}, {width}x{height}) is in {path}.').format(
            kind=result.image.extension.upper(), width=result.image.width, height=result.image.height, path=args.out))
    if args.apply:
        # decoded by Book AI itself in calibre's worker, bounded, and written anew: only that goes into the library
        decoded = decoded_image(provider, result.image)
        if not decoded.ok:
            raise Exit(NOT_WRITTEN, decoded.problem + ' ' + _('The book keeps its cover.'))
        try:
            replace_cover(db, library_id, book_id, decoded, undo)
        except BookGone as e:
            raise Exit(USAGE, str(e)) from None
        except (UndoNotKept, NotReplaced) as e:
            raise Exit(NOT_WRITTEN, str(e)) from None
        say(stdout, _('The new cover is on book {id}; "cover --undo" puts the old one back.').format(id=book_id))
    return OK


def cover_style(name: str) -> 'CoverStyle':
    """The cover style --style names: by its key or its name as shown, in any case."""
    from calibre_plugins.bookai.covers.styles import all_styles  # the cover commands only
    wanted = ' '.join(name.split()).casefold()
    for s in all_styles():
        if wanted in (s.name.casefold(), ' '.join(s.human_name.split()).casefold()):
            return s
    raise Exit(USAGE, _('There is no cover style "{name}". The styles are: {names}.').format(
        name=name, names=', '.join(f'{s.human_name} ({s.name})' for s in all_styles())))


def image_provider_for(args: argparse.Namespace) -> AIProviderPlugin:
    """The provider named by --provider, else the image provider chosen in the settings; one that
    makes images and is ready to use (covers.making's checks, as the cover windows')."""
    # the cover commands only
    from calibre_plugins.bookai.covers.making import chosen_image_provider, provider_problem
    from calibre_plugins.bookai.providers.registry import image_provider_names
    provider = provider_named(args.provider) if args.provider else chosen_image_provider()
    if problem := provider_problem(provider):
        if provider is None:  # the one way the command line has of its own to choose one
            problem += ' ' + _('Or name one with --provider: {names}.').format(
                names=', '.join(shown_name for _pid, shown_name in image_provider_names()))
        raise Exit(NOT_CONFIGURED, problem)
    assert provider is not None  # provider_problem() says that none is chosen
    return provider


def make_image(provider: AIProviderPlugin, prompt: str, aspect: str) -> 'ImageResult':
    """The image provider makes for prompt (covers.making.make_image); Ctrl-C stops it."""
    from calibre_plugins.bookai.covers import making  # the cover commands only
    cancel = CancelToken()
    try:
        with ctrl_c_cancels(cancel):
            return making.make_image(provider, prompt, aspect, cancel)
    except Cancelled:
        raise Exit(STOPPED, _('Stopped.')) from None
    except Exception as e:  # the service's refusal, or the unexpected: in one sentence
        raise Exit(PROVIDER_ERROR, making.failure_text(e)) from None


def cover_summary(provider: AIProviderPlugin, result: 'ImageResult') -> str:
    """"Model: … · This image: …": the cost said as every cost is (providers.pricing.cost_text):
    reported, estimated from dated prices, or unknown (never free), unless made on this computer."""
    from calibre_plugins.bookai.covers.making import image_summary  # the cover commands only
    return image_summary(result, provider.connection.is_local, provider.display_name)


# history {{{

def add_history(sub: 'argparse._SubParsersAction') -> None:
    h = sub.add_parser('history', help=_('Search the conversations kept for a library, or export them as Markdown '
                                         'or HTML'))
    what = h.add_subparsers(dest='history_command', metavar='search|export')
    s = what.add_parser('search', help=_('List the conversations that hold every word (in a title, a book, a '
                                         'question or an answer), the best first; no word lists them all'))
    s.add_argument('words', nargs='*', metavar='WORD')
    s.add_argument('--library', required=True, metavar='PATH', help=_('The calibre library folder'))
    s.add_argument('--json', action='store_true', help=_('One JSON object per conversation, on a line of its own'))
    e = what.add_parser('export', help=_('Write conversations as Markdown or HTML, with their cited passages and '
                                         'web pages'))
    e.add_argument('ids', nargs='+', metavar='ID', help=_('A conversation id, as "history search" lists it'))
    e.add_argument('--library', required=True, metavar='PATH', help=_('The calibre library folder'))
    e.add_argument('--format', choices=('md', 'html'), help=_('Markdown or HTML (default: by the extension of '
                                                              '--output, else Markdown)'))
    e.add_argument('--output', metavar='FILE', help=_('Write to FILE rather than to standard output'))
    e.add_argument('--force', action='store_true', help=_('Replace FILE when it exists'))


def cmd_history(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    """history search | export: the History of a library (conversation/history.py, conversation/export.py)."""
    if args.history_command == 'export' and args.output and os.path.lexists(args.output) and not args.force:
        raise Exit(USAGE, _('{path} exists: add --force to replace it.').format(path=args.output))
    if args.history_command == 'search':
        return in_library(args, history_search, stdout)
    if args.history_command == 'export':
        return in_library(args, history_export, stdout)
    raise Exit(USAGE, _('Say what to do with the History: search or export.'))


def history_said(library: BookLibrary) -> None:
    """What of the History could not be read, on standard error."""
    history = library.history
    if history.damaged:
        say(sys.stderr, _('Some saved conversations could not be read. They were kept, set aside, as: '
                          '{files}').format(files=', '.join(history.damaged)))
    if history.unreadable:
        raise Exit(NOT_READ, history.unreadable)


def history_search(library: BookLibrary, args: argparse.Namespace, stdout: TextIO) -> int:
    import time  # history only
    found = library.history.search(library.library_id, ' '.join(args.words))
    history_said(library)
    if not found:
        raise Exit(NOTHING_FOUND, _('No conversation matches "{words}".').format(words=' '.join(args.words))
                   if args.words else _('No conversations are kept for this library yet.'))
    for s in found:
        if args.json:
            emit(stdout, {'id': s.id, 'updated': s.updated, 'title': s.title, 'books': list(s.books),
                          'book_ids': list(s.book_ids), 'questions': s.turns, 'provider': s.provider,
                          'model': s.model})
        else:
            say(stdout, '\t'.join((s.id, time.strftime('%Y-%m-%d %H:%M', time.localtime(s.updated)), s.title,
                                   '; '.join(s.books))))
    return OK


def history_export(library: BookLibrary, args: argparse.Namespace, stdout: TextIO) -> int:
    from calibre_plugins.bookai.conversation.export import export, format_of  # history only
    from calibre_plugins.bookai.core.files import write_private  # history only
    convs = []
    for conv_id in dict.fromkeys(args.ids):
        try:
            conv = library.history.load(library.library_id, conv_id)
        except ValueError as e:  # damaged: set aside, and said
            raise Exit(NOT_READ, str(e)) from None
        if conv is None:
            raise Exit(NOTHING_FOUND, _('No conversation with the id {id} is kept for this library: '
                                        '"history search" lists them.').format(id=conv_id))
        convs.append(conv)
    fmt = args.format or (format_of(args.output) if args.output else 'md')
    text = export(convs, fmt)
    if not args.output:
        say(stdout, text, end='')
        return OK
    try:
        write_private(os.path.abspath(args.output), text)  # whole or not at all
    except OSError as e:
        raise Exit(NOT_WRITTEN, _('The conversations could not be saved in {path}: {reason}').format(
            path=args.output, reason=e.strerror or e)) from None
    say(sys.stderr, ngettext('The conversation was saved in {path}.', '{count} conversations were saved in {path}.',
                             len(convs)).format(count=len(convs), path=args.output))
    return OK

# }}}


# xray {{{

def add_xray(sub: 'argparse._SubParsersAction') -> None:
    x = sub.add_parser('xray', help=_('The characters, places and terms of a book met up to your place, with '
                                      'their descriptions and where they appear'),
                       description=_('Made by the model chapter by chapter, and kept: moving on sends only the '
                                     'chapters not read yet. Nothing after your place is sent or shown. The '
                                     'estimated tokens and cost are said first; the first time a book\'s text '
                                     'would go to a provider on the internet, it goes only with --yes.'))
    x.add_argument('--library', required=True, metavar='PATH', help=_('The calibre library folder'))
    x.add_argument('--book', required=True, type=int, metavar='ID', help=_('The book id'))
    x.add_argument('--provider', metavar='NAME', help=_('Instead of the provider chosen in the settings'))
    x.add_argument('--model', metavar='ID', help=_('Instead of the configured model'))
    x.add_argument('--position', type=float, metavar='FRACTION', help=_('The reading position, as a fraction of the '
                                                                        'book (default: where the viewer last was)'))
    x.add_argument('--search', metavar='TEXT', help=_('Only the entities whose names, or else descriptions, hold '
                                                      'these words'))
    x.add_argument('--yes', action='store_true', help=_('Agree to send the book\'s text to a provider on the '
                                                        'internet (asked once per book)'))
    x.add_argument('--json', action='store_true', help=_('One JSON event per line: estimate, progress, notice, '
                                                         'entity, done'))


def cmd_xray(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    """xray: the X-Ray of a book at the reader's place (conversation/xray.py)."""
    if args.position is not None and not 0 <= args.position <= 1:
        raise Exit(USAGE, _('--position is a fraction of the book, from 0 to 1.'))
    return in_library(args, xray, stdout)


# recap {{{

def add_recap(sub: 'argparse._SubParsersAction') -> None:
    r = sub.add_parser('recap', help=_('The story so far: a recap of a book up to where you are, citing its passages'),
                       description=_('From the whole text read when it fits in what the model reads at once, else '
                                     'from summaries of the earlier chapters (made once per book and model, and '
                                     'kept) and the latest text in full. Nothing after your place is sent. What '
                                     'will be sent, and its cost, is said first.'))
    r.add_argument('--library', required=True, metavar='PATH', help=_('The calibre library folder'))
    r.add_argument('--book', required=True, type=int, metavar='ID', help=_('The book id'))
    r.add_argument('--provider', metavar='NAME', help=_('Instead of the provider chosen in the settings'))
    r.add_argument('--model', metavar='ID', help=_('Instead of the configured model'))
    r.add_argument('--position', type=float, metavar='FRACTION', help=_('The reading position, as a fraction of the '
                                                                        'book (default: where the viewer last was)'))
    which = r.add_mutually_exclusive_group()
    which.add_argument('--since', type=float, metavar='FRACTION',
                       help=_('Recap what you read since this earlier place, a fraction of the book'))
    which.add_argument('--series', action='store_true',
                       help=_("Recap the earlier books of the book's series that the library holds"))
    r.add_argument('--yes', action='store_true', help=_("Send the book's text to an online provider: asked the first "
                                                        'time for each book, after the estimate is shown'))
    r.add_argument('--json', action='store_true', help=_('One JSON event per line: estimate, progress, text, usage, '
                                                         'error, done, citation'))


def cmd_recap(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    """recap: the story so far (conversation/recap.py), sent as ask sends a question, kept in the History."""
    for name in ('position', 'since'):
        value = getattr(args, name)
        if value is not None and not 0 <= value <= 1:
            raise Exit(USAGE, _('--{name} is a fraction of the book, from 0 to 1.').format(name=name))
    return in_library(args, recap, stdout)


def library_book(library: BookLibrary, book_id: int) -> tuple['Book', 'Index', str]:
    """(the text of a library book, its passages' index, its format), from the format choose_format()
    picks, read once and kept in the text cache; the chapters left out said; Exit when it has none."""
    db = library.db
    fmt = choose_format(db.formats(book_id))
    if fmt is None:
        raise Exit(USAGE, _('Book {id} has no file with text that can be read: it has no formats, or only '
                            'pictures.').format(id=book_id))
    try:
        book, index = library_book_text(db, book_id, fmt)
    except UnreadableBook as e:
        raise Exit(USAGE, str(e)) from None
    if not book.length:
        raise Exit(USAGE, _('The {fmt} file of book {id} has no text (a scanned book has only pictures of its '
                            'pages).').format(fmt=fmt, id=book_id))
    if note := book.skipped_note():
        say(sys.stderr, note)
    return book, index, fmt


def xray(library: BookLibrary, args: argparse.Namespace, stdout: TextIO) -> int:
    from calibre_plugins.bookai.conversation import xray as xr  # this command only
    from calibre_plugins.bookai.providers.pricing import cost_text  # this command only
    if not library.has_book(args.book):
        raise Exit(USAGE, _('The library has no book with the id {ids}.').format(ids=args.book))
    book, _index, fmt = library_book(library, args.book)
    position = args.position
    if position is None:
        position = saved_position(library.db.format_abspath(args.book, fmt), book)
    if position is None:
        raise Exit(USAGE, _('Book AI does not know where you are in this book, so it cannot keep the X-Ray to what '
                            'you have read: give your place with --position FRACTION, or open the book in calibre\'s '
                            'E-book viewer, which saves it when you close the book. Nothing was sent.'))
    provider = provider_for(args)
    book_key = f'{library.library_id}:{args.book}'
    language = Conversation.about(library, [args.book]).language
    cancel = CancelToken()

    def progress(done: int, total: int, title: str) -> None:
        if args.json:
            emit(stdout, {'type': 'progress', 'done': done, 'total': total, 'chapter': title})
        elif title:
            say(sys.stderr, _('Reading {chapter} ({number} of {total})…').format(chapter=title, number=done + 1,
                                                                                  total=total))
    try:
        with ctrl_c_cancels(cancel):
            key = xr.key_for(book_key, provider, args.model or '', language, cancel)
            plan = xr.plan_xray(book, position, provider, key)
            if not plan.nothing_to_send:
                if args.json:
                    emit(stdout, {'type': 'estimate', 'chapters': len(plan.chapters), 'requests': plan.requests,
                                  'tokens': plan.tokens, 'answer_tokens': plan.answer_tokens, 'local': plan.local,
                                  'cost': asdict(plan.cost) if plan.cost is not None else None,
                                  'cost_text': cost_text(plan.cost, plan.local)})
                else:
                    say(sys.stderr, plan.said())
                if xr.needs_consent(book_key, provider):
                    if not args.yes:
                        raise Exit(USAGE, _('Nothing was sent: the X-Ray sends the text of this book up to your '
                                            'place to {provider}, on the internet. Run it again with --yes to agree '
                                            '(asked once per book).').format(provider=provider.display_name))
                    xr.remember_consent(book_key, provider)
            made = xr.build_xray(book, position, provider, key, cancel=cancel, progress=progress)
    except Cancelled:
        raise Exit(STOPPED, _('Stopped: the chapters read so far are kept for the X-Ray.')) from None
    except ProviderError as e:
        raise Exit(PROVIDER_ERROR, str(e)) from None
    show_xray(made, args, cost_text(made.usage.cost, provider.connection.is_local), stdout)
    if args.search and not made.search(args.search):
        raise Exit(NOTHING_FOUND, _('Nothing in the X-Ray matches "{words}".').format(words=args.search))
    return OK


def show_xray(made: 'XRay', args: argparse.Namespace, cost: str, stdout: TextIO) -> None:
    """The X-Ray's entities (those --search finds), its notices and what the run spent."""
    shown = made.search(args.search) if args.search else list(made.entities)
    missing = ngettext('{count} chapter read is not in the X-Ray yet: it is read again next time.',
                       '{count} chapters read are not in the X-Ray yet: they are read again next time.',
                       len(made.missing)).format(count=len(made.missing)) if made.missing else ''
    notices = [*made.notices, *([missing] if missing else [])]
    titles = made.titles
    for notice in notices:
        if args.json:
            emit(stdout, {'type': 'notice', 'text': notice})
        else:
            say(sys.stderr, notice)

    def where(place: 'Place') -> str:
        return f'{place.chapter} ({place.position:.0%})'
    for e in shown:
        if args.json:
            emit(stdout, {'type': 'entity', 'name': e.name, 'kind': e.kind, 'other_names': list(e.other_names),
                          'description': e.description,
                          'chapters': [{'number': n, 'title': titles[n] if n < len(titles) else '', 'passages': c}
                                       for n, c in zip(e.chapters, e.counts)],
                          'first': {'chapter': e.first.chapter, 'position': round(e.first.position, 4),
                                    'cfi': e.first.cfi, 'passage': e.first_passage},
                          'citations': [{'passage': c.number, 'chapter': c.place.chapter,
                                         'position': round(c.place.position, 4), 'cfi': c.place.cfi}
                                        for c in e.citations]})
            continue
        kind = {'character': _('character'), 'place': _('place'), 'term': _('term')}.get(e.kind, e.kind)
        also = _('; also: {names}').format(names=', '.join(e.other_names)) if e.other_names else ''
        say(stdout, f'{e.name} ({kind}{also})')
        if e.description:
            say(stdout, f'    {e.description}')
        bar = ''.join('█' if n else '·' for n in e.appearances(made.chapters_read))
        say(stdout, '    ' + _('First: {place}. In {count} of {total} chapters read: {bar}').format(
            place=where(e.first), count=len(e.chapters), total=len(made.chapters_read), bar=bar))
        if e.citations:
            say(stdout, '    ' + _('Passages: {places}').format(places=', '.join(where(c.place) for c in e.citations)))
    if args.json:
        emit(stdout, {'type': 'done', 'entities': len(shown), 'chapters_read': len(made.chapters_read),
                      'missing': list(made.missing), 'requests': made.requests, 'updated': made.updated,
                      'usage': asdict(made.usage)})
        return
    if not made.entities:
        say(sys.stderr, _('The X-Ray has no character, place or term yet.'))
    if made.requests:
        say(sys.stderr, ngettext('{count} request sent: {cost}.', '{count} requests sent: {cost}.',
                                 made.requests).format(count=made.requests, cost=cost))


def recap_job(library: BookLibrary, args: argparse.Namespace, provider: AIProviderPlugin,
              conv: Conversation) -> 'RecapJob':
    """The RecapJob --series, --since or neither asks for."""
    # the recap command only
    from calibre_plugins.bookai.conversation.recap import NoRecap, NotInSeries, RecapJob, book_source, series_job
    from calibre_plugins.bookai.conversation.summaries import BookKey
    from calibre_plugins.bookai.grounding.so_far import read_until
    db, book_id, info = library.db, args.book, conv.books[0]
    about = f'{info.title} by {info.authors_text}' if info.authors else info.title
    if args.series:
        try:
            job, left_out = series_job(provider, conv, db, book_id, info.title, args.model or '')
        except NotInSeries:
            raise Exit(USAGE, _('Book {id} is not in a series.').format(id=book_id)) from None
        except NoRecap as e:
            raise Exit(NOTHING_FOUND, str(e)) from None
        for sentence in left_out:
            say(sys.stderr, sentence)
        return job
    book, _index, fmt = library_book(library, book_id)
    position = args.position
    if position is None:
        position = saved_position(db.format_abspath(book_id, fmt), book)
    if position is None:
        raise Exit(USAGE, _('Book AI does not know where you are in this book, so it cannot keep to what you have '
                            "read: give your place with --position FRACTION, or open the book in calibre's E-book "
                            'viewer, which saves it when you close the book. Nothing was sent.'))
    if args.since is not None and args.since >= position:
        raise Exit(USAGE, _('--since must be an earlier place than where you are ({position}).').format(
            position=f'{position:.1%}'))
    source = book_source(BookKey(db.library_id, book_id, fmt), book, position, about)
    since = read_until(book, args.since) if args.since is not None else 0
    return RecapJob(provider, conv, [source], 'since' if args.since is not None else 'story', since,
                    model=args.model or '')


def recap(library: BookLibrary, args: argparse.Namespace, stdout: TextIO) -> int:
    # the recap command only
    from calibre_plugins.bookai.conversation.recap import NoRecap, needs_consent, remember_consent
    from calibre_plugins.bookai.core.errors import ContextTooLong
    if not library.has_book(args.book):
        raise Exit(USAGE, _('The library has no book with the id {ids}.').format(ids=args.book))
    provider = provider_for(args)
    conv = Conversation.about(library, [args.book])
    job = recap_job(library, args, provider, conv)
    cancel = CancelToken()
    try:
        with ctrl_c_cancels(cancel):
            plan = job.prepare(cancel)
            estimate = job.estimate()
    except NoRecap as e:
        raise Exit(NOTHING_FOUND, str(e)) from None
    except ProviderError as e:
        raise Exit(PROVIDER_ERROR, str(e)) from None
    except Cancelled:
        raise Exit(STOPPED, _('Stopped.')) from None
    for notice in plan.notices:
        say(sys.stderr, notice)
    if args.json:
        emit(stdout, {'type': 'estimate', 'mode': plan.mode, 'summaries': len(plan.segments),
                      'to_make': len(job.missing()), 'requests': estimate.requests,
                      'input_tokens': estimate.input_tokens, 'output_tokens': estimate.output_tokens,
                      'cost': estimate.cost.amount if estimate.cost else None, 'local': estimate.local})
    say(sys.stderr, job.described(estimate))
    if needs_consent(provider, job.consent_keys):
        if not args.yes:
            raise Exit(USAGE, _("{provider} is online: the book's text goes to it only with your consent. Add --yes "
                                'to send it (asked once for each book). Nothing was sent.').format(
                provider=provider.display_name))
        with written(plugin_prefs()):
            remember_consent(provider, job.consent_keys)
    while True:
        recap_summaries(job, args, stdout)
        question = job.question()
        for notice in question.notices:
            say(sys.stderr, notice)
        answer, kept = answer_and_keep(library, conv, provider, question, args, stdout)
        if answer.failed is not None and isinstance(answer.failed.error, ContextTooLong) and (said := job.fall_back()):
            say(sys.stderr, said)
            continue
        break
    if answer.failed is not None:
        raise Exit(PROVIDER_ERROR, answer.failed.message)
    if question.excerpt is not None:
        show_citations(answer.text, cast(Excerpt, question.excerpt), args.json, stdout)
    else:
        show_place_citations(answer.text, question, args.json, stdout)
    return OK if kept else NOT_WRITTEN


def recap_summaries(job: 'RecapJob', args: argparse.Namespace, stdout: TextIO) -> None:
    """The summaries job needs, made (those kept found): progress on standard error, or as events."""
    def progress(done: int, total: int, chapter: str) -> None:
        if args.json:
            emit(stdout, {'type': 'progress', 'done': done, 'total': total, 'chapter': chapter})
        elif chapter:
            say(sys.stderr, _('Summarizing {chapter} ({done} of {total})').format(chapter=chapter, done=done + 1,
                                                                                  total=total))
    cancel = CancelToken()
    try:
        with ctrl_c_cancels(cancel):
            run = job.summarize(cancel, progress)
    except Cancelled:
        raise Exit(STOPPED, _('Stopped: the summaries made so far are kept.')) from None
    if run.error is not None:
        raise Exit(PROVIDER_ERROR, str(run.error))


def show_place_citations(answer: str, question: Question, as_json: bool, stdout: TextIO) -> None:
    """The answer's [n] citations from the question's places (passages of several books)."""
    from calibre_plugins.bookai.grounding.citations import cited_numbers  # the recap command only
    for n in cited_numbers(answer):
        place = question.places[n - 1] if 0 < n <= len(question.places) else None
        if as_json:
            emit(stdout, {'type': 'citation', 'number': n, 'sent': place is not None,
                          'chapter': place.chapter if place else '', 'position': round(place.position, 4) if place
                          else None, 'book_id': place.book_id if place else None})
        elif place is not None:
            say(stdout, f'[{n}] {place.chapter} ({place.position:.0%})')
        else:
            say(stdout, f'[{n}] ' + _('(not a passage that was sent)'))

# }}}


# summaries {{{

def add_summaries(sub: 'argparse._SubParsersAction') -> None:
    r = sub.add_parser('summaries', help=_('Summarize the chapters read of books, up to where you are, and keep the '
                                           'summaries'),
                       description=_('The chapters read to their end, each summarized once per book and model and '
                                     'kept, as the Make chapter summaries job does: "Everything up to where I am", '
                                     'the story so far and the X-Ray then find them made. Nothing after your place '
                                     'is sent; a book whose place is not known gets nothing. What will be sent, and '
                                     'its cost, is said first.'))
    r.add_argument('--library', required=True, metavar='PATH', help=_('The calibre library folder'))
    r.add_argument('--book', required=True, type=int, action='append', metavar='ID',
                   help=_('The book id (repeatable)'))
    r.add_argument('--provider', metavar='NAME', help=_('Instead of the provider chosen in the settings'))
    r.add_argument('--model', metavar='ID', help=_('Instead of the configured model'))
    r.add_argument('--position', type=float, metavar='FRACTION', help=_('The reading position, as a fraction of the '
                                                                        'book (default: where the viewer last was)'))
    r.add_argument('--yes', action='store_true', help=_("Send the books' text to an online provider: asked the first "
                                                        'time for each book, after the estimate is shown'))
    r.add_argument('--json', action='store_true', help=_('One JSON event per line: estimate, book, progress, done'))


def cmd_summaries(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    """summaries: the chapters read of books summarized and kept (conversation/library_summaries.py)."""
    if args.position is not None and not 0 <= args.position <= 1:
        raise Exit(USAGE, _('--position is a fraction of the book, from 0 to 1.'))
    return in_library(args, summaries, stdout)


def summaries(library: BookLibrary, args: argparse.Namespace, stdout: TextIO) -> int:
    # the summaries command only
    from calibre_plugins.bookai.conversation import library_summaries as ls
    from calibre_plugins.bookai.conversation.recap import needs_consent, remember_consent
    missing = [b for b in args.book if not library.has_book(b)]
    if missing:
        raise Exit(USAGE, _('The library has no book with the id {ids}.').format(ids=', '.join(map(str, missing))))
    provider = provider_for(args)
    cancel = CancelToken()

    def log(line: str) -> None:
        if args.json:
            emit(stdout, {'type': 'book', 'text': line})
        else:
            say(sys.stderr, line)

    def progress(fraction: float, text: str) -> None:
        if args.json:
            emit(stdout, {'type': 'progress', 'fraction': round(fraction, 4), 'text': text})
        else:
            say(sys.stderr, f'{fraction:.0%} {text}')
    try:
        with ctrl_c_cancels(cancel):
            plans = ls.plan_books(library.db, args.book, provider, args.model or '', cancel, position=args.position)
            estimate = ls.estimate_books(plans, provider)
            if args.json:
                emit(stdout, {'type': 'estimate', 'requests': estimate.requests, 'input_tokens': estimate.input_tokens,
                              'output_tokens': estimate.output_tokens, 'local': estimate.local,
                              'cost': estimate.cost.amount if estimate.cost else None})
            if plans.requests:
                say(sys.stderr, ls.described(plans, estimate))
                if needs_consent(provider, plans.consent_keys):
                    if not args.yes:
                        raise Exit(USAGE, _("{provider} is online: the books' text goes to it only with your consent. "
                                            'Add --yes to send it (asked once for each book). Nothing was '
                                            'sent.').format(provider=provider.display_name))
                    with written(plugin_prefs()):
                        remember_consent(provider, plans.consent_keys)
            run = ls.make_summaries(plans, provider, cancel, progress, log)
    except ProviderError as e:
        raise Exit(PROVIDER_ERROR, str(e)) from None
    except Cancelled:
        raise Exit(STOPPED, _('Stopped: the summaries made so far are kept.')) from None
    if args.json:
        emit(stdout, {'type': 'done', 'made': run.made, 'kept_already': run.found, 'stopped': run.stopped,
                      'skipped': run.skipped, 'failed': run.failed, 'error': run.error,
                      'cost': run.cost.amount if run.cost else None})
    else:
        say(stdout, run.said())
    if run.stopped:
        return STOPPED
    if run.error:
        return PROVIDER_ERROR
    return OK if run.made or run.found else NOTHING_FOUND

# }}}


# the library by meaning: search, similar {{{

def add_by_meaning(sub: 'argparse._SubParsersAction') -> None:
    s = sub.add_parser('search', help=_('Find books of a library by meaning, from their metadata: the ids, titles '
                                        'and why each matched, the best first'),
                       description=_('The library\'s index by meaning is brought up to date first (only the books '
                                     'added or changed since are embedded) by the embeddings provider: one on this '
                                     'computer, or one online with --yes, the estimate said first.'))
    s.add_argument('query', metavar='QUERY', nargs='+')
    m = sub.add_parser('similar', help=_('The books of a library nearest the books given, in meaning, the best '
                                         'first'))
    m.add_argument('books', type=int, nargs='+', metavar='BOOK_ID')
    for c in (s, m):
        c.add_argument('--library', required=True, metavar='PATH', help=_('The calibre library folder'))
        c.add_argument('--search', metavar='EXPRESSION', help=_("Only the books calibre's search finds with this "
                                                                'expression (as in the search box)'))
        c.add_argument('--limit', type=int, default=10, metavar='N', help=_('Books shown, at most (default: 10)'))
        c.add_argument('--provider', metavar='NAME', help=_('Instead of the embeddings provider chosen in the '
                                                            'settings'))
        c.add_argument('--model', metavar='ID', help=_('Instead of the configured embedding model'))
        c.add_argument('--yes', action='store_true', help=_("Send the library's metadata to an embeddings provider "
                                                            'online'))
        c.add_argument('--json', action='store_true', help=_('One JSON object per book found'))


def cmd_search(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    return in_library(args, by_meaning_search, stdout)


def cmd_similar(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    return in_library(args, by_meaning_search, stdout)


def calibres_search(db: 'Cache', expression: str | None) -> list[int] | None:
    """The books calibre's search finds with expression (None without one)."""
    if not expression:
        return None
    try:
        return sorted(db.search(expression))
    except Exception as err:  # calibre's ParseException and the like: the expression's fault
        raise Exit(USAGE, _('calibre could not search for that: {error}').format(
            error=one_line(str(err))[:300])) from None


def meaning_index(library: BookLibrary, provider_name: str, model: str, yes: bool,
                  cancel: CancelToken) -> 'tuple[Embedder, BookVectors]':
    """The library's index by meaning, brought up to date by the embeddings provider (provider_name, else
    the one the settings choose) and read back: what search, similar and read-next start from. Its
    metadata goes to a provider online only once agreed, or with yes (the estimate said first)."""
    from calibre_plugins.bookai.library_search import building
    db, library_id = library.db, str(library.db.library_id)
    provider = building.embeddings_provider(provider_id(provider_name) or provider_name if provider_name else '')
    if provider is None:
        raise Exit(NOT_CONFIGURED, _('The provider chosen makes no embeddings: choose one that does (a local '
                                     'server such as llama.cpp, Ollama or LM Studio) with --provider.'))
    if problem := provider.config.missing_setup():
        raise Exit(NOT_CONFIGURED, problem)
    try:
        e = building.embedder(provider, model, cancel)
    except ProviderError as err:
        raise Exit(PROVIDER_ERROR, str(err)) from None
    files = building.VectorFiles()
    p = building.plan(db, library_id, e, files)
    for kept in p.set_aside:
        say(sys.stderr, _('The index by meaning could not be read, and was set aside as {path}.').format(path=kept))
    if p.todo and not building.agreed(library_id, e):
        count, tokens = building.estimate(db, library_id, p)
        say(sys.stderr, ngettext('The metadata of {n} book goes to {provider}, online, to be embedded.',
                                 'The metadata of {n} books goes to {provider}, online, to be embedded.', count).format(
            n=count, provider=provider.display_name) + ' ' + sending_estimate(provider.name, e.model, tokens, False))
        if not yes:
            raise Exit(USAGE, _('Nothing was sent: --yes sends it.'))
    if p.todo:
        say(sys.stderr, ngettext('Embedding {n} book with {model}…', 'Embedding {n} books with {model}…',
                                 len(p.todo)).format(n=len(p.todo), model=one_line(e.model)))

    def told(done: int, total: int) -> None:
        if total >= 200:
            say(sys.stderr, _('{done} of {total}').format(done=done, total=total))
    with ctrl_c_cancels(cancel):
        try:
            built = building.update_index(db, library_id, e, files, cancel, told, the_plan=p)
        except ProviderError as err:
            raise Exit(PROVIDER_ERROR, str(err)) from None
        except building.IndexNotKept as err:
            raise Exit(NOT_WRITTEN, str(err)) from None
    if built.stopped:
        raise Exit(STOPPED, _('Stopped: what was embedded is kept, and the next search goes on from there.'))
    if built.left_out:
        say(sys.stderr, ngettext('{provider} would not embed {n} book; it is tried again next time.',
                                 '{provider} would not embed {n} books; they are tried again next time.',
                                 len(built.left_out)).format(provider=provider.display_name, n=len(built.left_out)))
    index = files.read(library_id, model=e.key)
    if index is None:
        raise Exit(NOT_WRITTEN, _("The library's index by meaning could not be read back."))
    return e, index


def by_meaning_search(library: BookLibrary, args: argparse.Namespace, stdout: TextIO) -> int:
    """search and similar: the index brought up to date, then the books found, shown."""
    from calibre_plugins.bookai.library_search import finding
    db, library_id = library.db, str(library.db.library_id)
    books = getattr(args, 'books', None)
    if books and (missing := [b for b in books if not library.has_book(b)]):
        raise Exit(USAGE, _('The library has no book with the id {ids}.').format(ids=', '.join(map(str, missing))))
    allowed = calibres_search(db, args.search)
    cancel = CancelToken()
    e, index = meaning_index(library, args.provider or '', args.model or '', args.yes, cancel)
    limit = max(1, min(args.limit, finding.DEFAULT_K))
    with ctrl_c_cancels(cancel):
        try:
            found = (finding.more_like(db, index, books, limit, allowed) if books else
                     finding.search(db, library_id, index, e, ' '.join(args.query), limit, allowed, cancel))
        except ProviderError as err:
            raise Exit(PROVIDER_ERROR, str(err)) from None
    titles = db.all_field_for('title', [f.book_id for f in found], default_value='')
    authors = db.all_field_for('authors', [f.book_id for f in found], default_value=())
    for f in found:
        if args.json:
            emit(stdout, {'id': f.book_id, 'title': titles.get(f.book_id) or '',
                          'authors': list(authors.get(f.book_id) or ()), 'score': round(f.score, 4), 'why': f.why})
            continue
        say(stdout, _('{id}\t{title} by {authors} ({score:.2f})').format(
            id=f.book_id, title=one_line(str(titles.get(f.book_id) or '')),
            authors=one_line(' & '.join(map(str, authors.get(f.book_id) or ()))), score=f.score))
        if f.why:
            say(stdout, '\t' + one_line(f.why))
    if not found:
        raise Exit(NOTHING_FOUND, _('No book of the library was found.'))
    return OK

def add_read_next(sub: 'argparse._SubParsersAction') -> None:
    r = sub.add_parser('read-next', help=_('Ask what to read next after the books given: from anywhere, or, with '
                                           '--from-library, chosen among the books of the library'),
                       description=_('From anywhere, the model suggests books it knows (as the quick action '
                                     'read_next). With --from-library, the books of the library nearest in '
                                     'meaning to the books given (none given: those read lately in the E-book '
                                     'viewer and those rated four stars or more), the ones not read yet first, '
                                     'go to the model with the details you let go, and it chooses among them. The '
                                     'library\'s index by meaning is brought up to date first, as search does.'))
    r.add_argument('--library', required=True, metavar='PATH', help=_('The calibre library folder'))
    r.add_argument('--book', action='append', type=int, default=[], metavar='ID',
                   help=_('A book to start from (repeatable)'))
    r.add_argument('--from-library', action='store_true', help=_('Choose among the books of the library'))
    r.add_argument('--search', metavar='EXPRESSION', help=_("With --from-library: only the books calibre's search "
                                                            'finds with this expression'))
    r.add_argument('--read-field', metavar='NAME', help=_('With --from-library: the field that says a book was read, '
                                                          'such as #read (default: as chosen in the window; else '
                                                          'the books opened in the E-book viewer)'))
    r.add_argument('--provider', metavar='NAME', help=_('Instead of the provider chosen in the settings'))
    r.add_argument('--model', metavar='ID', help=_('Instead of the configured model'))
    r.add_argument('--embeddings-provider', metavar='NAME', help=_('Instead of the embeddings provider chosen in '
                                                                   'the settings'))
    r.add_argument('--embeddings-model', metavar='ID', help=_('Instead of the configured embedding model'))
    r.add_argument('--yes', action='store_true', help=_("Send the library's metadata to an embeddings provider "
                                                        'online'))
    r.add_argument('--json', action='store_true', help=_('One JSON event per line: text, reasoning, usage, '
                                                         'error, done, book'))
    r.add_argument('--show-sent', action='store_true', help=_('Print the exact messages that would be sent, with '
                                                              'their token count, and send nothing'))


def cmd_read_next(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    return in_library(args, read_next, stdout)


def read_next(library: BookLibrary, args: argparse.Namespace, stdout: TextIO) -> int:
    """read-next: the quick action read_next from anywhere; or, with --from-library, the books offered
    found as the window finds them (library_search/read_next.py), asked, and the books the answer names
    by their numbers listed: only the numbers sent."""
    from calibre_plugins.bookai.library_search import read_next as rn
    if missing := [b for b in args.book if not library.has_book(b)]:
        raise Exit(USAGE, _('The library has no book with the id {ids}.').format(ids=', '.join(map(str, missing))))
    if not args.from_library:
        if not args.book:
            raise Exit(USAGE, _('Give the books to start from with --book, or use --from-library.'))
        args.action, args.prompt, args.scope, args.no_lookups = 'read_next', None, 'metadata', True
        return ask(library, args, stdout)
    db, library_id = library.db, str(library.db.library_id)
    allowed = calibres_search(db, args.search)
    cancel = CancelToken()
    _e, index = meaning_index(library, args.embeddings_provider or '', args.embeddings_model or '', args.yes,
                              cancel)
    read_field = rn.read_field_for(library_id) if args.read_field is None else args.read_field
    if read_field and read_field not in db.field_metadata.all_field_keys():
        raise Exit(USAGE, _('The library has no field {name}.').format(name=one_line(read_field)[:100]))
    prepared = rn.prepare(db, library_id, index, args.book, read_field, allowed)
    if not prepared.seeds:
        raise Exit(NOTHING_FOUND, _('No book to start from: give some with --book (with none, the books read lately '
                                    'in the E-book viewer and those rated four stars or more are used).'))
    if not prepared.candidates:
        raise Exit(NOTHING_FOUND, _('No book of the library was found near those books.'))
    conv = Conversation.about(library, prepared.seeds)
    question = Question(prepared.question, suggested=prepared.suggested)
    if args.show_sent:
        return show_sent(question.messages(conv), stdout)
    answer, kept = answer_and_keep(library, conv, provider_for(args), question, args, stdout)
    if answer.failed is not None:
        raise Exit(PROVIDER_ERROR, answer.failed.message)
    show_suggested(answer.text, prepared.suggested, args.json, stdout)
    return OK if kept else NOT_WRITTEN


def show_suggested(answer: str, offered: Sequence[tuple[int, str]], as_json: bool, stdout: TextIO) -> None:
    """The books of the library answer names by the numbers they were offered as (each once, in order);
    a number that was not offered is said to be none."""
    shown = False
    for n in cited_numbers(answer):
        if not 0 < n <= len(offered):
            if as_json:
                emit(stdout, {'type': 'book', 'number': n, 'offered': False})
            else:
                say(stdout, f'[{n}] ' + _('(not one of the books offered)'))
            continue
        book_id, title = offered[n - 1]
        if as_json:
            emit(stdout, {'type': 'book', 'number': n, 'offered': True, 'id': book_id, 'title': title})
            continue
        if not shown:
            say(stdout, _('Suggested from your library:'))
            shown = True
        say(stdout, _('[{number}] {id}\t{title}').format(number=n, id=book_id, title=one_line(title)))

# }}}


COMMANDS = {'providers': cmd_providers, 'models': cmd_models, 'configure': cmd_configure, 'ask': cmd_ask,
            'ask-library': cmd_ask_library, 'import-calibre': cmd_import_calibre, 'cover': cmd_cover,
            'history': cmd_history, 'xray': cmd_xray, 'recap': cmd_recap, 'summaries': cmd_summaries,
            'metadata': cmd_metadata, 'search': cmd_search, 'similar': cmd_similar, 'read-next': cmd_read_next}
