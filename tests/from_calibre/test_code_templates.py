# License: GPLv3 Copyright: the Book AI developers
"""Settings carry values, never code (issue 26, finding 4): a template of calibre's AI covers
that calibre would run as Python (at its top, or through template(), eval(), re_group() or
list_re_group(), which evaluate a string as a template) is never carried over by --yes; it is
listed whole, and carried over only with its own consent. Quick actions' prompts and cover
styles' texts are values: carried over as text and never evaluated."""

import json
from pathlib import Path

import pytest

from helpers.books import quick_start_epub

SENTINEL_CODE = "python:\ndef evaluate(book, context):\n    open({path!r}, 'w').write('ran')\n    return 'RAN'\n"


def code(path) -> str:
    return SENTINEL_CODE.format(path=str(path))


def escaped(template: str) -> str:
    """template as a string of calibre's template language (in single quotes)."""
    return template.replace('\\', '\\\\').replace("'", "\\'").replace('\n', '\\n')


RUNS_CODE = {
    'python: at the top': lambda p: code(p),
    'through template()': lambda p: f"program: template('{escaped(code(p))}')",
    'through eval()': lambda p: f"program: eval('{escaped(code(p))}')",
    'built from pieces': lambda p: "program: template(strcat('pyt', 'hon:', 'def evaluate(b, c): return 1'))",
    'through re_group()': lambda p: "program: re_group($title, '(.*)', 'py' & 'thon:x')",
    'through list_re_group()': lambda p: "{tags:'list_re_group($, \\',\\', \\'.\\', \\'(.)\\', \\'x\\')'}",
    'Python in any case': lambda p: 'PYTHON: whatever',
}
VALUES = ['{title}', 'program: uppercase($title)', '{series} #{series_index}', '{authors:sublist(0,1,&)}',
          "program: re($title, 'a', 'b')", '']


@pytest.mark.parametrize('case', list(RUNS_CODE))
def test_templates_that_may_run_code_are_told_apart(tmp_path, case):
    from calibre_plugins.bookai.covers.prompt import runs_code
    assert runs_code(RUNS_CODE[case](tmp_path / 'ran'))


@pytest.mark.parametrize('template', VALUES)
def test_templates_of_calibres_language_alone_are_values(template):
    from calibre_plugins.bookai.covers.prompt import runs_code
    assert not runs_code(template)


def cover_file(tmp_path: Path, **choices) -> None:
    (tmp_path / 'gui.json').write_text(json.dumps({'llm-cover-generation': {
        'aspect_ratio': '2:3', 'title_template': '{title:uppercase()}', 'authors_template': '',
        'series_template': '{series}', **choices}}))


class NoKeys:
    def set(self, *args):
        pass


def test_a_python_template_is_shown_whole_and_carried_only_with_its_own_consent(tmp_path, prefs):
    from calibre_plugins.bookai.from_calibre.carry_over import carry_over, read
    template = code(tmp_path / 'ran') + '    # and a second line\n' * 30  # longer than any one-line listing
    cover_file(tmp_path, authors_template=template)
    found = read(str(tmp_path))
    (item,) = found.code_items()
    assert item.setting == 'Authors template' and item.code == template
    summary = found.summary()
    assert 'only if you agree: it runs as Python code. The whole template:' in summary
    assert all(f'    | {line}' in summary for line in template.splitlines())  # whole, line by line
    prefs['cover_templates'] = {'title': '', 'authors': 'mine', 'series': ''}
    assert carry_over(found, secrets=NoKeys()) == []
    assert prefs['cover_templates'] == {'title': '{title:uppercase()}', 'authors': 'mine', 'series': '{series}'}
    assert carry_over(found, secrets=NoKeys(), with_code=True) == []
    assert prefs['cover_templates'] == {'title': '{title:uppercase()}', 'authors': template, 'series': '{series}'}
    assert not (tmp_path / 'ran').exists()  # reading and carrying over run nothing


def test_a_template_with_a_control_character_is_not_carried(tmp_path):
    from calibre_plugins.bookai.from_calibre.carry_over import read
    cover_file(tmp_path, title_template='{title}\x1b[2J')
    items = {i.setting: i for i in read(str(tmp_path)).items}
    assert items['Title template'].why_not == 'it has a control character'
    assert '\x1b' not in read(str(tmp_path)).summary()


def test_prompts_and_styles_are_values_carried_as_text_and_never_run(tmp_path, prefs):
    """A quick action's prompt and a cover style's text are sent as they are: a "python:" in them
    is words, not code (conversation.actions.fill_template and covers.prompt never evaluate them)."""
    from calibre.ebooks.metadata.book.base import Metadata
    from calibre_plugins.bookai.conversation.actions import fill_template
    from calibre_plugins.bookai.covers.prompt import CoverChoices, cover_prompt
    from calibre_plugins.bookai.from_calibre.carry_over import carry_over, read
    prompt, style = code(tmp_path / 'ran-action'), code(tmp_path / 'ran-style')
    (tmp_path / 'gui.json').write_text(json.dumps({
        'llm_book_quick_actions': {'custom_actions': {'Sneaky': {'prompt_template': prompt, 'disabled': False}}},
        'llm-cover-generation': {'custom_styles': [{'name': 'sneaky', 'human_name': 'Sneaky', 'template': style}]}}))
    found = read(str(tmp_path))
    assert not found.code_items()
    assert carry_over(found, secrets=NoKeys()) == []
    saved = {a.get('label'): a for a in prefs['library_actions']}
    assert saved['Sneaky']['template'] == prompt
    assert [s for s in prefs['cover_styles'] if s['name'] == 'sneaky'][0]['template'] == style
    assert fill_template(prompt, {'title': 'T'}) == prompt
    sent = cover_prompt(Metadata('T', ['A']), CoverChoices(style, True, True, True, False, '3:4'))
    assert style.strip() in sent
    assert not (tmp_path / 'ran-action').exists() and not (tmp_path / 'ran-style').exists()


def test_import_calibre_yes_leaves_a_python_template_out_and_says_how(cli, sandbox, tmp_path):
    sentinel = tmp_path / 'ran'
    sandbox.config.mkdir(parents=True, exist_ok=True)
    cover_file(sandbox.config, title_template=code(sentinel))
    r = cli('import-calibre')
    assert r.returncode == 0, r
    for line in code(sentinel).splitlines():
        assert f'    | {line}' in r.stdout  # listed whole before anything is carried
    r = cli('import-calibre', '--yes')
    assert r.returncode == 0, r
    assert 'Not carried over: Title template, a template that runs as Python code' in r.stdout
    assert 'import-calibre --yes --with-python-templates' in r.stdout
    saved = json.loads((sandbox.config / 'plugins' / 'bookai.json').read_text('utf-8'))
    assert saved['cover_templates']['title'] == '' and saved['cover_templates']['series'] == '{series}'
    lib = sandbox.make_library(quick_start_epub())
    r = cli('cover', '--library', lib, '1', '--prompt-only')
    assert r.returncode == 0 and 'Title: "Quick Start Guide"' in r.stdout, r
    r = cli('import-calibre', '--yes', '--with-python-templates')
    assert r.returncode == 0 and 'Not carried over' not in r.stdout, r
    saved = json.loads((sandbox.config / 'plugins' / 'bookai.json').read_text('utf-8'))
    assert saved['cover_templates']['title'] == code(sentinel)
    # the preview sends nothing and runs nothing: the field as it is, and why
    r = cli('cover', '--library', lib, '1', '--prompt-only')
    assert r.returncode == 0 and 'Title: "Quick Start Guide"' in r.stdout, r
    assert 'The title template may run Python code: nothing is run for a preview' in r.stderr
    assert not sentinel.exists()


def test_the_offer_shows_calibres_address_without_its_password_and_a_look_alike_as_punycode():
    from calibre_plugins.bookai.from_calibre.carry_over import value_words
    words = value_words('api_url', 'https://user:hunter2-secret@раураl.com/v1')
    assert 'hunter2' not in words and 'user' not in words
    assert 'xn--' in words and 'раураl' not in words
