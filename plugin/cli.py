# License: GPLv3 Copyright: the Book AI developers
"""The command line: calibre-debug -r "Book AI" -- COMMAND

    providers                       the providers, and whether each is ready
    models PROVIDER [--refresh]     the models PROVIDER offers
    configure PROVIDER key=value... set a provider's options
    ask --library PATH --book ID... (--action NAME | --prompt TEXT) [--provider NAME] [--model ID] [--json]
        [--scope metadata|selection|chapter|position|book] [--position FRACTION] [--text TEXT] [--show-sent]
    ask-library QUESTION --library PATH [--book ID...] [--provider NAME] [--model ID] [--json] [--show-sent]

Exit codes: 0 done, 2 bad usage, 3 provider not configured (or, for ask-library, the
library has no full-text index), 4 provider error, 5 nothing in the library matches;
each failure with one sentence on standard error. An API key is never taken
from the command line itself: api_key=- reads it from standard input,
api_key=env:NAME from the environment variable NAME.
"""

import argparse
import json
import os
import sys

load_translations()

OK, USAGE, NOT_CONFIGURED, PROVIDER_ERROR = 0, 2, 3, 4


class Exit(Exception):

    def __init__(self, code, sentence):
        super().__init__(sentence)
        self.code, self.sentence = code, sentence


class Parser(argparse.ArgumentParser):

    def error(self, message):
        raise Exit(USAGE, message)


def parser():
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
    a.add_argument('--scope', default='metadata', choices=('metadata', 'selection', 'chapter', 'position', 'book'),
                   help=_('What of the book\'s text is sent: nothing (metadata, the default), the selection with '
                          'its neighbours, the current chapter, the best passages up to the reading position, or '
                          'the best passages of the whole book'))
    a.add_argument('--position', type=float, metavar='FRACTION', help=_('The reading position, as a fraction of the '
                                                                        'book (default: where the viewer last was)'))
    a.add_argument('--text', metavar='TEXT', help=_('The selected text, for the selection scope'))
    a.add_argument('--show-sent', action='store_true', help=_('Print the exact messages that would be sent, with '
                                                              'their token count, and send nothing'))
    add_ask_library(sub)
    return p


def add_ask_library(sub):
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


def main(argv, stdin=None, stdout=None, stderr=None):
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    p = parser()
    try:
        args = p.parse_args(argv)
        if not args.command:
            raise Exit(USAGE, _('Name a command: providers, models, configure, ask or ask-library.'))
        return COMMANDS[args.command](args, stdin, stdout)
    except Exit as e:
        print(e.sentence, file=stderr)
        return e.code
    except KeyboardInterrupt:
        return PROVIDER_ERROR


def provider_named(name, **kw):
    from calibre_plugins.bookai.providers.registry import PROVIDERS, get_provider
    if name not in PROVIDERS:
        raise Exit(USAGE, _('There is no provider named "{name}". The providers are: {names}.').format(
            name=name, names=', '.join(PROVIDERS)))
    return get_provider(name, **kw)


def cmd_providers(args, stdin, stdout):
    from calibre_plugins.bookai.providers.registry import PROVIDERS
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    current = plugin_prefs()['provider']
    for name in PROVIDERS:
        p = provider_named(name)
        problem = p.missing_setup()
        mark = '*' if name == current else ' '
        state = _('ready') if not problem else problem
        where = _('local') if p.is_local else _('online')
        print(f'{mark} {name:18} {p.display_name} ({where}): {state}', file=stdout)
        options = ', '.join(o.name for o in p.all_options() if o.name not in ('api_key', 'enabled'))
        print('    ' + _('options: {options}').format(options=options), file=stdout)
    if not current:
        print(_('No provider is chosen yet: "configure PROVIDER ... --use" chooses one.'), file=stdout)
    return OK


def cmd_models(args, stdin, stdout):
    from calibre_plugins.bookai.core.errors import ProviderError
    p = provider_named(args.provider)
    if problem := p.missing_setup():
        raise Exit(NOT_CONFIGURED, problem)
    try:
        models = p.models(refresh=args.refresh)
    except ProviderError as e:
        raise Exit(PROVIDER_ERROR, str(e)) from None
    for m in models:
        print(m.id if m.display_name == m.id else f'{m.id}\t{m.display_name}', file=stdout)
    return OK


def cmd_configure(args, stdin, stdout):
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
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
    providers = dict(prefs['providers'])
    providers[p.name] = dict(providers.get(p.name, {}), **values)
    prefs['providers'] = providers
    if key is not None:
        from calibre_plugins.bookai.settings.keyring import StoreError
        from calibre_plugins.bookai.settings.secrets import not_kept
        try:
            p.secrets.set(p.name, 'api_key', key)
        except StoreError:
            raise Exit(NOT_CONFIGURED, not_kept(p.display_name)) from None
    if args.use or not prefs['provider']:
        prefs['provider'] = p.name
    configured = provider_named(p.name)
    problem = configured.missing_setup()
    print(problem or _('{provider} is ready.').format(provider=configured.display_name), file=stdout)
    if prefs['provider'] == p.name:
        print(_('Answers come from {provider}.').format(provider=configured.display_name), file=stdout)
    return OK


def read_key(text, stdin):
    if text == '-':
        return stdin.readline().strip()
    if text.startswith('env:'):
        value = os.environ.get(text[4:], '').strip()
        if not value:
            raise Exit(USAGE, _('The environment variable {name} is empty or not set.').format(name=text[4:]))
        return value
    raise Exit(USAGE, _('An API key is not given on the command line, where other users and the shell history '
                        'can see it: use api_key=- to read it from standard input, or api_key=env:NAME.'))


def cmd_ask(args, stdin, stdout):
    return in_library(args, ask, stdout)


def in_library(args, command, stdout):
    """command(library, args, stdout) on the library at --library, closed after."""
    from calibre_plugins.bookai.conversation.books import BookLibrary
    library = BookLibrary.open(args.library)
    if library is None:
        raise Exit(USAGE, _('There is no calibre library at {path}.').format(path=args.library))
    try:
        return command(library, args, stdout)
    finally:
        # closed here, not when garbage collected at exit: with full-text indexing on, calibre 8
        # can wait forever there for its indexing threads
        library.db.close()


def ask(library, args, stdout):
    from calibre_plugins.bookai.conversation.actions import find_action, library_actions
    from calibre_plugins.bookai.conversation.conversation import Conversation
    missing = [b for b in args.book if not library.has_book(b)]
    if missing:
        raise Exit(USAGE, _('The library has no book with the id {ids}.').format(ids=', '.join(map(str, missing))))
    conv = Conversation.about(library, args.book)
    if args.action:
        action = find_action(library_actions(), args.action)
        if action is None:
            raise Exit(USAGE, _('There is no quick action "{name}". The actions are: {names}.').format(
                name=args.action, names=', '.join(a.name for a in library_actions())))
        question = action.prompt(conv.books)
    else:
        question = args.prompt
    excerpt = book_excerpt(library, args, question) if args.scope != 'metadata' else None
    passages, spoiler_safe = '', False
    if excerpt is not None:
        from calibre_plugins.bookai.grounding.scopes import passages_block
        passages, spoiler_safe = passages_block(excerpt), excerpt.until is not None
    if args.show_sent:
        return show_sent(conv.messages_for(question, passages, spoiler_safe), stdout)
    provider = provider_for(args)
    answer = stream_answer(provider, conv.ask(question, passages, spoiler_safe), args, stdout)
    conv.finish(answer, provider.name)
    library.history.save(conv)
    if excerpt is not None and answer.failed is None:
        show_citations(answer.text, excerpt, args.json, stdout)
    if answer.failed is not None:
        raise Exit(PROVIDER_ERROR, answer.failed.message)
    return OK


def book_excerpt(library, args, question):
    """The passages of the book sent with question for --scope, from the format choose_format()
    picks: EPUB and KEPUB read directly, other formats converted by calibre in this process,
    once (the text is kept in the text cache)."""
    from calibre_plugins.bookai.grounding.extract import UnreadableBook
    from calibre_plugins.bookai.grounding.formats import choose_format
    from calibre_plugins.bookai.grounding.scopes import excerpt
    if len(args.book) != 1:
        raise Exit(USAGE, _('Book text can be sent about one book at a time.'))
    if args.scope == 'selection' and not args.text:
        raise Exit(USAGE, _('The selection scope needs the selected text: --text TEXT.'))
    if args.position is not None and not 0 <= args.position <= 1:
        raise Exit(USAGE, _('--position is a fraction of the book, from 0 to 1.'))
    book_id = args.book[0]
    db = library.db
    fmt = choose_format(db.formats(book_id))
    if fmt is None:
        raise Exit(USAGE, _('Book {id} has no file with text that can be read: it has no formats, or only '
                            'pictures.').format(id=book_id))
    try:
        book, index = book_text(db, book_id, fmt)
    except UnreadableBook as e:
        raise Exit(USAGE, str(e)) from None
    if not book.length:
        raise Exit(USAGE, _('The {fmt} file of book {id} has no text (a scanned book has only pictures of its '
                            'pages).').format(fmt=fmt, id=book_id))
    position = args.position
    if position is None and args.scope != 'book':
        from calibre_plugins.bookai.grounding.reading_position import saved_position
        position = saved_position(db.format_abspath(book_id, fmt), book)
    return excerpt(book, args.scope, question, position, args.text or '', index=index)


def book_text(db, book_id, fmt):
    """(Book, Index) of a library book's fmt file, from the text cache or read (and converted)
    now; the cache forgets the library's books that are gone."""
    from calibre_plugins.bookai.grounding.cache import TextCache, default_folder
    from calibre_plugins.bookai.grounding.extract import UnreadableBook
    path = db.format_abspath(book_id, fmt)
    if not path:
        raise UnreadableBook(_('The {fmt} file of book {id} is missing from the library folder.').format(
            fmt=fmt, id=book_id))
    cache = TextCache(default_folder())
    try:
        return cache.text_of(db.library_id, book_id, fmt, path)
    finally:
        cache.prune(db.library_id, db.all_book_ids())


def show_sent(messages, stdout):
    from calibre_plugins.bookai.conversation.conversation import estimated_tokens
    for m in messages:
        print(f'--- {m.role.value}', file=stdout)
        print(m.text, file=stdout)
    print('--- ' + _('about {tokens} tokens; nothing was sent').format(tokens=estimated_tokens(messages)), file=stdout)
    return OK


def show_citations(answer, excerpt, as_json, stdout):
    from calibre_plugins.bookai.grounding.citations import citations
    for c in citations(answer, excerpt):
        if as_json:
            print(json.dumps({'type': 'citation', 'number': c.number, 'sent': c.sent, 'chapter': c.chapter,
                              'position': round(c.position, 4)}, ensure_ascii=False), file=stdout)
        elif c.sent:
            print(f'[{c.number}] {c.chapter} ({c.position:.0%})', file=stdout)
        else:
            print(f'[{c.number}] ' + _('(not a passage that was sent)'), file=stdout)


def events_of(chunk):
    """The --json events for a chunk of the answer stream."""
    from calibre_plugins.bookai.core.messages import Done, Failed, ReasoningDelta, TextDelta
    if isinstance(chunk, TextDelta):
        return [{'type': 'text', 'text': chunk.text}]
    if isinstance(chunk, ReasoningDelta):
        return [{'type': 'reasoning', 'text': chunk.text}]
    if isinstance(chunk, Failed):
        return [{'type': 'error', 'kind': type(chunk.error).__name__, 'message': chunk.message}]
    if isinstance(chunk, Done):
        from dataclasses import asdict
        return [dict(type='usage', **asdict(chunk.usage)),  # tokens, and cost (None: unknown)
                {'type': 'done', 'model': chunk.model, 'finish_reason': chunk.finish_reason,
                 'web_links': [{'title': w.title, 'url': w.url} for w in chunk.web_links]}]
    return []


NOTHING_FOUND = 5


def cmd_ask_library(args, stdin, stdout):
    """ask-library: the question answered from passages found in the library's full-text index."""
    return in_library(args, ask_library, stdout)


def ask_library(library, args, stdout):
    from calibre_plugins.bookai.conversation.conversation import Conversation
    from calibre_plugins.bookai.grounding.library_search import (
        LibrarySearchError, fts_message, library_block, library_excerpt)
    missing = [b for b in args.book or () if not library.has_book(b)]
    if missing:
        raise Exit(USAGE, _('The library has no book with the id {ids}.').format(ids=', '.join(map(str, missing))))
    try:
        excerpt = library_excerpt(library.db, args.question, args.book)
    except LibrarySearchError as e:
        raise Exit(NOT_CONFIGURED, str(e)) from None
    if note := fts_message(library.db):  # still indexing: said, and the books indexed so far are searched
        print(note, file=sys.stderr)
    if not excerpt.passages:
        raise Exit(NOTHING_FOUND, _('Nothing in the full-text index of the library matches the question.'))
    conv = Conversation.about(library, args.book or excerpt.book_ids)
    passages = library_block(excerpt)
    if args.show_sent:
        return show_sent(conv.messages_for(args.question, passages), stdout)
    provider = provider_for(args)
    answer = stream_answer(provider, conv.ask(args.question, passages), args, stdout)
    conv.finish(answer, provider.name)
    library.history.save(conv)
    if answer.failed is not None:
        raise Exit(PROVIDER_ERROR, answer.failed.message)
    show_library_citations(answer.text, excerpt, args.json, stdout)
    return OK


def provider_for(args):
    """The provider named by --provider, else the one chosen in the settings; ready to use."""
    from calibre_plugins.bookai.providers.registry import chosen_provider
    provider = provider_named(args.provider) if args.provider else chosen_provider()
    if provider is None:
        raise Exit(NOT_CONFIGURED, _('No provider is chosen yet: "configure PROVIDER ... --use" chooses one.'))
    if problem := provider.missing_setup():
        raise Exit(NOT_CONFIGURED, problem)
    return provider


def stream_answer(provider, messages, args, stdout):
    """Send messages; the answer streams to stdout (as text, or as --json events). Returns the Answer."""
    from calibre_plugins.bookai.core.messages import Answer, TextDelta
    answer = Answer()
    for chunk in provider.text_chat(messages, use_model=args.model or ''):
        answer.add(chunk)
        if args.json:
            for event in events_of(chunk):
                print(json.dumps(event, ensure_ascii=False), file=stdout, flush=True)
        elif isinstance(chunk, TextDelta):
            stdout.write(chunk.text)
            stdout.flush()
    if not args.json and answer.text and not answer.text.endswith('\n'):
        stdout.write('\n')
    return answer


def show_library_citations(answer, excerpt, as_json, stdout):
    """The answer's [n] citations: "[n] Title — the passage's beginning…", or citation events."""
    from calibre_plugins.bookai.grounding.library_search import library_citations
    for c in library_citations(answer, excerpt):
        if as_json:
            print(json.dumps({'type': 'citation', 'number': c.number, 'sent': c.sent,
                              'book_id': c.book_id if c.sent else None, 'title': c.title, 'format': c.format,
                              'text': c.text}, ensure_ascii=False), file=stdout)
        elif c.sent:
            print(f'[{c.number}] {c.title} — {snippet(c.text)}', file=stdout)
        else:
            print(f'[{c.number}] ' + _('(not a passage that was sent)'), file=stdout)


def snippet(text, size=100):
    text = ' '.join(text.split())
    return text if len(text) <= size else text[:size].rsplit(' ', 1)[0] + '…'


COMMANDS = {'providers': cmd_providers, 'models': cmd_models, 'configure': cmd_configure, 'ask': cmd_ask,
            'ask-library': cmd_ask_library}
