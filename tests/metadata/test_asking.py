# License: GPLv3 Copyright: the Book AI developers
"""AI metadata asked of a model (metadata/asking.py): by the fields' JSON Schema, read bounded, each
field checked, only the values that differ from the book's proposed; a service that refuses the
schema asked again without it; many books a few requests at once, and Stop.

The model is a scripted one (helpers.scripted_model: a real provider of Book AI's talks to it over
HTTP) where a test needs an exact answer or timing, and the demo's Qwen2.5-Coder-0.5B in a real
llama-server, whose JSON-schema output is what a reader's local server gives."""

import json
import threading
import time

import pytest

from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.metadata.asking import Asking, BookRead, ask_book, ask_books, parsed_answer
from calibre_plugins.bookai.metadata.fields import custom_field, standard_field
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.peers import LlamaServer
from helpers.scripted_model import ScriptedModel

TAGS, DESCRIPTION, LANGUAGES = standard_field('tags'), standard_field('comments'), standard_field('languages')
MOOD = custom_field('#mood', {'datatype': 'enumeration', 'name': 'Mood',
                              'display': {'enum_values': ['Dark', 'Hopeful', 'Funny']}}, 'the mood of the book')
FIELDS = (TAGS, DESCRIPTION, LANGUAGES, MOOD)
VOCABULARY = {'tags': ['Science Fiction', 'Classics']}
GOOD = {'tags': ['science fiction', 'Lighthouses'], 'description': 'A keeper and his light.',
        'languages': ['English'], 'custom_mood': 'hopeful'}


def book(n=1, **values):
    return BookRead('lib', n, f'Book {n}', 'Title: The Keeper\nAuthors: A. Writer',
                    dict({'tags': ('Classics',), 'comments': None, 'languages': ('eng',), '#mood': None}, **values))


def provider_at(url):
    return get_provider('openai_compatible', settings={'base_url': url + '/v1', 'model': 'tiny', 'temperature': 0.0})


def test_an_answer_is_read_whatever_was_written_around_it():
    chatty = 'Sure! Here it is:\n```json\n' + json.dumps(GOOD) + '\n```\nHope this helps.'
    found, problem = parsed_answer(chatty, FIELDS, VOCABULARY)
    assert problem == '' and found['tags'].value == ('Science Fiction', 'Lighthouses')
    assert found['#mood'].value == 'Hopeful' and found['languages'].value == ('eng',)
    for bad in ('no JSON at all', '[1, 2, 3]', '{"tags": ', None, 42, '{' * 100_000 + '}' * 100_000, 'x' * 50_000):
        found, problem = parsed_answer(bad, FIELDS)
        assert found == {} and problem, bad


def test_one_book_asked_by_its_schema_and_only_what_differs_proposed():
    with ScriptedModel(lambda request: json.dumps(dict(GOOD, languages=['eng']))) as model:
        run = Asking(provider_at(model.url), 'tiny', FIELDS, VOCABULARY)
        answer = ask_book(run, book())
        described = ask_book(run, book(2, comments='<p>Mine.</p>'))
    assert answer.error == '' and {p.key for p in answer.proposals} == {'tags', 'comments', '#mood'}  # not languages
    tags = next(p for p in answer.proposals if p.key == 'tags')
    assert tags.old == ('Classics',) and tags.new == ('Science Fiction', 'Lighthouses')
    assert tags.new_tags == ('Lighthouses',) and 'Tags: new to the library: Lighthouses' in answer.notes
    request = model.requests[0]
    schema = request['response_format']['json_schema']['schema']
    assert request['response_format']['type'] == 'json_schema'
    assert schema['required'] == ['tags', 'description', 'languages', 'custom_mood']
    assert 'Science Fiction' in request['messages'][-1]['content']  # the library's tags, named
    # a book with a description is not asked for one
    assert 'description' not in model.requests[1]['response_format']['json_schema']['schema']['properties']
    assert 'comments' not in {p.key for p in described.proposals}


def test_a_service_that_refuses_the_schema_is_asked_without_it():
    def answer(request):
        if 'response_format' in request:
            return 400, {'error': {'message': 'response_format is not supported', 'code': 400}}
        return json.dumps(GOOD)
    with ScriptedModel(answer) as model:
        run = Asking(provider_at(model.url), 'tiny', FIELDS)
        first, second = ask_book(run, book()), ask_book(run, book(2))
    assert first.error == second.error == '' and first.proposals and not run.structured
    assert ['response_format' in r for r in model.requests] == [True, False, False]


def test_an_answer_out_of_shape_is_said_and_proposes_nothing():
    hostile = {'tags': ['A whole sentence that describes the book at great length instead'] + ['t'] * 300,
               'description': '<script>alert(1)</script><p onclick="x()">Fine words.</p>',
               'languages': ['Gibberishese'], 'custom_mood': 'Melancholy', 'extra': 'ignored'}
    with ScriptedModel(lambda request: json.dumps(hostile)) as model:
        answer = ask_book(Asking(provider_at(model.url), 'tiny', FIELDS), book())
    by_key = {p.key: p for p in answer.proposals}
    assert set(by_key) == {'tags', 'comments'}
    assert by_key['tags'].new == ('t',)
    assert 'script' not in by_key['comments'].new and 'onclick' not in by_key['comments'].new
    assert any('sentence' in n for n in answer.notes) and any('Mood' in n for n in answer.notes)


def test_many_books_a_few_at_once_and_stop():
    lock = threading.Lock()
    now, most = [0], [0]

    def answer(request):
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        time.sleep(0.3)
        with lock:
            now[0] -= 1
        return json.dumps(GOOD)
    seen = []
    with ScriptedModel(answer) as model:
        run = Asking(provider_at(model.url), 'tiny', FIELDS)
        answers = list(ask_books(run, [book(n) for n in range(1, 10)], 3, progress=lambda d, t: seen.append((d, t))))
        assert sorted(a.book.book_id for a in answers) == list(range(1, 10)) and all(not a.error for a in answers)
        assert most[0] == 3 and seen[-1] == (9, 9)
        asked = len(model.requests)
        cancel = CancelToken()
        stopped = []
        for a in ask_books(run, [book(n) for n in range(1, 30)], 2, cancel):
            stopped.append(a)
            cancel.cancel()
        time.sleep(0.5)
    assert len(stopped) <= 2 and len(model.requests) - asked <= 4  # none asked after Stop


@pytest.mark.hosts('forky', why="the real model's metadata, the same on every host")
def test_the_demos_model_fills_a_books_metadata_by_its_schema():
    with LlamaServer('qwen', ctx=4096, extra_args=('--temp', '0', '-n', '300')) as server:
        provider = get_provider('openai_compatible', settings={'base_url': server.base_url + '/v1',
                                                               'model': server.model, 'temperature': 0.0})
        run = Asking(provider, server.model, FIELDS, VOCABULARY)
        read = BookRead('lib', 1, 'Pride and Prejudice', 'Title: Pride and Prejudice\nAuthors: Jane Austen\n'
                        'Published: 1813', {'tags': (), 'comments': None, 'languages': (), '#mood': None},
                        'It is a truth universally acknowledged, that a single man in possession of a good fortune, '
                        'must be in want of a wife.')
        answer = ask_book(run, read)
    assert answer.error == '', answer.error
    keys = {p.key for p in answer.proposals}
    assert {'tags', 'comments'} <= keys, answer
    assert all(p.new for p in answer.proposals)


def test_a_description_in_another_language_than_asked_is_proposed_with_a_note():
    french = ("Une jeune femme et sa sœur arrivent dans la maison de leur tante, qui les accueille avec des "
              "secrets pour chacune et une lettre que personne n'a lue.")
    with ScriptedModel(lambda request: json.dumps(dict(GOOD, description=french))) as model:
        answer = ask_book(Asking(provider_at(model.url), 'tiny', FIELDS, VOCABULARY, 'English'), book())
    assert 'Write the texts in English.' in model.requests[0]['messages'][0]['content'] + \
        model.requests[0]['messages'][-1]['content']
    comments = next(p for p in answer.proposals if p.key == 'comments')
    said = 'Comments: it seems written in French, not in English: read it before you apply it.'
    assert said in comments.notes and said in answer.notes
