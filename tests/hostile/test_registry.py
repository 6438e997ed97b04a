# License: GPLv3 Copyright: the Book AI developers
"""The registry of where outside bytes enter (hostile/registry.py) is whole and true: every
function of plugin/ that reads outside bytes (found by a grep-like scan, hostile/scan.py) is
registered, so that a new surface is untested, and red here, until it is; every name the
registry gives is still in plugin/; every bound it names is one; every attack class runs against
some entry, and every entry's attacks are classes the battery knows."""

import numbers

import pytest

from hostile import registry
from hostile.scan import scan
from hostile.surfaces import bound_value


@pytest.fixture(scope='module')
def scanned():
    return scan()


def registered() -> set[str]:
    names = set(registry.READERS_ELSEWHERE)
    for e in registry.ENTRIES.values():
        names.add(e.takes)
        names.update(e.readers)
    return names


def test_every_reader_of_outside_bytes_is_registered(scanned):
    readers, _every = scanned
    missing = sorted(set(readers) - registered())
    assert not missing, (
        'These functions read outside bytes but no entry of tests/hostile/registry.py goes through them: '
        'register each (an Entry that feeds it, or READERS_ELSEWHERE with why), so that the battery attacks it:\n'
        + '\n'.join(f'  {name} (line {readers[name].line}: {", ".join(readers[name].markers)})' for name in missing))


def test_every_name_the_registry_gives_is_in_the_plugin(scanned):
    _readers, every = scanned
    gone = sorted(n for n in registered() if n not in every)
    assert not gone, ('tests/hostile/registry.py names functions that are no longer in plugin/ (renamed or '
                      'gone: register what takes the bytes now):\n' + '\n'.join(f'  {n}' for n in gone))


def test_every_bound_named_is_a_bound():
    wrong = sorted({b for e in registry.ENTRIES.values() for b in e.bounds
                    if not isinstance(bound_value(b), numbers.Real) or isinstance(bound_value(b), bool)})
    assert not wrong, ('These bounds named in tests/hostile/registry.py are not numbers of the plugin: '
                       + ', '.join(wrong))


def test_every_attack_class_runs_against_an_entry_and_every_entry_is_attacked():
    used = {a for e in registry.ENTRIES.values() for a in e.attacks}
    assert used == set(registry.ATTACKS), (set(registry.ATTACKS) - used, used - set(registry.ATTACKS))
    cases = registry.cases()
    for e in registry.ENTRIES.values():
        assert e.fed in ('peer', 'file', 'call'), e.name
        assert e.attacks and any(c[0] == e.name for c in cases), f'{e.name} is attacked by nothing'
    for attack, (what, variants) in registry.ATTACKS.items():
        for variant in variants:
            assert any(c[1:] == (attack, variant) for c in cases), f'{attack} ({variant}) runs against no entry'


def test_the_entries_cover_every_wire_format_and_every_kind_of_file():
    """The issue's list: each wire format's answers, error bodies, model lists, embeddings, images and
    image URLs from every image provider, Book AI's own files, calibre's files and databases, books
    in every format Book AI reads, templates, web sources."""
    names = set(registry.ENTRIES)
    for provider in registry.CLASSES:
        for kind in ('stream', 'error', 'models'):
            assert f'wire/{provider}/{kind}' in names
    from calibre_plugins.bookai.providers.capabilities import Capability
    from calibre_plugins.bookai.providers.registry import PROVIDERS, provider_class
    for name in PROVIDERS:
        caps = provider_class(name).capabilities
        if caps & Capability.EMBEDDINGS:
            assert f'wire/{name}/embeddings' in names, name
        if caps & Capability.IMAGE_GENERATION:
            assert f'wire/{name}/image' in names, name
    assert {'file/settings', 'file/keys', 'file/history', 'file/text_cache', 'file/models_cache', 'file/undo',
            'file/staged_manifest', 'file/staged_image', 'calibre/ai.json', 'calibre/gui.json',
            'calibre/viewer-webengine.json', 'calibre/metadata.db', 'calibre/viewer_annotations', 'book/epub',
            'book/kepub', 'book/converted', 'template/cover', 'template/quick_action', 'call/web_links'} <= names
    from calibre_plugins.bookai.grounding.formats import READ_DIRECTLY
    for fmt in READ_DIRECTLY:
        assert f'book/{fmt.lower()}' in names, fmt


def test_the_scan_finds_what_it_is_meant_to(tmp_path):
    """The scan itself: a reader of each kind written into a module is found, a writer is not."""
    (tmp_path / 'mod.py').write_text(
        'import json, sqlite3\n'
        'def reads(p):\n    with open(p) as f:\n        return json.loads(f.read())\n'
        'def writes(p):\n    with open(p, "w") as f:\n        f.write("x")\n'
        'class C:\n    def parse_thing(self, data):\n        return data\n'
        '    def db(self, p):\n        return sqlite3.connect(p)\n'
        'def nested(p):\n    def inner():\n        return open(p, "rb").read()\n    return inner()\n')
    readers, every = scan(tmp_path)
    assert set(readers) == {'mod:reads', 'mod:C.parse_thing', 'mod:C.db', 'mod:nested'}
    assert 'mod:writes' in every


def test_the_readme_table_of_bounds_has_a_row_per_entry():
    rows = registry.bounds_table().splitlines()
    assert rows[0].startswith('| where outside bytes come in |')
    assert len(rows) == 2 + len(registry.ENTRIES)
