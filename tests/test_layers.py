# License: GPLv3 Copyright: the Book AI developers
"""The layout table (docs/developing.md) is true of the code: inside plugin/, each layer imports only from
the layers above it in the table (at any depth in a module: in-function imports too, but those
only for type checking), and every folder of plugin/ is in the table."""

import ast
import re

from helpers.project import PROJECT as ROOT

PLUGIN = ROOT / 'plugin'
PREFIX = 'calibre_plugins.bookai.'


def layers() -> list[str]:
    """The layers of plugin/ in the layout table's order: folders, and cli.py as 'cli'."""
    table = (ROOT / 'docs' / 'developing.md').read_text()
    rows = re.findall(r'^\| `plugin/([a-z_]+)(?:/|\.py)` \|', table, re.MULTILINE)
    return [r for r in rows if r not in ('images', '__init__')]


def layer_of(module: str) -> str:
    return module[len(PREFIX):].split('.')[0]


def imports(path) -> list[tuple[int, str]]:
    """(line, module) of every import of the plugin's own modules in path, but those made for type
    checking only (under `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text())
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and 'TYPE_CHECKING' in ast.unparse(node.test):
            skipped |= {id(n) for child in node.body for n in ast.walk(child)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or '').startswith(PREFIX):
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith(PREFIX)]
    return found


def test_every_folder_of_the_plugin_is_in_the_layout_table():
    folders = {p.name for p in PLUGIN.iterdir() if p.is_dir() and p.name not in ('images', '__pycache__')}
    missing = sorted(folders - set(layers()))
    assert not missing, f'not in the layout table of docs/developing.md: {missing}'


def test_imports_go_one_way_down_the_layout_table():
    order = {name: i for i, name in enumerate(layers())}
    assert list(order)[:2] == ['core', 'settings'] and 'cli' in order and 'viewer' in order, order  # the table read
    wrong, seen = [], 0
    for path in sorted(PLUGIN.rglob('*.py')):
        if path.parent == PLUGIN and path.name == '__init__.py':
            continue  # the wrapper calibre reads: it imports what it starts, on use
        here = path.relative_to(PLUGIN).parts[0].removesuffix('.py')
        for line, module in imports(path):
            seen += 1
            there = layer_of(module)
            if there in order and here in order and order[there] > order[here]:
                wrong.append(f'{path.relative_to(ROOT)}:{line} ({here}) imports {module} ({there}, a layer below)')
    assert seen > 300, seen  # the imports were found
    assert not wrong, '\n'.join(wrong)
