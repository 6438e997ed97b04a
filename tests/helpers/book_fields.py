# License: GPLv3 Copyright: the Book AI developers
"""A real calibre library holding calibre's Quick Start Guide (book 1) with custom columns of
each kind the book fields tests need, its fields filled in, and calibre's own list of the
fields its AI offers, worked out as calibre 9.17's "Discuss book with AI" does."""

import json
from datetime import datetime, timezone
from pathlib import Path

from helpers.books import quick_start_epub
from helpers.sandbox import Sandbox

BOOK = 1
# (label, name, datatype, display)
COLUMNS = (
    ('mood', 'Mood', 'text', {}),
    ('notes', 'My notes', 'comments', {'interpret_as': 'markdown'}),
    ('review', 'Review', 'comments', {'interpret_as': 'html'}),
    ('read', 'Read on', 'datetime', {}),
)
VALUES = {
    'tags': ('Manual', 'Software'),
    'series': 'Guides',
    'series_index': 2.0,
    'publisher': 'Kovid Press',
    'comments': '<p>A <b>friendly</b> guide.</p>',
    '#mood': 'calm',
    '#notes': '**Read** it twice.',
    '#review': '<p>A <i>fine</i> guide.</p>',
    '#read': datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc),
}


def library_with_columns(sandbox: Sandbox, name: str = 'library', columns: tuple = COLUMNS,
                         values: dict | None = None) -> Path:
    """A library at sandbox.root/name: the Quick Start Guide, columns made and values set."""
    lib = sandbox.root / name
    r = sandbox.run(['calibredb', '--with-library', lib, 'add', quick_start_epub()])
    assert r.returncode == 0, r
    cache = open_library(lib)
    for label, title, kind, display in columns:
        cache.create_custom_column(label, title, kind, False, display=display)
    cache.close()
    cache = open_library(lib)  # new columns appear once the library is opened again
    made = {f'#{c[0]}' for c in columns}
    for field, value in (VALUES if values is None else values).items():
        if not field.startswith('#') or field in made:
            cache.set_field(field, {BOOK: value})
    cache.close()
    return lib


def open_library(path: Path):
    """The new_api of the library at path (close() it when done)."""
    from calibre.library import db
    return db(str(path)).new_api


def calibres_offer(fm) -> list[str]:
    """The fields calibre 9.17's MetadataSettings lists, in its order (gui2/dialogs/llm_book.py)."""
    from calibre.utils.icu import primary_sort_key
    return [k for k in sorted(fm.displayable_field_keys(), key=lambda n: primary_sort_key(fm[n]['label']))
            if k not in ('title', 'authors', 'author_sort', 'sort', 'id', 'uuid')]


def set_plugin_prefs(sandbox: Sandbox, **values: object) -> None:
    """Set Book AI's settings in the sandbox's calibre, as the settings dialog would have."""
    path = sandbox.config / 'plugins' / 'bookai.json'
    data = json.loads(path.read_text(encoding='utf-8')) if path.exists() else {}
    data.update(values)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding='utf-8')
