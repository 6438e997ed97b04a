# License: GPLv3 Copyright: the Book AI developers
"""calibre's files read as hostile (issue 26, findings 5 and 6): whatever another program left in
calibre's config folder or in a library calibre used, reading it ends at once in a sentence,
never hangs, never floods memory, never ends in a traceback; a value of the wrong type is listed
as not carried over, in words; a header with a control character is never saved.

A watchdog (WATCHDOG seconds) fails a test whose read does not end, rather than hanging the
suite: it is a guard against a hang, not a measure of speed."""

import json
import os
import socket
import sqlite3
import threading
from pathlib import Path

import pytest

from helpers.memory import MB, peak_growth

WATCHDOG = 120
FILES = ('ai.json', 'gui.json', 'viewer-webengine.json')


def ended(fn, *args, **kwargs):
    """fn(*args, **kwargs)'s result, or the test fails when it has not ended after WATCHDOG seconds."""
    out = {}

    def run():
        try:
            out['result'] = fn(*args, **kwargs)
        except BaseException as e:  # handed to the test
            out['error'] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(WATCHDOG)
    assert not t.is_alive(), f'{fn.__name__} did not end: it hangs'
    if 'error' in out:
        raise out['error']
    return out['result']


def read(folder, libraries=()):
    from calibre_plugins.bookai.from_calibre.carry_over import read as read_settings
    return ended(read_settings, str(folder), list(libraries))


def settings():
    from calibre_plugins.bookai.from_calibre import carry_over
    return carry_over


# files that are not files: a FIFO, a link to one, a device, a socket, a folder {{{

def fifo(path: Path) -> None:
    os.mkfifo(path)


def link_to_fifo(path: Path) -> None:
    os.mkfifo(path.with_name(path.name + '.fifo'))
    path.symlink_to(path.with_name(path.name + '.fifo'))


def device(path: Path) -> None:
    path.symlink_to('/dev/zero')  # endless: read whole, it would fill memory


def a_socket(path: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.listen(1)
    return s


def folder(path: Path) -> None:
    path.mkdir()


NOT_FILES = {'a FIFO': fifo, 'a link to a FIFO': link_to_fifo, 'a device': device, 'a socket': a_socket,
             'a folder': folder}


@pytest.mark.parametrize('name', FILES)
@pytest.mark.parametrize('kind', list(NOT_FILES))
def test_what_is_not_a_regular_file_ends_in_a_sentence_at_once(tmp_path, name, kind):
    (tmp_path / 'gui.json').write_text(json.dumps({'llm-book-allowed-standard-fields': ['tags']}))
    path = tmp_path / name
    if path.exists():
        path.unlink()
    keep = NOT_FILES[kind](path)
    try:
        found = read(tmp_path)
    finally:
        if keep is not None:
            keep.close()
    (problem,) = found.problems
    assert f"calibre's settings file {path} could not be read" in problem, problem
    assert any(w in problem for w in ('not a regular file', 'No such device', 'Is a directory')), problem
    if name != 'gui.json':  # the rest is read all the same
        assert [i.setting for i in found.items] == ['Fields sent with a question']


def test_a_fifo_ends_in_a_sentence_through_the_command_line(cli, sandbox):
    sandbox.config.mkdir(parents=True, exist_ok=True)
    os.mkfifo(sandbox.config / 'ai.json')
    r = cli('import-calibre', '--yes')
    assert r.returncode == 7, r
    assert f"calibre's settings file {sandbox.config / 'ai.json'} could not be read" in r.stderr
    assert 'not a regular file' in r.stderr and 'Traceback' not in r.output

# }}}


# a library's database: views, virtual tables, computed columns, huge values, time {{{

def library_with(tmp_path: Path, script: str, name: str = 'Library') -> Path:
    """A folder whose metadata.db was made by script (after calibre's two tables where script does
    not make its own), listed in gui.json's library_usage_stats."""
    lib = tmp_path / name
    lib.mkdir()
    conn = sqlite3.connect(lib / 'metadata.db')
    conn.executescript(script)
    conn.commit()
    conn.close()
    (tmp_path / 'gui.json').write_text(json.dumps({'library_usage_stats': {str(lib): 3}}))
    return lib


CALIBRES = ("CREATE TABLE preferences (id INTEGER PRIMARY KEY, key TEXT NOT NULL, val TEXT NOT NULL, UNIQUE(key));"
            "CREATE TABLE library_id (id INTEGER PRIMARY KEY, uuid TEXT NOT NULL);"
            "INSERT INTO library_id (uuid) VALUES ('lib-uuid');")
FIELDS = 'llm-book-allowed-custom-fields'
LIBRARY_ID = "CREATE TABLE library_id (id INTEGER PRIMARY KEY, uuid TEXT); INSERT INTO library_id (uuid) VALUES ('x');"

HOSTILE_LIBRARIES = {
    # the issue's: a recursive view (would never end) and views of 0.9 GB (gigabytes resident)
    'a recursive view': LIBRARY_ID + (
        "CREATE VIEW preferences AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
        f"SELECT '{FIELDS}' AS key, '[]' AS val FROM r WHERE n < 0;"),
    'a view of a 0.9 GB blob': LIBRARY_ID + f"CREATE VIEW preferences AS SELECT '{FIELDS}' AS key, "
                                            "zeroblob(900000000) AS val;",
    'a view of a 0.9 GB string': LIBRARY_ID + f"CREATE VIEW preferences AS SELECT '{FIELDS}' AS key, "
                                              "printf('%.*c', 900000000, 'x') AS val;",
    'a view in capitals': LIBRARY_ID + f"CREATE VIEW PREFERENCES AS SELECT '{FIELDS}' AS key, '[]' AS val;",
    'library_id a view': "CREATE TABLE preferences (key TEXT, val TEXT);"
                         f"INSERT INTO preferences VALUES ('{FIELDS}', '[\"#a\"]');"
                         "CREATE VIEW library_id AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
                         "SELECT 'x' AS uuid FROM r WHERE n < 0;",
    'a virtual table': LIBRARY_ID + "CREATE VIRTUAL TABLE preferences USING fts5(key, val);"
                                    f"INSERT INTO preferences VALUES ('{FIELDS}', '[]');",
    'a computed column of 0.9 GB': LIBRARY_ID + (
        "CREATE TABLE preferences (key TEXT, n INTEGER, val BLOB GENERATED ALWAYS AS (zeroblob(n)) VIRTUAL);"
        f"INSERT INTO preferences (key, n) VALUES ('{FIELDS}', 900000000);"),
    'a stored value over sqlite\'s limit': CALIBRES + (
        f"INSERT INTO preferences (key, val) VALUES ('{FIELDS}', '[\"#' || printf('%.*c', 2000000, 'x') || '\"]');"),
}
SAID = {
    'a recursive view': 'its preferences is not a table, as calibre makes it',
    'a view of a 0.9 GB blob': 'its preferences is not a table, as calibre makes it',
    'a view of a 0.9 GB string': 'its preferences is not a table, as calibre makes it',
    'a view in capitals': 'its preferences is not a table, as calibre makes it',
    'library_id a view': 'its library_id is not a table, as calibre makes it',
    'a virtual table': 'its preferences is not a table, as calibre makes it',
    'a computed column of 0.9 GB': 'its preferences has computed columns, which calibre never makes',
    'a stored value over sqlite\'s limit': 'it holds a value larger than Book AI reads',
}


@pytest.mark.parametrize('case', list(HOSTILE_LIBRARIES))
def test_a_hostile_library_ends_in_a_sentence_bounded_and_left_as_it_is(tmp_path, case):
    lib = library_with(tmp_path, HOSTILE_LIBRARIES[case])
    before = (lib / 'metadata.db').read_bytes()
    found, grew = peak_growth(lambda: read(tmp_path))
    assert not isinstance(found, Exception), found
    assert grew < 200 * MB, f'{grew / MB:.0f} MB resident to read {case}'
    (problem,) = found.problems
    assert problem == (f'The calibre library {lib} could not be read: {SAID[case]}. Its fields are not carried '
                       'over, and it is left as it is.'), problem
    assert not found.items
    assert (lib / 'metadata.db').read_bytes() == before


def test_a_library_that_takes_too_long_is_stopped_by_the_clock(tmp_path, monkeypatch):
    """The progress handler is what stops a slow query: with no time left, the first one is stopped."""
    lib = library_with(tmp_path, CALIBRES + f"INSERT INTO preferences (key, val) VALUES ('{FIELDS}', '[\"#a\"]');")
    found = read(tmp_path)
    assert not found.problems and found.items[0].changes.custom_fields == {'lib-uuid': ['#a']}
    monkeypatch.setattr(settings(), 'SQLITE_SECONDS', -1.0)
    monkeypatch.setattr(settings(), 'SQLITE_STEPS', 1)  # this small a database takes fewer steps than the usual
    found = read(tmp_path)
    assert found.problems == [f'The calibre library {lib} could not be read: reading it took longer than -1 seconds. '
                              'Its fields are not carried over, and it is left as it is.']


def test_all_libraries_together_are_bounded_in_time(tmp_path, monkeypatch):
    libs = [str(library_with(tmp_path, CALIBRES, f'Library {n}')) for n in range(3)]
    monkeypatch.setattr(settings(), 'LIBRARIES_SECONDS', -1.0)
    found = read(tmp_path, libs)
    assert found.problems == ['3 more calibre libraries were not looked at: reading libraries took longer than -1 '
                              'seconds.']


WRONG_VALUES = {
    'a blob': "X'5b5d'",
    'a number': '42',
    'longer than Book AI reads': "'[\"#' || printf('%.*c', 30000, 'x') || '\"]'",
    'not JSON': "'[\"#a\"'",
    'a list of numbers': "'[1, 2]'",
    'standard fields': "'[\"tags\"]'",
    'a control character': "'[\"#a\u001b[2J\"]'",
    'deeply nested': "'" + '[' * 5000 + ']' * 5000 + "'",
}


@pytest.mark.parametrize('case', list(WRONG_VALUES))
def test_a_value_of_the_wrong_type_is_listed_as_not_carried(tmp_path, case):
    lib = library_with(tmp_path, CALIBRES.replace('val TEXT NOT NULL', 'val') +
                       f"INSERT INTO preferences (key, val) VALUES ('{FIELDS}', {WRONG_VALUES[case]});")
    found = read(tmp_path)
    assert not found.problems
    (item,) = found.items
    assert item.setting == f'Custom fields sent, library {lib}'
    assert not item.carried and item.value == '(unreadable)'
    assert item.why_not == ('its value is nested deeper, or holds more, than Book AI reads' if case == 'deeply nested'
                            else 'it is not a list of fields')
    assert '\x1b' not in found.summary()


@pytest.mark.parametrize('uuid', ["X'00'", '7', "''", "printf('%.*c', 5000, 'x')", "'a\u0007b'"])
def test_a_library_id_of_the_wrong_type_is_listed_as_not_carried(tmp_path, uuid):
    library_with(tmp_path, CALIBRES.replace("VALUES ('lib-uuid')", f'VALUES ({uuid})').replace(
        'uuid TEXT NOT NULL', 'uuid') + f"INSERT INTO preferences (key, val) VALUES ('{FIELDS}', '[\"#a\"]');")
    (item,) = read(tmp_path).items
    assert not item.carried and item.why_not == 'its id is not one calibre writes'


def test_libraries_listed_are_bounded_and_odd_paths_are_passed_over(tmp_path):
    odd = ['', 'x' * 5000, 'a\x00b', 7, None, ['list'], str(tmp_path / 'missing')]
    (tmp_path / 'gui.json').write_text(json.dumps({'library_usage_stats': {'': 1, 'x' * 5000: 2}}))
    found = read(tmp_path, odd)
    assert not found.items and not found.problems
    fifo_lib = tmp_path / 'fifo-library'
    fifo_lib.mkdir()
    os.mkfifo(fifo_lib / 'metadata.db')  # never opened: sqlite would wait on it
    assert not read(tmp_path, [str(fifo_lib)]).items

# }}}


# wrong types in ai.json and gui.json: the issue's crash sites and their siblings {{{

def ai_json(tmp_path: Path, providers: dict, **more) -> None:
    (tmp_path / 'ai.json').write_text(json.dumps({'providers': providers, **more}))


def by_setting(found) -> dict:
    return {(i.section, i.setting): i for i in found.items}


def test_the_issues_crash_sites_are_listed_in_words(tmp_path):
    ai_json(tmp_path, {
        'OpenAI': {'temperature': 0.5, 'headers': [['X-A', 'b']]},  # Book AI's OpenAI has neither
        'Anthropic': {'data_collection': 'deny'},                   # nor its Anthropic this
        'OpenRouter': {'data_collection': ['deny'], 'model_choice_strategy': ['free-only']},  # lists: unhashable
    })
    found = read(tmp_path)
    items = by_setting(found)
    assert items[('OpenAI', 'Temperature')].why_not == "Book AI's OpenAI has no such setting"
    assert items[('OpenAI', 'Headers')].why_not == "Book AI's OpenAI has no such setting"
    assert items[('Anthropic', 'Data collection')].why_not == "Book AI's Anthropic has no such setting"
    for setting in ('Data collection', 'Model choice strategy'):
        assert items[('OpenRouter', setting)].why_not == 'it is not a value calibre writes for this setting'
    assert not found.found and not found.problems
    summary = found.summary()
    assert 'not carried over: it is not a value calibre writes for this setting' in summary


def test_the_issues_example_through_the_command_line(cli, sandbox):
    sandbox.config.mkdir(parents=True, exist_ok=True)
    (sandbox.config / 'ai.json').write_text(json.dumps({'providers': {'OpenAI': {'temperature': 0.5}}}))
    r = cli('import-calibre', '--yes')
    assert r.returncode == 0 and 'Traceback' not in r.output, r
    assert "Temperature: 0.5 → not carried over: Book AI's OpenAI has no such setting" in r.stdout


HEADERS = {
    'CR LF in a value': [['X-A', 'ok\r\nX-Injected: 1']],
    'LF in a name': [['X-A\nX-B', 'v']],
    'ESC in a value': [['X-A', 'sk-secret\x1b[2J']],
    'NUL in a value': [['X-A', 'a\x00b']],
    'a C1 control': [['X-A', 'a\x9bb']],
    'a space in a name': [['X A', 'v']],
    'an empty name': [['', 'v']],
}


@pytest.mark.parametrize('case', list(HEADERS))
def test_a_header_with_a_control_character_is_refused_and_never_saved(tmp_path, prefs, case):
    ai_json(tmp_path, {'OpenAI compatible': {'headers': HEADERS[case], 'text_model': 'kept'}})
    found = read(tmp_path)
    item = by_setting(found)[('OpenAI compatible', 'Headers')]
    assert not item.carried and 'header' in item.why_not
    assert 'sk-secret' not in found.summary() and '\x1b' not in found.summary() and '\r' not in found.summary()
    before = prefs['providers'].get('openai_compatible')
    settings().carry_over(found, secrets=NoKeys())
    saved = prefs['providers']['openai_compatible']
    assert saved['model'] == 'kept' and saved.get('headers') == (before or {}).get('headers')


def test_a_good_header_is_carried_and_the_saved_headers_are_checked_too(tmp_path):
    from calibre_plugins.bookai.providers.options import parse_headers
    ai_json(tmp_path, {'OpenAI compatible': {'headers': [['X-From', 'calibre\tand tab']]}})
    item = by_setting(read(tmp_path))[('OpenAI compatible', 'Headers')]
    assert item.carried
    assert [list(h) for h in item.changes.providers['openai_compatible']['headers']] == [['X-From', 'calibre\tand tab']]
    for bad in ('X-A: a\x1bb', 'X A: b'):  # typed in the settings, or read back from Book AI's own file
        with pytest.raises(ValueError):
            parse_headers(bad)
    with pytest.raises(ValueError):
        parse_headers([('X-A', 'a\rb')])


class NoKeys:
    """A secret store that keeps nothing (no keyring in the quick run)."""

    def set(self, *args):
        pass


WRONG_GUI = {
    'llm-book-allowed-standard-fields': ('tags', 'it is not a list of fields'),
    'llm_book_quick_actions': (['summarize'], 'it is not a list of actions calibre wrote'),
    'llm-cover-generation': ('noir', 'they are not settings calibre wrote'),
}


@pytest.mark.parametrize('key', list(WRONG_GUI))
def test_wrong_types_in_gui_json_are_listed_in_words(tmp_path, key):
    value, why = WRONG_GUI[key]
    (tmp_path / 'gui.json').write_text(json.dumps({key: value}))
    (item,) = read(tmp_path).items
    assert item.why_not == why


def test_wrong_types_inside_the_cover_choices_are_listed_one_by_one(tmp_path):
    (tmp_path / 'gui.json').write_text(json.dumps({'llm-cover-generation': {
        'aspect_ratio': ['2:3'], 'include_title': 'yes', 'include_authors': True, 'title_template': 5,
        'include_comments': 1, 'extra_instructions': {'a': 1}, 'last_style': ['noir'],
        'custom_styles': [{'name': 'a', 'human_name': 'A', 'template': 'T'}, {'name': 7}, 'x'],
    }}))
    why = {}
    for i in read(tmp_path).items:
        why.setdefault(i.setting, []).append(i.why_not)
    wrong = 'it is not a value calibre writes for this setting'
    assert why['Aspect ratio'][0].startswith('Book AI offers')
    assert why['Render text on the cover'] == [wrong, '']  # include_title not a bool; include_authors carried
    assert why['Title template'] == [wrong]
    assert why['Send book descriptions to AI as context'] == why['Extra instructions'] == why['Cover style'] == [wrong]
    assert why['Custom styles'] == ['they are not styles calibre wrote', '']
    carried = [i for i in read(tmp_path).items if i.carried]
    assert {i.setting for i in carried} == {'Render text on the cover', 'Custom styles'}
    assert [i for i in carried if i.setting == 'Render text on the cover'][0].changes.prefs == {
        'cover_text': {'authors': True}}


def test_quick_actions_of_the_wrong_type_are_counted_out(tmp_path):
    (tmp_path / 'gui.json').write_text(json.dumps({'llm_book_quick_actions': {
        'disabled_default_actions': ['universe'], 'custom_actions': {
            'Good': {'prompt_template': 'Summarize {title}.', 'disabled': False},
            'No prompt': {'disabled': False}, 'Escaped': {'prompt_template': 'a\x1b[2Jb'},
            'Odd disabled': {'prompt_template': 'x', 'disabled': 'no'}, 'Spec a list': ['x']}}}))
    (item,) = read(tmp_path).items
    assert item.carried and '"Good"' in item.value and '4 not carried over: not actions calibre wrote' in item.value
    labels = [a.get('label') for a in item.changes.prefs['library_actions']]
    assert 'Good' in labels and 'Escaped' not in labels

# }}}
