# License: GPLv3 Copyright: the Book AI developers
"""A grep-like scan of plugin/ for the functions that read outside bytes.

Every function (a module's, a class's method; a nested function counts as the function it is
in) whose body does something that takes bytes from outside Book AI is a reader: it opens a
file to read it, reads a response or a socket, parses JSON, XML, a zip, a pickle or a
database, decodes an image or base64, runs a calibre template or a worker. The markers below
are those operations, as the code spells them; test_registry.py requires each reader found to
be accounted for in registry.py, so a new surface is red until it is registered.

Names are 'module:Qualified.name', the module relative to plugin/ ('providers.connection:
Connection.json_answer').
"""

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from helpers.project import PROJECT

PLUGIN = PROJECT / 'plugin'

# calls that take outside bytes, by the name called (the last part of a dotted name) and, where
# the name alone says too little, the object it is called on ('' for any, or a bare name)
MARKERS = {
    # files
    'open': {'', 'io', 'os', 'codecs'},            # (builtin open: only when it reads, see reads_file())
    'fdopen': {'os'},
    'read_regular': {''}, 'read_settings_file': {''}, 'read_text': {''}, 'read_bytes': {''},
    'readline': {'f'},
    # parsers
    'loads': {'json', 'pickle', 'marshal'}, 'load': {'json', 'pickle'},
    'load_json': {'', 'limits'},
    'connect': {'sqlite3'},
    'ZipFile': {'zipfile', ''},
    'fromstring': {'etree', 'ET', 'html5lib', ''}, 'parse': {'etree', 'ET', 'html5_parse'},
    'XMLParser': {'etree'}, 'HTMLParser': {'etree'},
    'decompress': {'zlib', 'bz2', 'lzma'},
    'a2b_base64': {'binascii'}, 'b64decode': {'base64'},
    # the network
    'read_all': {''}, 'chunks': {'response', 'self'}, 'recv': {''}, 'urlopen': {''},
    'getresponse': {''},
    # images
    'image_from_bytes': {''}, 'image_from_base64': {''}, 'sniff': {''}, 'decoded_base64': {''},
    'image_from_data': {''}, 'loadFromData': {''}, 'QImage': {''}, 'QImageReader': {''},
    # code: templates, workers
    'SafeFormat': {''}, 'safe_format': {''}, 'html2text': {''}, 'fork_job': {''},
    # calibre's own stores of the reader's data, read for Book AI
    'get_session_pref': {''}, 'cover': {'db'},
    # the stream decoders, fed a response's bytes
    'feed': {'decoder'},
}

# functions that take outside values already parsed, by their names: a provider's readings of its
# service's answers, and what reads a saved file's values back
NAMES = ('read_stream', 'parse_', 'from_dict', '_from_dict', 'image_answer', 'model_of', 'cited_pages')


def named_reader(name: str) -> str:
    """The name rule a function's name meets ('parse_', 'read_stream'...), or ''."""
    for rule in NAMES:
        if name == rule or (rule.endswith('_') and name.startswith(rule)) or (
                rule.startswith('_') and name.endswith(rule)) or name.endswith(rule):
            return f'def {rule}'
    return ''


def called_name(call: ast.Call) -> tuple[str, str]:
    """(name called, the bare name it is called on or '') for a call."""
    f = call.func
    if isinstance(f, ast.Name):
        return f.id, ''
    if isinstance(f, ast.Attribute):
        base = f.value
        if isinstance(base, ast.Name):
            return f.attr, base.id
        if isinstance(base, ast.Attribute):
            return f.attr, base.attr
        return f.attr, ''
    return '', ''


def reads_file(call: ast.Call) -> bool:
    """Whether a call of open() reads: its mode (second argument or mode=) says r, or is not given."""
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == 'mode'), None)
    if mode is None:
        return call.func.attr != 'fdopen' if isinstance(call.func, ast.Attribute) else True
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return 'r' in mode.value or '+' in mode.value
    return True  # a mode worked out at run time: counted


def marker(call: ast.Call) -> str:
    """The marker a call is ('json.loads', 'open'...), or ''."""
    name, owner = called_name(call)
    owners = MARKERS.get(name)
    if owners is None:
        return ''
    if '' not in owners and owner not in owners:
        return ''
    if name == 'QImage' and not call.args:  # an empty image, made of nothing
        return ''
    if name in ('open', 'fdopen') and owner in ('', 'io', 'codecs', 'os') and not reads_file(call):
        return ''
    if name == 'open' and owner not in ('', 'io', 'os', 'codecs'):
        return ''
    return f'{owner}.{name}' if owner else name


@dataclass(frozen=True)
class Reader:
    name: str              # 'module:Qual.name'
    markers: tuple[str, ...]
    line: int


def module_name(path: Path, root: Path = PLUGIN) -> str:
    rel = path.relative_to(root).with_suffix('')
    parts = list(rel.parts)
    if parts[-1] == '__init__':
        parts = parts[:-1]
    return '.'.join(parts)


def functions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """(qualified name, node) of every module-level function and method (nested ones are part of theirs)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            yield from ((f'{node.name}.{n}', f) for n, f in functions_of_class(node))


def functions_of_class(cls: ast.ClassDef) -> Iterator[tuple[str, ast.AST]]:
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            yield from ((f'{node.name}.{n}', f) for n, f in functions_of_class(node))


def scan(root: Path = PLUGIN) -> tuple[dict[str, Reader], set[str]]:
    """(the readers found, by name; the names of every function of the plugin)."""
    readers, every = {}, set()
    for path in sorted(root.rglob('*.py')):
        module = module_name(path, root)
        tree = ast.parse(path.read_text('utf-8'), str(path))
        for qual, node in functions(tree):
            name = f'{module}:{qual}'
            every.add(name)
            found = {m for n in ast.walk(node) if isinstance(n, ast.Call) and (m := marker(n))}
            if rule := named_reader(qual.rpartition('.')[2]):
                found.add(rule)
            found = sorted(found)
            if found:
                readers[name] = Reader(name, tuple(found), node.lineno)
    return readers, every
