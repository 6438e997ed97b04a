# License: GPLv3 Copyright: the Book AI developers
"""Files from outside: Book AI's own (its settings, its keys file, the History, the text cache,
the model lists' cache, covers' Undo and the staged run's manifest and images) and calibre's
(ai.json, gui.json, viewer-webengine.json, a library's metadata.db, the viewer's annotations),
put at their paths in the case's own folder and read as Book AI's callers read them, then
written again where the callers would write (a setting saved, a key kept, a conversation saved),
so that a damaged file is seen set aside, never overwritten.

A good file of each kind is made by the plugin's own writer (or, for calibre's, is calibre's as
recorded in tests/from_calibre/fixtures); the attacks change it.
"""

import json
import os
import shutil
import sqlite3
import time
import zlib
from pathlib import Path
from typing import Any

from helpers import images
from helpers.books import make_epub
from helpers.project import TESTS
from hostile import payloads as P
from hostile.isolation import Observed
from hostile.surfaces import (
    NO_BOUND_SIZE, UNBOUNDED_FILE, Context, Payload, Surface, bound_value, bytes_kept, damaged_variants,
    node_kept, not_a_file, plugin, sparse, sparse_kept,
)

CALIBRE_FILES = TESTS / 'from_calibre' / 'fixtures' / 'calibre-9.17'
SENTINEL = 'code-ran.txt'  # what code from outside would leave in the case's folder


class FileSurface(Surface):
    """A file at a path, read as its callers read it. A subclass says where it goes (name), its
    good content (good_value(), JSON, or good_bytes()), its bound and how it is read (read())."""

    name = 'file.json'
    bound = ''           # 'module:NAME' of its size bound; '' when its reader names none
    json = True          # its content is JSON: the JSON attacks change its value
    empty_is_damaged = True  # False: an empty file is no settings, as no file is
    cache = False        # Book AI's own cache: a file that reads as a valid one may be written anew

    def __init__(self, attacks: tuple[str, ...]):
        self.attacks = attacks

    def good_value(self, where: Path) -> Any:
        raise NotImplementedError

    def good_bytes(self, where: Path) -> bytes:
        return json.dumps(self.good_value(where), indent=1).encode()

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        made = ctx.scratch / 'made'
        made.mkdir(exist_ok=True)
        bound = bound_value(self.bound) if self.bound else None
        if attack == 'oversized':
            size = (bound + 1) if bound else UNBOUNDED_FILE
            return [Payload(f'a file of {size} bytes', ('sparse', size), bound or size)]
        if attack == 'not_a_file':
            return [Payload(variant, ('node', variant))]
        if attack == 'damaged':
            return [Payload(label, ('bytes', data)) for label, data in damaged_variants(self.good_bytes(made),
                                                                                          self.empty_is_damaged)]
        if attack == 'code':
            return [Payload(variant, ('code', variant))]
        if attack == 'crafted_image':
            data = crafted_image(variant)
            return [Payload(variant, ('image', data), len(data))]
        good = self.good_value(made)
        if attack == 'deep_json':
            return [Payload('JSON nested 100,000 levels', ('bytes', P.deep_in(good)))]
        if attack == 'many_values':
            data = P.tiny_values(min(bound or NO_BOUND_SIZE, NO_BOUND_SIZE) - 64 * 1024, head=b'{"x": [',
                                 tail=b'{}]}')
            return [Payload('millions of empty objects', ('bytes', data), len(data))]
        if attack == 'wrong_types':
            return [Payload(label, ('bytes', P.dumps(v))) for label, v in P.wrong_types(good, most=120)]
        if attack == 'control_chars':
            return [Payload('escapes in every text', ('bytes', P.dumps(P.strings_replaced(good, P.with_escapes))))]
        if attack == 'numbers':
            return [Payload(name, ('bytes', P.dumps(P.numbers_replaced(good, n)))) for name, n in P.BAD_NUMBERS.items()]
        raise ValueError(f'{attack} is not an attack on {type(self).__name__}')

    def path_in(self, where: Path) -> Path:
        return where / self.name

    def prepare(self, payload: Payload, ctx: Context, where: Path) -> dict:
        path = self.path_in(where)
        path.parent.mkdir(parents=True, exist_ok=True)
        what, value = payload.data
        self.before(where)
        if what == 'sparse':
            sparse(path, value)
        elif what == 'node':
            not_a_file(path, value)
        elif what == 'bytes':
            path.write_bytes(value)
        elif what == 'code':
            path.write_bytes(self.code_bytes(value, where))
        elif what == 'image':
            path.write_bytes(self.image_bytes(value, where))
        return {'path': str(path)}

    def before(self, where: Path) -> None:
        """What must be there besides the file (a book, a folder)."""

    def code_bytes(self, variant: str, where: Path) -> bytes:
        raise ValueError(f'no code variant {variant} for {type(self).__name__}')

    def image_bytes(self, data: bytes, where: Path) -> bytes:
        return data

    def use(self, handle: dict, ctx: Context, where: Path) -> Observed:
        return self.read(Path(handle['path']), where, ctx)

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        raise NotImplementedError

    def left(self, payload: Payload, handle: dict, where: Path, observed: Observed) -> list[str]:
        path = Path(handle['path'])
        what, value = payload.data
        out = []
        if (where / SENTINEL).exists():
            out.append(f'code from outside ran: {where / SENTINEL} was written')
        if what == 'bytes' and observed.ctx_attack in VALID_MAYBE and not observed.sentence:
            # a file that may be a valid one, read without a word: written anew it must hold what it held
            # the place made of the wrong type may be normalised when written anew (a date that is no
            # date becomes now): that is no loss; every other value must be as it was
            wrong = payload.label.split(' as ')[0].split('/')[0] if observed.ctx_attack == 'wrong_types' else ''
            if self.cache or bytes_kept(path, value) or values_kept(path, value, VALUES_CHANGED | {wrong}):
                return out
        if what == 'bytes' and not bytes_kept(path, value):
            out.append(f'the file was overwritten or removed, not set aside: nothing at {path} or beside it '
                       'holds its bytes')
        elif what == 'sparse' and not sparse_kept(path, value):
            out.append(f'the file of {value} bytes was overwritten or removed, not set aside')
        elif what == 'node' and not node_kept(path):
            out.append(f'what was at {path} ({value}) is gone, not set aside')
        return out


# attacks whose files may still be valid ones (wrong types where a value is optional, escapes in
# texts, odd numbers): read without a word, they may be written anew, keeping their values
VALID_MAYBE = ('wrong_types', 'control_chars', 'numbers')


VALUES_CHANGED = frozenset({'provider', 'gemini/api_key', 'format'})


def values_kept(path: Path, old: bytes, changed: frozenset = VALUES_CHANGED) -> bool:
    """Whether the JSON object now at path holds every value the old bytes held (but those a save
    changes: the setting saved, the key kept, the format a conversation is written in)."""
    try:
        before = json.loads(old)
        after = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    if not isinstance(before, dict) or not isinstance(after, dict):
        return False
    return all(same_value(v, after.get(k)) for k, v in before.items() if k not in changed)


def same_value(old: object, new: object) -> bool:
    """Whether new holds what old held: equal, or a text of it with its control characters made
    visible (core/printable.py: a name shown inert, ESC as \\x1b), which loses nothing."""
    if old == new:
        return True
    if isinstance(old, str) and isinstance(new, str):
        printable = plugin('core.printable')
        return new in (printable.inert(old), printable.one_line(old))
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(same_value(a, b) for a, b in zip(old, new))
    if isinstance(old, dict) and isinstance(new, dict):
        return old.keys() == new.keys() and all(same_value(v, new[k]) for k, v in old.items())
    return False


def relative(path: Path) -> str:
    """path (a .json file) as calibre's JSONConfig names a file: relative to calibre's config folder."""
    from calibre.utils.config import config_dir
    return os.path.relpath(str(path)[:-len('.json')], config_dir)


def crafted_image(name: str) -> bytes:
    from hostile.wire import crafted
    return crafted(name)


# Book AI's own files {{{

class SettingsFile(FileSurface):
    """bookai.json: read by the settings (prefs.private_config), then a setting saved."""

    name = 'bookai.json'
    bound = 'settings.prefs:LARGEST_SETTINGS_FILE'
    empty_is_damaged = False

    def good_value(self, where: Path) -> Any:
        return {'provider': 'anthropic', 'providers': {'anthropic': {'model': 'claude-kept', 'read_timeout': 90.0},
                                                       'ollama': {'base_url': 'http://127.0.0.1:11434'}},
                'book_fields': ['tags', 'series'], 'cover_templates': {'title': '{title}', 'authors': '',
                                                                        'series': ''},
                'cover_undo_days': 30, 'library_actions': [{'name': 'mine', 'label': 'Mine', 'template': 'Why {title}?',
                                                            'enabled': True}]}

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        prefs = plugin('settings.prefs')
        config = prefs.private_config(relative(path), prefs.PREF_KINDS)
        config.defaults.update(prefs.DEFAULTS)
        told = config.problem
        shown = [told]
        from calibre_plugins.bookai.providers.registry import get_provider
        for name, settings in config['providers'].items():
            try:
                shown.append(get_provider(name, settings=dict(settings)).config.wrong_setting())
            except KeyError:
                pass
        config['provider'] = 'ollama'  # a setting saved: the file is set aside first when damaged
        return Observed(sentence=told, shown=shown + [config.problem])


class KeysFile(FileSurface):
    """bookai-secrets.json (the keys, where the system has no keyring): a key read, then one kept."""

    name = 'bookai-secrets.json'
    bound = 'settings.prefs:LARGEST_SETTINGS_FILE'
    empty_is_damaged = False

    def good_value(self, where: Path) -> Any:
        return {'openai/api_key': 'sk-kept-key-0123456789', 'anthropic/api_key': 'sk-ant-kept-0123456789'}

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        secrets = plugin('settings.secrets')
        from calibre_plugins.bookai.settings.keyring import Unavailable

        def none():
            raise Unavailable('no keyring in the battery')
        store = secrets.SecretStore(relative(path), none)
        key = store.get('openai', 'api_key')
        told = store.config.problem
        store.set('gemini', 'api_key', 'AIza-new-key-0123456789')
        return Observed(sentence=told, shown=[told, store.config.problem], facts={'key found': bool(key)})


class HistoryFile(FileSurface):
    """One conversation of the History: listed (History.summaries), opened (History.load), then saved."""

    name = 'history/lib/conv-1.json'
    may_raise = ('calibre_plugins.bookai.', 'builtins.ValueError')  # load(): a ValueError in words

    def good_value(self, where: Path) -> Any:
        from calibre_plugins.bookai.conversation.conversation import Conversation
        from calibre_plugins.bookai.core.messages import Answer, Done, Usage, WebLink, Cost
        from calibre_plugins.bookai.conversation.books import BookInfo
        conv = Conversation((BookInfo(1, 'A book', ('An author',)),), 'lib', conversation_id='conv-1', created=1.0)
        conv.ask('What happens?')
        answer = Answer()
        answer.add(Done('model-x', 'stop', Usage(12, 7, None, 2, Cost(0.0012), 1),
                        (WebLink('A page', 'https://example.org/'),)))
        answer.text_parts.append('It rains.')
        conv.finish(answer, 'openai')
        return json.loads(json.dumps(conv.as_dict()))

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        from calibre_plugins.bookai.conversation.conversation import cache_text, usage_text
        from calibre_plugins.bookai.conversation.history import History
        h = History(str(where / 'history'))
        listed = h.summaries('lib')
        shown = [t for s in listed for t in (s.title, s.provider, s.model)]
        said = history_said(h)
        try:
            conv = h.load('lib', 'conv-1')
        except ValueError as e:
            said.append(str(e))
            conv = None
        seen = Observed(sentence=' '.join(said), shown=shown)
        if conv is not None:
            seen.shown += [conv.title, conv.model] + [t for turn in conv.turns for t in (
                turn.model, usage_text(turn.usage) if turn.usage else '', *(w.title for w in turn.web_links))]
            from hostile.wire import usage_numbers
            used = [t.usage for t in conv.turns if t.usage is not None]
            seen.facts['usage'] = usage_numbers(used[0]) if used else {}
            seen.facts['figures'] = [usage_text(u) for u in used] + [cache_text(u) for u in used]
            h.save(conv)  # saved again, as the window does after a question: never over a damaged file
        else:
            seen.facts['listed'] = len(listed)
        return seen


def history_said(h: Any) -> list[str]:
    """What the reader is told of a History (conversation.history.History) once it was read: a
    folder that cannot be, and the damaged files set aside, as the History window says it
    (main_window/history_window.py)."""
    said = [h.unreadable] if h.unreadable else []
    if h.damaged:
        said.append('Some saved conversations could not be read. They were kept, set aside, as: '
                    + ', '.join(h.damaged))
    return said


class HistorySearched(HistoryFile):
    """The same conversation searched (History.search, as the History window's search box and
    "history search" do), then exported by its id as Markdown and as HTML (conversation/export.py,
    as "history export" and the window's Export… do): every text of both documents is shown."""

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        from calibre_plugins.bookai.conversation.export import export
        from calibre_plugins.bookai.conversation.history import History
        h = History(str(where / 'history'))
        found = h.search('lib', 'rains book')
        shown = [t for s in found for t in (s.title, s.model, *s.books)]
        said = history_said(h)
        try:
            conv = h.load('lib', 'conv-1')
        except ValueError as e:  # as "history export" says it (cli.py)
            said.append(str(e))
            conv = None
        seen = Observed(sentence=' '.join(said), shown=shown, facts={'found': len(found)})
        if conv is not None:
            seen.shown += [export([conv], 'md'), export([conv], 'html')]
        return seen


class ModelsCache(FileSurface):
    """A provider's cached model list (providers/models.py), read, then written anew."""

    name = 'models/openrouter-0123456789ab.json'
    bound = 'core.limits:MAX_MODELS_CACHE_BYTES'
    quiet = True
    cache = True

    def good_value(self, where: Path) -> Any:
        models = plugin('providers.models')
        path = where / 'good-models.json'
        m = models.Model('vendor/model-x', 'Vendor: Model X', 1700000000.0, 8192, prices=(1.0, 2.0),
                         description='A model.', pricing=(('prompt', 1e-06), ('completion', 2e-06)))
        models.write_models_cache(str(path), [m], 'https://openrouter.ai/api/v1')
        value = json.loads(path.read_text())
        value['fetched'] = time.time()
        return value

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        models = plugin('providers.models')
        found = models.read_models_cache(str(path))
        seen = Observed(facts={'count': None if found is None else len(found)})
        if found:
            from hostile.wire import model_prices, shown_prices
            seen.shown = [t for m in found for t in (m.id, m.name, m.description)]
            seen.facts['prices'] = [p for m in found for p in model_prices(m)]
            seen.facts['numbers'] = [n for m in found for n in (m.created, m.context_length)]
            seen.facts['figures'] = [line for m in found for line in shown_prices(m)]
        if found is None:  # asked for again, and cached: never over a damaged file
            models.write_models_cache(str(path), [models.Model('fresh')], 'https://openrouter.ai/api/v1')
        return seen


class ToolSupportFile(FileSurface):
    """Which models refused tools (providers/tool_support.py), read when a question may offer
    tools, then a refusal kept: a cache, so a damaged one is set aside silently (tools are only
    offered again) and a new one begun, never over it."""

    name = 'tool-support.json'
    bound = 'providers.tool_support:MAX_FILE_BYTES'
    quiet = True
    cache = True

    def good_value(self, where: Path) -> Any:
        tool_support = plugin('providers.tool_support')
        path = where / 'good-tool-support.json'
        tool_support.remember_refusal(tool_provider(), 'qwen', str(path), now=1_700_000_000.0)
        return json.loads(path.read_text())

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        tool_support = plugin('providers.tool_support')
        kept = tool_support.read(str(path))
        seen = Observed(facts={'count': len(kept), 'numbers': list(kept.values())})
        seen.facts['refused'] = tool_support.refused('openai_compatible', 'http://127.0.0.1:8080/v1', 'qwen',
                                                     str(path), now=1_700_000_100.0)
        tool_support.remember_refusal(tool_provider(), 'other', str(path))
        return seen


def tool_provider() -> Any:
    registry = plugin('providers.registry')
    return registry.get_provider('openai_compatible', settings={'base_url': 'http://127.0.0.1:8080/v1',
                                                                'model': 'qwen'})


class TextCacheFile(FileSurface):
    """A book's cached text (grounding/cache.py), read for the book it was written for."""

    name = 'text/lib/1.EPUB.bookai'
    json = False
    quiet = True
    cache = True
    variants_of = {'code': ('pickle',)}

    def before(self, where: Path) -> None:
        book = where / 'book.epub'
        if not book.exists():
            make_epub(book, ['<p>The good chapter.</p>', '<p>Another.</p>'])
            os.utime(book, (1_700_000_000, 1_700_000_000))

    def good_bytes(self, where: Path) -> bytes:
        self.before(where)
        cache = plugin('grounding.cache')
        extract = plugin('grounding.extract')
        c = cache.TextCache(str(where / 'good-text'))
        c.text_of('lib', 1, 'EPUB', str(where / 'book.epub'), read=extract.read_epub)
        return Path(c.file_of('lib', 1, 'EPUB')).read_bytes()

    def code_bytes(self, variant: str, where: Path) -> bytes:
        cache = plugin('grounding.cache')
        header = cache.MAGIC + json.dumps(cache.stamp(str(where / 'book.epub'))).encode('ascii') + b'\n'
        return header + zlib.compress(P.code_pickle(where / SENTINEL))

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        cache = plugin('grounding.cache')
        c = cache.TextCache(str(where / 'text'))
        got = c.get('lib', 1, 'EPUB', str(where / 'book.epub'))
        if got is None:  # read again and kept: never over a damaged file
            extract = plugin('grounding.extract')
            c.text_of('lib', 1, 'EPUB', str(where / 'book.epub'), read=extract.read_epub)
        return Observed(facts={'cached': got is not None})


class LibraryVectorsFile(FileSurface):
    """A library's books' vectors for search by meaning (library_search/vectors.py), read for a
    search, then written anew by an update: a cache of Book AI's, so a damaged file is set aside
    without a word (the index is made again) and never written over."""

    name = 'library-vectors/lib.vectors'
    bound = 'library_search.vectors:MAX_FILE_BYTES'
    json = False
    quiet = True
    cache = True
    variants_of = {'code': ('pickle',)}

    @staticmethod
    def good_index() -> Any:
        vectors = plugin('library_search.vectors')
        index = vectors.BookVectors(4, 'openai_compatible/tiny-embed')
        for book_id, v in ((1, [1.0, 0.0, 0.0, 0.5]), (2, [0.0, 1.0, 0.2, 0.0]), (3, [-1.0, 0.3, 0.0, 0.0])):
            index.put(book_id, v, vectors.Stamp(1_700_000_000.0 + book_id, f'{book_id:032x}'))
        return index

    def good_bytes(self, where: Path) -> bytes:
        return self.good_index().to_bytes()

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        if attack == 'numbers':  # bad numbers inside a file whose digest is right: only its checks stop them
            out = []
            for name, n in P.BAD_NUMBERS.items():
                for where in ('scales', 'modified', 'ids', 'header'):
                    index = self.good_index()
                    if where == 'header':
                        data = index.to_bytes()
                        head, _nl, body = data[len(b'BOOKAI-VECTORS\n'):].partition(b'\n')
                        header = json.loads(head)
                        header['count'] = n
                        data = b'BOOKAI-VECTORS\n' + P.dumps(header) + b'\n' + body
                    else:
                        try:
                            getattr(index, where)[0] = n
                        except (OverflowError, TypeError):  # an array that cannot hold it: the raw bytes
                            continue
                        data = index.to_bytes()
                    out.append(Payload(f'{name} in its {where}', ('bytes', data)))
            return out
        return super().variants(attack, variant, ctx)

    def code_bytes(self, variant: str, where: Path) -> bytes:
        import hashlib
        body = P.code_pickle(where / SENTINEL)
        header = {'kind': 'bookai-library-vectors', 'version': 1, 'model': 'm', 'dimension': 4, 'count': 1,
                  'sha256': hashlib.sha256(body).hexdigest()}
        return b'BOOKAI-VECTORS\n' + json.dumps(header).encode() + b'\n' + body

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        vectors = plugin('library_search.vectors')
        files = vectors.VectorFiles(str(where / 'library-vectors'))
        index = files.read('lib')
        seen = Observed(facts={'count': len(index) if index is not None else None})
        if index is not None:
            seen.facts['numbers'] = [*index.scales, *index.modified, *index.ids,
                                     *(score for _b, score in index.search([1.0, 0.0, 0.0, 0.0], 3))]
        else:
            index = vectors.BookVectors(4, 'openai_compatible/tiny-embed')
        index.put(9, [0.0, 0.0, 1.0, 0.0])
        files.write('lib', index)  # an update: never over a damaged file
        return seen


class XRayCacheFile(FileSurface):
    """A book's X-Ray kept (conversation/xray.py), read for its book, provider and model; then made
    again where it could not be read (never over the file set aside)."""

    bound = 'conversation.xray:MAX_CACHE_BYTES'
    quiet_for = ('wrong_types', 'control_chars', 'numbers')  # a value of the wrong kind may be a valid file's
    cache = True

    @staticmethod
    def key() -> Any:
        return plugin('conversation.xray').XRayKey('lib:1', 'ollama', 'tiny')  # a short name: a socket's path is short

    def path_in(self, where: Path) -> Path:
        return Path(plugin('conversation.xray').XRayCache(str(where / 'x')).file_of(self.key()))

    def record(self) -> Any:
        xr = plugin('conversation.xray')
        return xr.ChapterRecord(1, True, '0' * 64, xr.now(), (
            xr.Mention('Elizabeth', 'character', ('Lizzy',), 'The second daughter.', (3, 4)),))

    def good_value(self, where: Path) -> Any:
        cache = plugin('conversation.xray').XRayCache(str(where / 'good-xray'))
        cache.keep(self.key(), [self.record()])
        return json.loads(Path(cache.file_of(self.key())).read_text())

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        cache = plugin('conversation.xray').XRayCache(str(where / 'x'))
        records, problem = cache.records(self.key())
        mentions = [m for r in records for m in r.mentions]
        seen = Observed(sentence=problem, shown=[t for m in mentions for t in (m.name, *m.other_names, m.description)],
                        facts={'records': len(records),
                               'numbers': [r.chapter for r in records] + [n for m in mentions for n in m.passages]})
        if problem or not records:  # made again: never over a damaged file
            cache.keep(self.key(), [self.record()])
        return seen


class UndoEntry(FileSurface):
    """The newest of a book's covers kept for Undo (covers/undo.py): what Undo would put back."""

    name = 'undo/lib/1/1700000000000000000.cover'
    bound = 'covers.undo:MAX_ENTRY_BYTES'
    json = False
    quiet = True

    def good_bytes(self, where: Path) -> bytes:
        undo = plugin('covers.undo')
        u = undo.CoverUndo(str(where / 'good-undo'))
        name = u.keep('lib', 1, images.png(16, 24))
        return (where / 'good-undo' / 'lib' / '1' / name).read_bytes()

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        if attack == 'oversized':  # the header says the cover is larger than the bound, and it is
            bound = bound_value(self.bound) + 1
            undo = plugin('covers.undo')
            head = undo.MAGIC + json.dumps({'had_cover': True, 'size': bound, 'sha256': '0' * 64,
                                            'when': 1.0}).encode() + b'\n'
            return [Payload(f'an entry of {bound} bytes', ('header and zeros', (head, bound)), bound)]
        return super().variants(attack, variant, ctx)

    def prepare(self, payload: Payload, ctx: Context, where: Path) -> dict:
        if payload.data[0] == 'header and zeros':
            head, size = payload.data[1]
            path = self.path_in(where)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, 'wb') as f:
                f.write(head)
                f.truncate(len(head) + size)
            return {'path': str(path)}
        return super().prepare(payload, ctx, where)

    def left(self, payload: Payload, handle: dict, where: Path, observed: Observed) -> list[str]:
        if payload.data[0] == 'header and zeros':
            head, size = payload.data[1]
            return [] if sparse_kept(Path(handle['path']), len(head) + size) else [
                'the entry was removed, not set aside']
        return super().left(payload, handle, where, observed)

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        undo = plugin('covers.undo')
        u = undo.CoverUndo(str(where / 'undo'))
        kept = u.last('lib', 1)
        return Observed(facts={'kept': None if kept is None else len(kept.data or b'')})


class StagedManifest(FileSurface):
    """The manifest of covers made for many books, waiting for review (covers/bulk.py load_run)."""

    name = 'run/manifest.json'
    bound = 'covers.bulk:MAX_MANIFEST_BYTES'

    def before(self, where: Path) -> None:
        (where / 'run').mkdir(parents=True, exist_ok=True)
        (where / 'run' / '1.png').write_bytes(images.png(16, 24))

    def good_value(self, where: Path) -> Any:
        return {'version': 1, 'library_id': 'lib', 'library_path': '/books/library', 'started': 1700000000.0,
                'finished': True, 'outcomes': [
                    {'book_id': 1, 'title': 'A book', 'status': 'made', 'file': '1.png', 'error': '',
                     'cost': {'amount': 0.04, 'currency': 'USD', 'source': 'reported', 'price_date': ''},
                     'model': 'image-model-x'},
                    {'book_id': 2, 'title': 'Another', 'status': 'failed', 'file': '',
                     'error': 'The service refused.', 'cost': None, 'model': ''}]}

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        bulk = plugin('covers.bulk')
        run = bulk.load_run(str(path.parent))
        seen = Observed()
        if run is not None:
            seen.shown = [run.library_path] + [t for o in run.outcomes for t in (o.title, o.error, o.model)]
            seen.facts['usage'] = {}
            seen.facts['numbers'] = [run.started]
            seen.facts['prices'] = [o.cost.amount for o in run.outcomes if o.cost is not None]
        return seen


class StagedImage(FileSurface):
    """A cover staged by a many-books run (STAGING/<book id>.png), decoded as the review and Apply
    decode it (core.images.decode_images: read bounded, checked, decoded in calibre's worker)."""

    name = 'run/1.png'
    bound = 'core.limits:MAX_IMAGE_BYTES'
    json = False

    def good_bytes(self, where: Path) -> bytes:
        return images.png(16, 24)

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        from hostile.registry import DISPLAY_DECODER
        images_ = plugin(DISPLAY_DECODER.partition(':')[0])
        (done,) = images_.decode_images([str(path)], ['The new cover'], cover=True, side=256)
        return Observed(sentence=done.problem if done is not None else '',
                        facts={'decoded': None if done is None or done.problem else (done.width, done.height)})

# }}}


# calibre's files {{{

class CalibreFile(FileSurface):
    """One of calibre's settings files, read for the offer to carry calibre's AI settings over
    (from_calibre.read), then carried over as import-calibre --yes does (carry_over)."""

    bound = 'settings.prefs:LARGEST_SETTINGS_FILE'
    empty_is_damaged = False
    variants_of = {'code': ('python template', 'backtracking regex', 'looping template', 'format attacks')}

    def __init__(self, name: str, attacks: tuple[str, ...]):
        super().__init__(attacks)
        self.name = f'calibre/{name}'
        self.file = name

    def good_value(self, where: Path) -> Any:
        return json.loads((CALIBRE_FILES / self.file).read_text('utf-8'))

    def before(self, where: Path) -> None:
        folder = where / 'calibre'
        folder.mkdir(parents=True, exist_ok=True)
        for name in ('ai.json', 'gui.json', 'viewer-webengine.json'):
            if name != self.file and not (folder / name).exists():
                shutil.copy(CALIBRE_FILES / name, folder / name)

    def code_bytes(self, variant: str, where: Path) -> bytes:
        good = self.good_value(where)
        template = {'python template': P.python_template(where / SENTINEL),
                    'backtracking regex': P.BACKTRACKING_TEMPLATE, 'looping template': P.LOOPING_TEMPLATE,
                    'format attacks': P.FORMAT_ATTACKS[0]}[variant]
        cover = dict(good.get('llm-cover-generation') or {})
        cover.update(include_title=True, title_template=template, authors_template=template)
        good['llm-cover-generation'] = cover
        actions = good.get('llm_book_quick_actions') or {'custom_actions': {}}
        actions.setdefault('custom_actions', {})['Code'] = {'disabled': False, 'title': 'Code',
                                                           'prompt_template': template}
        good['llm_book_quick_actions'] = actions
        return json.dumps(good).encode()

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        settings = plugin('from_calibre.carry_over')
        found = settings.read(str(where / 'calibre'))
        seen = Observed(sentence=' '.join(found.problems), shown=found.summary().splitlines() + found.problems)
        failed = settings.carry_over(found)  # import-calibre --yes
        seen.shown += list(failed or ())
        prefs = plugin('settings.prefs').plugin_prefs()
        for name, values in prefs['providers'].items():
            for header in values.get('headers', ()) if isinstance(values, dict) else ():
                seen.shown.append(': '.join(map(str, header)) if isinstance(header, (list, tuple)) else str(header))
        if ctx.attack == 'code':  # the command that promises to send nothing: cover --prompt-only
            seen.shown.append(prompt_only(where))
        return seen


def prompt_only(where: Path) -> str:
    """The cover's prompt as `cover --prompt-only` makes it, with the templates carried over."""
    from calibre.ebooks.metadata.book.base import Metadata
    prompt = plugin('covers.prompt')
    mi = Metadata(P.BACKTRACKING_TITLE, ['An Author'])
    return prompt.cover_prompt(mi, prompt.choices_from_prefs())


def make_library_db(path: Path, value: str | None = '["#mood", "#notes"]', preferences: str = '') -> None:
    """A library's metadata.db as Book AI reads it: a preferences table (or what preferences
    says it is) and a library_id table."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    conn = sqlite3.connect(path)
    try:
        conn.execute('CREATE TABLE library_id (id INTEGER PRIMARY KEY, uuid TEXT NOT NULL)')
        conn.execute("INSERT INTO library_id (uuid) VALUES ('0b1c2d3e-lib')")
        if preferences:
            conn.execute(preferences)
        else:
            conn.execute('CREATE TABLE preferences (id INTEGER PRIMARY KEY, key TEXT NOT NULL, val TEXT NOT NULL)')
            if value is not None:
                conn.execute('INSERT INTO preferences (key, val) VALUES (?, ?)',
                             ('llm-book-allowed-custom-fields', value))
        conn.commit()
    finally:
        conn.close()


KEY = "'llm-book-allowed-custom-fields'"
DB_VIEWS = {
    'oversized': {
        'a view of a 900 MB blob': f'CREATE VIEW preferences AS SELECT {KEY} AS key, zeroblob(900000000) AS val',
        'a view of a 900 MB string': f"CREATE VIEW preferences AS SELECT {KEY} AS key, "
                                     "printf('%.*c', 900000000, 'x') AS val",
    },
    'endless': {
        'a recursive view without end': f'CREATE VIEW preferences AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL '
                                        f'SELECT i + 1 FROM n) SELECT {KEY} AS key, i AS val FROM n WHERE i < 0',
    },
}


class LibraryDatabase(FileSurface):
    """A library's metadata.db, read for the custom fields calibre's AI may send (from_calibre:
    library_prefs): the library named by gui.json's library_usage_stats or on the command line."""

    name = 'library/metadata.db'
    json = False
    empty_is_damaged = False   # an empty file is an empty database: no library, said as none
    quiet_for = ('not_a_file',)  # what is not a file is no library: skipped, as a library that moved

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        if attack in DB_VIEWS:
            return [Payload(label, ('db', ('', sql))) for label, sql in DB_VIEWS[attack].items()]
        if attack == 'wrong_types':
            return [Payload(label, ('db', (value, ''))) for label, value in (
                ('not JSON', '{not json'), ('a number', '5'), ('a list of numbers', '[1, 2]'),
                ('an object', '{"#mood": 1}'), ('null', 'null'), ('text over its bound', '["' + 'x' * 100_000 + '"]'))]
        if attack == 'deep_json':
            return [Payload('JSON nested 9,000 levels', ('db', ('[' * 9000 + ']' * 9000, '')))]
        if attack == 'control_chars':
            return [Payload('escapes in the names', ('db', (json.dumps(['#mood' + P.ESCAPES]), '')))]
        return super().variants(attack, variant, ctx)

    def good_bytes(self, where: Path) -> bytes:
        path = where / 'good.db'
        make_library_db(path)
        return path.read_bytes()

    def prepare(self, payload: Payload, ctx: Context, where: Path) -> dict:
        if payload.data[0] == 'db':
            value, sql = payload.data[1]
            make_library_db(self.path_in(where), value or None, sql)
            (where / 'calibre').mkdir(exist_ok=True)
            return {'path': str(self.path_in(where))}
        (where / 'calibre').mkdir(exist_ok=True)
        return super().prepare(payload, ctx, where)

    def left(self, payload: Payload, handle: dict, where: Path, observed: Observed) -> list[str]:
        if payload.data[0] == 'db':
            return []
        return super().left(payload, handle, where, observed)

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        settings = plugin('from_calibre.carry_over')
        found = settings.read(str(where / 'calibre'), libraries=[str(path.parent)])
        # told: what could not be read, and each setting not carried over and why (the offer and
        # import-calibre show both)
        said = found.problems + [f'{i.setting}: {i.why_not}' for i in found.items if not i.carried]
        return Observed(sentence=' '.join(said), shown=found.summary().splitlines() + found.problems)


class ViewerAnnotations(FileSurface):
    """The E-book viewer's annotations of a book (its last-read place): the reader's place."""

    name = 'config/viewer/annots/book.json'
    bound = 'grounding.reading_position:MAX_ANNOTATIONS_BYTES'
    quiet = True

    def before(self, where: Path) -> None:
        book = where / 'book.epub'
        if not book.exists():
            make_epub(book, ['<p>The good chapter.</p>', '<p>Another.</p>'])

    def good_value(self, where: Path) -> Any:
        return [{'type': 'last-read', 'pos_type': 'epubcfi', 'pos': 'epubcfi(/6/4!/4/2/1:3)',
                 'timestamp': '2025-01-01T00:00:00.000Z'},
                {'type': 'highlight', 'uuid': 'h-1', 'highlighted_text': 'good', 'notes': 'A note.'}]

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        rp = plugin('grounding.reading_position')
        extract = plugin('grounding.extract')
        book_path = str(where / 'book.epub')
        rp.viewer_annotations_file = lambda p: str(path)
        book = extract.read_epub(book_path)
        place = rp.saved_position(book_path, book)
        return Observed(facts={'place': place, 'numbers': [] if place is None else [place]})

# }}}


class LastReadFile(FileSurface):
    """When and where books were last read in the viewer (conversation/last_read.py), read when a
    book is opened for the offer of a recap; a cache of Book AI's: a damaged one is set aside,
    silently (the offer is only not made), and a new one begun, never over it."""

    name = 'last-read.json'
    bound = 'conversation.last_read:MAX_FILE_BYTES'
    cache = True
    quiet = True

    def good_value(self, where: Path) -> Any:
        last_read = plugin('conversation.last_read')
        record = last_read.LastReadRecord(str(where / 'good-last-read.json'))
        record.put(last_read.book_key('lib', 1, 'EPUB', ''), 'epubcfi(/6/4!/4/2/1:0)', 1_700_000_000.0)
        return json.loads(Path(record.path).read_text(encoding='utf-8'))

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        last_read = plugin('conversation.last_read')
        record = last_read.LastReadRecord(str(path))
        books = record.read()
        seen = Observed(facts={'count': len(books)})
        seen.shown = [b.cfi for b in books.values()]
        seen.facts['numbers'] = [b.seen for b in books.values()]
        offer = last_read.recap_offer(next(iter(books.values()), None), 1_800_000_000.0, 7)
        seen.shown += [offer.cfi] if offer is not None else []
        record.put(last_read.book_key('lib', 2, 'EPUB', ''), 'epubcfi(/6/8!/4/2/1:0)')
        return seen


class MetadataUndoFile(FileSurface):
    """The values AI metadata replaced, kept for Undo (metadata/changes.py), read when Undo is asked
    for: the reader's own data, so a file holding anything Book AI does not write there is set
    aside whole and nothing of it is put back (quiet: Undo then says there is nothing to undo)."""

    name = 'metadata-undo/lib.json'
    bound = 'metadata.changes:MAX_FILE_BYTES'
    quiet = True

    def good_value(self, where: Path) -> Any:
        changes = plugin('metadata.changes')
        undo = changes.MetadataUndo(str(where / 'good-undo'))
        undo.keep('lib', [{'book': 1, 'field': 'tags', 'before': ['Manual'], 'after': ['Manual', 'Ebooks']},
                          {'book': 1, 'field': '#mood', 'before': None, 'after': 'Calm'}])
        return json.loads(Path(undo.path('lib')).read_text(encoding='utf-8'))

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        changes = plugin('metadata.changes')
        sets = changes.MetadataUndo(str(path.parent)).sets('lib')
        seen = Observed(facts={'count': sum(len(s) for s in sets)})
        seen.shown = [str(c['before']) + str(c['after']) for s in sets for c in s]
        return seen


class MetadataKeptFile(FileSurface):
    """The proposals of AI metadata kept for later (metadata/kept.py), read when the review opens:
    only ever written through metadata.changes.apply, but a file holding anything Book AI does not
    write there is set aside whole and nothing of it is shown (quiet: the review then says nothing
    is waiting)."""

    name = 'metadata-kept/lib.json'
    bound = 'metadata.kept:MAX_FILE_BYTES'
    quiet = True

    def good_value(self, where: Path) -> Any:
        changes, kept = plugin('metadata.changes'), plugin('metadata.kept')
        store = kept.KeptProposals(str(where / 'good-kept'))
        store.add('lib', [changes.Proposal('lib', 1, 'tags', 'Tags', ('Manual',), ('Manual', 'Ebooks'), ('Ebooks',),
                                           ('Tags: one value was a sentence, not a tag: left out.',)),
                          changes.Proposal('lib', 1, '#level', 'Reading level', None, 7)], {1: 'The Guide'})
        return json.loads(Path(store.path('lib')).read_text(encoding='utf-8'))

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        kept = plugin('metadata.kept')
        review = kept.KeptProposals(str(path.parent)).review('lib')
        seen = Observed(facts={'count': len(review.proposals)})
        seen.shown = [kept.shown(p.key, v, p.new_tags) for p in review.proposals for v in (p.old, p.new)]
        seen.shown += [p.label for p in review.proposals] + [n for p in review.proposals for n in p.notes]
        seen.shown += list(review.titles.values())
        seen.facts['numbers'] = [p.new for p in review.proposals if isinstance(p.new, (int, float))]
        return seen


class SummariesFile(FileSurface):
    """A book's chapter summaries (conversation/summaries.py), read for a recap, said when set aside,
    then a summary kept: written anew, never over a damaged file."""

    name = 'summaries/lib/1.EPUB.json'
    bound = 'conversation.summaries:MAX_FILE_BYTES'
    cache = True

    def good_value(self, where: Path) -> Any:
        summaries = plugin('conversation.summaries')
        cache = summaries.SummaryCache(str(where / 'good-summaries'))
        key = summaries.BookKey('lib', 1, 'EPUB')
        cache.write(key, [summaries.Summary('openai_compatible/tiny', 1, 'Chapter 1', 1, 3, True, 900, '0' * 32,
                                            'Elizabeth meets Mr Darcy at the ball [2].', 1_700_000_000.0)])
        return json.loads(Path(cache.file_of(key)).read_text(encoding='utf-8'))

    def read(self, path: Path, where: Path, ctx: Context) -> Observed:
        summaries = plugin('conversation.summaries')
        cache = summaries.SummaryCache(str(where / 'summaries'))
        key = summaries.BookKey('lib', 1, 'EPUB')
        kept = summaries.BookSummaries(cache, key)
        found = kept.summaries
        seen = Observed(summaries.damaged_notice(cache), facts={'count': len(found)})
        seen.shown = [t for s in found for t in (s.text, s.title, s.model)]
        seen.facts['numbers'] = [n for s in found for n in (s.chapter, s.first, s.last, s.end, s.made)]
        kept.keep(summaries.Summary('openai_compatible/tiny', 2, 'Chapter 2', 4, 6, True, 2000, '1' * 32,
                                    'A new summary [5].', 1_800_000_000.0))
        return seen
