# License: GPLv3 Copyright: the Book AI developers
"""Removing the plugin with calibre's own tool touches none of the user's books, notes,
columns or highlights: a real library, used with the plugin in a real calibre, is
byte-identical after `calibre-customize -r`, and holds what it held before the plugin
came (calibre itself may add its Quick Start Guide on its first start)."""

import hashlib
import json
import os

from helpers.project import PLUGIN_NAME
from helpers.sandbox import tracebacks

# the user's own data, made with calibre's API: a comment, a custom column's value,
# a highlight with a note, and (calibre 7+) a note on an author
FILL = '''
from calibre.library import db
cache = db(LIBRARY).new_api
book_id = min(cache.all_book_ids())
cache.create_custom_column('mine', 'My notes', 'comments', False)
cache = db(LIBRARY).new_api  # a new column is there once the library is opened again
cache.set_field('comments', {book_id: '<p>My own comment, not to be lost.</p>'})
cache.set_field('#mine', {book_id: 'My own column, not to be lost.'})
cache.merge_annotations_for_book(book_id, 'EPUB', [{
    'type': 'highlight', 'uuid': 'a1b2c3d4e5f6a7b8c9d0e1f2', 'timestamp': '2024-01-02T03:04:05.000Z',
    'highlighted_text': 'calibre', 'notes': 'My own highlight note.', 'start_cfi': '/2/4/2/2:0',
    'end_cfi': '/2/4/2/2:7', 'spine_index': 0, 'spine_name': 'index.html',
    'style': {'kind': 'color', 'type': 'builtin', 'which': 'yellow'}}])
if hasattr(cache, 'set_notes_for'):
    author_id = next(iter(cache.get_item_ids('authors', cache.field_for('authors', book_id)).values()))
    cache.set_notes_for('authors', author_id, 'My own note on the author.')
cache.close()
'''

READ = '''
import json
from calibre.library import db
cache = db(LIBRARY).new_api
out = {}
for book_id in sorted(cache.all_book_ids()):
    out[book_id] = {
        'title': cache.field_for('title', book_id), 'authors': list(cache.field_for('authors', book_id)),
        'comments': cache.field_for('comments', book_id), 'mine': cache.field_for('#mine', book_id),
        'formats': list(cache.formats(book_id)),
        'annotations': [(a['annotation']['uuid'], a['annotation'].get('notes')) for a in
                        cache.all_annotations_for_book(book_id)],
    }
    if hasattr(cache, 'notes_for'):
        out[book_id]['author_notes'] = [cache.notes_for('authors', i) for i in
                                        cache.get_item_ids('authors', cache.field_for('authors', book_id)).values()]
cache.close()
print(json.dumps(out))
'''


def calibre_script(sandbox, code, library):
    r = sandbox.debug(f'LIBRARY = {str(library)!r}\n' + code)
    assert r.returncode == 0 and not tracebacks(r.output), r
    return r.stdout


def user_data(sandbox, library):
    return json.loads(calibre_script(sandbox, READ, library).strip().splitlines()[-1])


def files(folder):
    """Every file under folder, with its sha256 and modification time."""
    found = {}
    for dirpath, dirs, names in os.walk(folder):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, 'rb') as f:
                found[os.path.relpath(path, folder)] = (hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_mtime_ns)
    return found


def test_removing_the_plugin_leaves_the_library_as_it_was(sandbox, library, plugin_zip):
    calibre_script(sandbox, FILL, library)
    before = user_data(sandbox, library)
    (book,) = before.values()
    assert book['comments'] == '<p>My own comment, not to be lost.</p>'
    assert book['mine'] == 'My own column, not to be lost.'
    assert book['annotations'] == [['a1b2c3d4e5f6a7b8c9d0e1f2', 'My own highlight note.']]
    assert book.get('author_notes', ['My own note on the author.']) == ['My own note on the author.']
    sandbox.install(plugin_zip)
    # the plugin used: a key configured, and calibre started with it on this library
    r = sandbox.run(['calibre-debug', '-r', PLUGIN_NAME, '--', 'configure', 'openai', 'api_key=-'],
                    input='sk-removal-test-0123\n')
    assert r.returncode == 0, r
    report, r = sandbox.probe('main_window', [library])
    assert report['book_ai'] is not None and not tracebacks(r.output), r
    used = user_data(sandbox, library)
    assert all(used[book_id] == data for book_id, data in before.items())  # calibre 9 adds its guide on first start
    on_disk = files(library)
    assert 'metadata.db' in on_disk

    r = sandbox.customize('-r', PLUGIN_NAME)
    assert r.returncode == 0, r
    assert PLUGIN_NAME not in sandbox.installed_plugins()
    assert files(library) == on_disk  # not a byte, not a timestamp
    assert user_data(sandbox, library) == used
