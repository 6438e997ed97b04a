# License: GPLv3 Copyright: the Book AI developers
"""calibre templates are evaluated in calibre's worker process, bounded (issue 26, finding 4):
never in Book AI's own process, one worker for all the templates of a request or a many-books
run, stopped when they take too long or too much memory (the field then as it is, with a
sentence); what is only shown and never sent runs no Python at all, whichever way the template
reaches it; cover_prompt() evaluates nothing by itself."""

import os

import pytest

from calibre.ebooks.metadata.book.base import Metadata

# the code runs as soon as calibre compiles the template (its first line), before evaluate() is called
WHO_RAN = "python:\nimport os; open({path!r}, 'w').write(str(os.getpid()))\ndef evaluate(book, context):\n" \
          "    return 'RAN'\n"


def quoted(template: str) -> str:
    """template as a string of calibre's template language: in double quotes, its lines as they are
    (the Python code within uses single quotes only)."""
    assert '"' not in template
    return f'"{template}"'


def who_ran(path) -> str:
    return WHO_RAN.format(path=str(path))


CODE_PATHS = {
    'python: at the top': lambda p: who_ran(p),
    'through template()': lambda p: f'program: template({quoted(who_ran(p))})',
    'through eval()': lambda p: f'program: eval({quoted(who_ran(p))})',
}


def book(title='The Moving Toyshop'):
    mi = Metadata(title, ['Edmund Crispin'])
    mi.series, mi.series_index = 'Gervase Fen', 3
    return mi


def prompt_module():
    from calibre_plugins.bookai.covers import prompt
    return prompt


@pytest.mark.parametrize('case', list(CODE_PATHS))
def test_a_preview_runs_no_python_whichever_way_it_comes(tmp_path, case):
    sentinel = tmp_path / 'ran'
    template = CODE_PATHS[case](sentinel)
    got = prompt_module().evaluate_texts([book()], {'title': template}, preview=True)
    assert got.texts[0].title == 'The Moving Toyshop'
    assert got.notes == ['The title template may run Python code: nothing is run for a preview, so the title is shown '
                         'as it is. It is used when the cover is made.']
    assert not sentinel.exists()


@pytest.mark.parametrize('case', list(CODE_PATHS))
def test_the_worker_itself_refuses_python_for_a_preview(tmp_path, case):
    """Past the check of what may run code, the worker's formatter compiles no Python: the root."""
    from calibre_plugins.bookai.core import isolated
    p = prompt_module()
    sentinel = tmp_path / 'ran'
    (row,) = isolated.run('covers.prompt', 'evaluate_in_worker',
                          ([p.as_plain_data(book())], {'title': CODE_PATHS[case](sentinel)}, False, 5.0), 30)
    status, text = row['title']
    assert 'RAN' not in text and not sentinel.exists(), (status, text)
    # the same template, where code may run (a cover made): it does, so the case above is one that would
    (row,) = isolated.run('covers.prompt', 'evaluate_in_worker',
                          ([p.as_plain_data(book())], {'title': CODE_PATHS[case](sentinel)}, True, 5.0), 30)
    assert sentinel.exists() and int(sentinel.read_text()) != os.getpid()
    if case != 'through eval()':  # eval() evaluates with no book: calibre 6.13's Python template then fails
        assert row['title'] == ('ok', 'RAN')


def test_a_template_is_run_in_calibres_worker_not_in_book_ais_process(tmp_path):
    sentinel = tmp_path / 'ran'
    got = prompt_module().evaluate_texts([book()], {'title': who_ran(sentinel), 'series': '{series} #{series_index}'})
    assert got.texts[0].title == 'RAN' and got.notes == []
    assert got.texts[0].series in ('Gervase Fen #3', 'Gervase Fen #3.0')
    assert int(sentinel.read_text()) != os.getpid()


LOOPS = {
    'a loop of the template language':
        'program: for a in range(1000): for b in range(1000): for c in range(1000): x = 1 rof rof rof',
    'a backtracking regular expression': '{title:re((a+)+$,x)}',
}


@pytest.mark.parametrize('case', list(LOOPS))
def test_a_template_that_takes_too_long_gives_the_field_and_a_sentence(monkeypatch, case):
    p = prompt_module()
    monkeypatch.setattr(p, 'TEMPLATE_SECONDS', 0.5)
    books = [book('a' * 40 + 'b'), book('a' * 41 + 'b'), book()]
    got = p.evaluate_texts(books, {'title': LOOPS[case], 'authors': '{authors}!'})
    assert [t.title for t in got.texts] == [mi.title for mi in books]
    assert [t.authors for t in got.texts] == ['Edmund Crispin!'] * 3  # the others still evaluated
    assert got.notes == ['The title template took longer than Book AI allows (0.5 seconds): the title is used as it is '
                         'for 3 of 3 books.']


def test_a_template_that_takes_too_much_memory_gives_the_field_and_a_sentence():
    p = prompt_module()
    doubling = "program: x = 'abcdefgh'; for i in range(0, 40, 1, 40): x = strcat(x, x) rof; x"
    got = p.evaluate_texts([book()], {'title': doubling})
    assert got.texts[0].title == 'The Moving Toyshop'
    (note,) = got.notes
    assert note.startswith(('The title template failed', 'The title template took longer',
                            'The templates for the title, authors and series could not be evaluated'))


def test_a_failing_template_gives_the_field_and_calibres_words():
    got = prompt_module().evaluate_texts([book(), book()], {'series': "program: raise('broken')", 'title': '{title'})
    assert got.texts[0].series == 'Gervase Fen, book 3' and got.texts[1].title == 'The Moving Toyshop'
    assert len(got.notes) == 2 and all('failed for 2 of 2 books' in n for n in got.notes)


def test_one_worker_for_all_the_books_and_none_without_templates(monkeypatch):
    from calibre_plugins.bookai.core import isolated
    p = prompt_module()
    calls = []
    real = isolated.run

    def counted(*args, **kwargs):
        calls.append(args[:2])
        return real(*args, **kwargs)
    monkeypatch.setattr(isolated, 'run', counted)
    books = [book(f'Book {n}') for n in range(25)]
    choices = p.CoverChoices('A style.', True, True, True, False, '3:4', {'title': 'program: uppercase($title)'})
    prompts, notes = p.cover_prompts(books, choices)
    assert calls == [('covers.prompt', 'evaluate_in_worker')] and notes == []
    assert all(f'Title: "BOOK {n}"' in prompts[n] for n in range(25))
    p.cover_prompts(books, p.CoverChoices('A style.', True, True, True, False, '3:4', {'title': ' '}))
    assert len(calls) == 1  # nothing to evaluate: no worker


def test_cover_prompt_by_itself_evaluates_nothing(monkeypatch):
    from calibre_plugins.bookai.core import isolated
    p = prompt_module()

    def refused(*args, **kwargs):
        raise AssertionError('cover_prompt() started a worker')
    monkeypatch.setattr(isolated, 'run', refused)
    choices = p.CoverChoices('A style.', True, True, True, False, '3:4', {'title': 'program: uppercase($title)'})
    sent = p.cover_prompt(book(), choices)
    assert 'Title: "The Moving Toyshop"' in sent
    assert 'Title: "The Moving Toyshop"' in p.refine_prompt(book(), choices, 'darker')
