# License: GPLv3 Copyright: the Book AI developers
"""build.py: a reproducible zip holding exactly the plugin, and working translations."""

import ast
import gettext
import hashlib
import io
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from helpers.project import PROJECT, build_script, run_build

build_py = build_script()

PLACEHOLDER = re.compile(r'\{[^{}]*\}')


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_two_builds_are_byte_identical(tmp_path):
    first = run_build('zip', tmp_path / 'a')
    second = run_build('zip', tmp_path / 'b')
    (a,) = (tmp_path / 'a').glob('*.zip')
    (b,) = (tmp_path / 'b').glob('*.zip')
    assert a.name == b.name == 'bookai-{}.{}.{}.zip'.format(*build_py.read_version())
    assert a.read_bytes() == b.read_bytes()
    # build.py prints the sha256 it wrote
    assert sha256(a) in first and sha256(b) in second
    print(f'two builds: {sha256(a)} {sha256(b)}')


def expected_zip_names():
    names = {'plugin-import-name-bookai.txt'}
    for path in (PROJECT / 'plugin').rglob('*'):
        rel = path.relative_to(PROJECT / 'plugin')
        if path.is_file() and path.suffix in ('.py', '.png') and '__pycache__' not in rel.parts:
            names.add(rel.as_posix())
    names |= {f'translations/{po.stem}.mo' for po in (PROJECT / 'translations').glob('*.po')}
    return names


def test_zip_holds_the_plugin_and_nothing_else(plugin_zip):
    with zipfile.ZipFile(plugin_zip) as zf:
        names = set(zf.namelist())
        infos = zf.infolist()
    assert names == expected_zip_names()
    assert '__init__.py' in names and 'plugin-import-name-bookai.txt' in names
    assert 'translations/de.mo' in names
    assert {'images/bookai.png', 'images/bookai-for-dark-theme.png'} <= names
    assert not [n for n in names if '__pycache__' in n or n.endswith(('.pyc', '~', '.swp', '.orig')) or n.startswith('tests/')]
    # every folder with code is a package: calibre_plugins.bookai.<folder> must import
    code_dirs = {n.rpartition('/')[0] for n in names if n.endswith('.py') and '/' in n}
    assert all(f'{d}/__init__.py' in names for d in code_dirs)
    # normalised entries: one date, regular files readable by all
    assert {i.date_time for i in infos} == {build_py.ZIP_DATE}
    assert {i.external_attr >> 16 for i in infos} == {0o100644}


def test_staged_folder_matches_the_zip(plugin_zip, staged_plugin):
    staged = {p.relative_to(staged_plugin).as_posix(): p.read_bytes()
              for p in staged_plugin.rglob('*') if p.is_file()}
    with zipfile.ZipFile(plugin_zip) as zf:
        zipped = {n: zf.read(n) for n in zf.namelist()}
    assert staged == zipped


def catalog(mo_bytes):
    return gettext.GNUTranslations(io.BytesIO(mo_bytes))._catalog


@pytest.mark.parametrize('po', sorted((PROJECT / 'translations').glob('*.po')), ids=lambda p: p.stem)
def test_compiled_translations_match_gnu_msgfmt(po, plugin_zip, tmp_path):
    with zipfile.ZipFile(plugin_zip) as zf:
        ours = catalog(zf.read(f'translations/{po.stem}.mo'))
    msgfmt = shutil.which('msgfmt')
    assert msgfmt, 'GNU gettext (msgfmt) is needed for this check; dev/hosts.py installs it'
    subprocess.run([msgfmt, '--check', '-o', str(tmp_path / 'gnu.mo'), str(po)], check=True)
    assert ours == catalog((tmp_path / 'gnu.mo').read_bytes())
    entries = [e for e in build_py.parse_po(po.read_text(encoding='utf-8')) if e['msgid']]
    assert entries and all(ours[e['msgid']] == e['msgstr'][0] for e in entries if 'msgid_plural' not in e)
    plurals = [e for e in entries if 'msgid_plural' in e]
    assert plurals and all(ours[(e['msgid'], i)] == form for e in plurals for i, form in enumerate(e['msgstr']))


def test_template_is_current(tmp_path):
    fresh = tmp_path / 'bookai.pot'
    build_py.write_pot(fresh)
    committed = PROJECT / 'translations' / 'bookai.pot'
    assert fresh.read_text(encoding='utf-8') == committed.read_text(encoding='utf-8'), (
        'translations/bookai.pot is out of date: run python3 build.py pot')


def template_messages():
    return [e for e in build_py.parse_po((PROJECT / 'translations' / 'bookai.pot').read_text(encoding='utf-8'))
            if e['msgid']]


def test_template_has_every_string():
    msgids = {e['msgid'] for e in template_messages()}
    assert {'Book AI', 'Discuss your books with AI', 'About Book AI'} <= msgids


LANGUAGES = ('de', 'fr', 'es', 'it', 'pt_BR', 'nl', 'pl', 'ru', 'uk', 'tr', 'zh_CN', 'zh_TW', 'ja', 'ko')
HTML_TAG = re.compile(r'</?([a-zA-Z][a-zA-Z0-9]*)\b')


def accelerators(text):
    return len(re.findall(r'&(?=[^&\s;])', text.replace('&&', '')))


def test_every_language_is_there_and_in_the_zip(plugin_zip):
    assert sorted(p.stem for p in (PROJECT / 'translations').glob('*.po')) == sorted(LANGUAGES)
    with zipfile.ZipFile(plugin_zip) as zf:
        assert sorted(n for n in zf.namelist() if n.startswith('translations/')) == sorted(
            f'translations/{lang}.mo' for lang in LANGUAGES)


@pytest.mark.parametrize('lang', LANGUAGES)
def test_translation_is_complete_and_keeps_every_placeholder(lang):
    po = build_py.parse_po((PROJECT / 'translations' / f'{lang}.po').read_text(encoding='utf-8'))
    header = next(e for e in po if e['msgid'] == '')['msgstr'][0]
    assert f'Language: {lang}\n' in header
    nplurals = int(re.search(r'nplurals=(\d+)', header).group(1))
    translated = {e['msgid']: e for e in po if e['msgid']}
    assert set(translated) == {e['msgid'] for e in template_messages()}, 'run msgmerge: the .po is not the template\'s'
    for entry in template_messages():
        msgid, t = entry['msgid'], translated[entry['msgid']]
        assert 'fuzzy' not in t['flags'] and t['msgstr'] and all(t['msgstr']), f'untranslated: {msgid!r}'
        if 'msgid_plural' in entry:
            assert len(t['msgstr']) == nplurals, f'{len(t["msgstr"])} plural forms: {msgid!r}'
        singular = set(PLACEHOLDER.findall(msgid))
        plural = set(PLACEHOLDER.findall(entry.get('msgid_plural', msgid)))
        for form in t['msgstr']:
            # a plural form may name the count the singular leaves out (Russian's first form is also
            # for 21, Japanese has only one); what both English forms name, every form keeps
            assert singular & plural <= set(PLACEHOLDER.findall(form)) <= singular | plural, (msgid, form)
            assert accelerators(form) == min(accelerators(msgid), 1), (msgid, form)
            assert sorted(HTML_TAG.findall(form)) == sorted(HTML_TAG.findall(msgid)), (msgid, form)


def test_version_lives_in_one_place(plugin_zip):
    version = build_py.read_version()
    assert plugin_zip.name == 'bookai-{}.{}.{}.zip'.format(*version)
    literal = repr(tuple(version))
    holders = [p for p in PROJECT.rglob('*.py') if not p.is_relative_to(PROJECT / 'build')
               and literal in p.read_text(encoding='utf-8')]
    assert holders == [PROJECT / 'plugin' / '__init__.py']


INDEX_FIELDS = ('name', 'description', 'supported_platforms', 'version', 'author', 'minimum_calibre_version')


def index_metadata(zip_path):
    """What the calibre plugin index reads of a plugin zip, the way its parser does (calibre's
    setup/plugins_mirror.py): the zip's top-level __init__.py, parsed with ast and never run; the
    class whose base is imported from calibre.customize; its fields, which must be literals."""
    with zipfile.ZipFile(zip_path) as zf:
        inits = sorted((n for n in zf.namelist() if n.rpartition('/')[2] == '__init__.py'), key=lambda n: n.count('/'))
        assert inits and inits[0] == '__init__.py'
        module = ast.parse(zf.read('__init__.py'), filename='__init__.py')
    bases = {a.asname or a.name for node in module.body if isinstance(node, ast.ImportFrom)
             and node.module == 'calibre.customize' for a in node.names if a.name != a.name.lower()}
    (plugin,) = [c for c in module.body if isinstance(c, ast.ClassDef)
                 and {getattr(b, 'id', None) for b in c.bases} & bases]
    fields = {}
    for node in plugin.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if getattr(target, 'id', None) in INDEX_FIELDS:
                    fields[target.id] = ast.literal_eval(node.value)  # a literal, or the index cannot read it
    return fields


def test_the_plugin_index_reads_name_version_and_more_without_running_the_plugin(plugin_zip):
    meta = index_metadata(plugin_zip)
    assert sorted(meta) == sorted(INDEX_FIELDS)
    assert meta['name'] == 'Book AI' and meta['author'] == 'The Book AI developers'
    assert meta['version'] == tuple(build_py.read_version()) and len(meta['version']) == 3
    assert meta['supported_platforms'] == ['windows', 'osx', 'linux']
    assert meta['minimum_calibre_version'] == (6, 0, 0)
    assert 'Nothing is sent anywhere until you set up a provider' in meta['description']
    # the history the index shows, and the index post, are of this version
    version = '.'.join(map(str, meta['version']))
    changelog = (PROJECT / 'CHANGELOG.md').read_text(encoding='utf-8')
    assert re.search(r'^## (\d+\.\d+\.\d+)', changelog, re.M).group(1) == version
    post = (PROJECT / 'docs' / 'plugin-index-post.md').read_text(encoding='utf-8')
    assert f'Book AI {version}' in post and 'calibre 6.0 or newer' in post
    for shot in re.findall(r'\]\((screenshots/[^)]+)\)', post):
        assert (PROJECT / 'docs' / shot).is_file(), shot
