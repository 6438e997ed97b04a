# License: GPLv3 Copyright: the Book AI developers
"""plugin/__init__.py: what the plugin index reads, and what importing it costs."""

import ast
import json
import zipfile

from helpers.project import PLUGIN_NAME, PROJECT
from helpers.sandbox import Sandbox

# calibre's own AI plugin names; a plugin named like a builtin is refused at install
CALIBRE_AI_NAMES = {'Discuss book with AI', 'OpenAI', 'GoogleAI', 'OllamaAI', 'LMStudio', 'OpenRouter',
                    'OpenAI compatible', 'GitHubAI', 'Anthropic', 'Grok', 'Venice AI'}
INDEX_FIELDS = ('name', 'description', 'supported_platforms', 'version', 'author', 'minimum_calibre_version')


def test_init_satisfies_the_plugin_index(plugin_zip):
    """The index runs nothing: it parses __init__.py and needs a class based on a
    name imported at top level from calibre.customize, with literal metadata."""
    with zipfile.ZipFile(plugin_zip) as zf:
        tree = ast.parse(zf.read('__init__.py'), feature_version=(3, 10))
    bases = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
             and node.module == 'calibre.customize' for alias in node.names if alias.name[0].isupper()}
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)
               and {getattr(b, 'id', None) for b in n.bases} & bases]
    assert len(classes) == 1, 'one wrapper class, based on a top-level import from calibre.customize'
    fields = {}
    for node in classes[0].body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if getattr(target, 'id', None) in INDEX_FIELDS:
                    fields[target.id] = ast.literal_eval(node.value)  # raises unless a literal
    assert set(fields) == set(INDEX_FIELDS)
    assert fields['name'] == PLUGIN_NAME
    assert fields['minimum_calibre_version'] == (6, 0, 0)
    assert sorted(fields['supported_platforms']) == ['linux', 'osx', 'windows']
    assert len(fields['version']) == 3 and all(isinstance(x, int) for x in fields['version'])
    assert 'AI' in fields['description'] and fields['author']


def test_sources_are_python_3_10():
    for path in (PROJECT / 'plugin').rglob('*.py'):
        ast.parse(path.read_text(encoding='utf-8'), filename=str(path), feature_version=(3, 10))


def test_names_do_not_collide_with_calibre_builtins():
    from calibre.customize.builtins import plugins
    builtin = {p.name for p in plugins}
    assert PLUGIN_NAME not in builtin | CALIBRE_AI_NAMES


IMPORT_PROBE = '''
import json, socket, sys
def no_network(*args, **kwargs):
    raise AssertionError('the network was touched while importing')
socket.socket.connect = socket.socket.connect_ex = no_network
import calibre.customize.ui as ui
loaded = [p.name for p in ui.initialized_plugins()]
if 'Book AI' in loaded:
    import calibre_plugins.bookai
print(json.dumps({'modules': sorted(sys.modules), 'plugins': loaded}))
'''


def modules_after_import(sandbox):
    r = sandbox.debug(IMPORT_PROBE)
    assert r.returncode == 0, r
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_importing_the_plugin_costs_nothing(tmp_path, plugin_zip):
    without = modules_after_import(Sandbox(tmp_path / 'without'))
    sandbox = Sandbox(tmp_path / 'with')
    sandbox.install(plugin_zip)
    before = set(p.name for p in (sandbox.config / 'plugins').iterdir())
    with_plugin = modules_after_import(sandbox)
    assert PLUGIN_NAME in with_plugin['plugins'] and PLUGIN_NAME not in without['plugins']
    added = set(with_plugin['modules']) - set(without['modules'])
    assert 'calibre_plugins.bookai' in added
    heavy = sorted(m for m in added if m.split('.')[0] in ('qt', 'PyQt6', 'PyQt5')
                   or m.startswith(('calibre.gui2', 'calibre.ai', 'calibre_plugins.bookai.')))
    assert heavy == []
    # nothing written either: no settings file appears just because calibre loaded the plugin
    assert set(p.name for p in (sandbox.config / 'plugins').iterdir()) == before


def calls(tree, name):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, 'id', None) == name]


def test_every_module_with_strings_loads_its_translations():
    checked = 0
    for path in (PROJECT / 'plugin').rglob('*.py'):
        tree = ast.parse(path.read_text(encoding='utf-8'))
        if calls(tree, '_') or calls(tree, 'ngettext'):
            checked += 1
            at_top = [n for n in tree.body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
                      and getattr(n.value.func, 'id', None) == 'load_translations']
            assert at_top, f'{path.relative_to(PROJECT)} uses _() without load_translations() at module level'
    assert checked


def test_nothing_rebinds_the_translation_function():
    """`for _ in ...` or `a, _ = ...` would make the next _('...') in that scope crash."""
    for path in (PROJECT / 'plugin').rglob('*.py'):
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
            targets = []
            if isinstance(node, (ast.For, ast.comprehension)):
                targets = [node.target]
            elif isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
                targets = [node.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            assert '_' not in names, f'{path.relative_to(PROJECT)}:{node.lineno} rebinds _'
