# License: GPLv3 Copyright: the Book AI developers
"""X-Ray (conversation/xray.py) on the real novel, Pride and Prejudice, with a scripted model
behind a real provider (helpers.scripted_model): what comes after the reader's place is never
there, entities merge across chapters and their descriptions follow the place, where they
appear is found in the text, hostile answers end in words with nothing lost, the cache keeps
what was read (moving on sends only the new chapters; a damaged file is set aside), Stop keeps
what was done, and "Who or what is this?" builds a question of passages before the place."""

import json
import os
from pathlib import Path

import pytest

from calibre_plugins.bookai.conversation import xray as xr
from calibre_plugins.bookai.conversation.forget import forget_everything
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.errors import AuthenticationFailed
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.grounding.index import Index, passages
from calibre_plugins.bookai.grounding.scopes import NoPlace
from calibre_plugins.bookai.grounding.so_far import read_until
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.novel import EPUB
from helpers.scripted_model import ScriptedModel, passages_of, roster_answer

ROSTER = [
    {'name': 'Elizabeth Bennet', 'other_names': ['Elizabeth', 'Lizzy', 'Eliza'], 'description': 'The second daughter'},
    {'name': 'Mr. Bingley', 'other_names': ['Bingley'], 'description': 'A rich young man'},
    {'name': 'Mr. Darcy', 'other_names': ['Darcy'], 'description': 'His proud friend'},
    {'name': 'Netherfield', 'kind': 'place', 'description': 'The house Bingley takes'},
    {'name': 'Longbourn', 'kind': 'place', 'description': 'The Bennets\' home'},
    {'name': 'Pemberley', 'kind': 'place', 'description': 'Darcy\'s estate'},
    {'name': 'Mr. Wickham', 'other_names': ['Wickham'], 'description': 'An officer'},
    {'name': 'Lady Catherine de Bourgh', 'other_names': ['Lady Catherine'], 'description': 'A great lady'},
]
# what a model that knows the book might claim at any place
SPOILERS = [{'name': 'Mr. Wickham', 'description': 'He will elope with Lydia.'},
            {'name': 'Pemberley', 'kind': 'place'}, {'name': 'Lady Catherine de Bourgh'},
            {'name': 'Elizabeth Darcy', 'description': 'Elizabeth, once married.'}]
SMALL = xr.Bounds(part_tokens=8000)


@pytest.fixture(scope='module')
def novel():
    return read_epub(EPUB)


def before(novel, chapter: int) -> float:
    """The place just before the novel's chapter (the EPUB's chapter n is the novel's Chapter n)."""
    return (novel.chapters[chapter].start - 0.5) / novel.length


def provider_at(url: str):
    return get_provider('openai_compatible', settings={'base_url': url + '/v1', 'model': 'tiny', 'temperature': 0.0})


def key(book='lib:1', model='tiny'):
    return xr.XRayKey(book, 'openai_compatible', model)


def build(novel, position, model, cache, **kw):
    return xr.build_xray(novel, position, provider_at(model.url), key(), cache=cache, bounds=kw.pop('bounds', SMALL),
                         **kw)


def names(x):
    return {e.name for e in x.entities}


def test_nothing_after_the_place_even_when_the_model_claims_it(novel, tmp_path):
    cache = xr.XRayCache(str(tmp_path / 'xray'))
    with ScriptedModel(roster_answer(ROSTER, SPOILERS)) as model:
        early = build(novel, before(novel, 6), model, cache)
        sent = [m['content'] for r in model.requests for m in r['messages']]
    assert {'Elizabeth Bennet', 'Mr. Bingley', 'Mr. Darcy', 'Netherfield', 'Longbourn'} <= names(early)
    # Wickham (Chapter 15), Lady Catherine (13), Pemberley (6) come later: absent, whatever the model says
    assert not names(early) & {'Mr. Wickham', 'Pemberley', 'Lady Catherine de Bourgh', 'Elizabeth Darcy'}
    assert all('Wickham' not in e.description for e in early.entities)
    until = read_until(novel, before(novel, 6))
    after = next(p for p in novel.paragraphs if p.start + len(p.text) > until)
    assert not any(after.text[:60] in body for body in sent)  # what follows the place was never sent
    assert len(model.requests) == len(early.chapters_read) and early.complete
    # every request asks for the answer's shape (structured output)
    assert all(r['response_format']['type'] == 'json_schema' for r in model.requests)


def test_entities_merge_and_are_described_as_of_the_place(novel, tmp_path):
    cache = xr.XRayCache(str(tmp_path / 'xray'))
    with ScriptedModel(roster_answer(ROSTER)) as model:
        x = build(novel, before(novel, 16), model, cache)
    by_name = {e.name: e for e in x.entities}
    liz = by_name['Elizabeth Bennet']
    assert set(liz.other_names) == {'Elizabeth', 'Lizzy', 'Eliza'}
    assert sum(e.name in ('Elizabeth', 'Lizzy', 'Eliza') for e in x.entities) == 0  # one entity, not four
    assert liz.description == 'The second daughter (as of Chapter 15)'  # the latest chapter read that names her
    # where she appears is found in the text: Lizzy in Chapter 1, then in (nearly) every chapter
    assert liz.first.chapter == 'Chapter 1' and liz.chapters[0] == 1
    wickham = by_name['Mr. Wickham']
    assert wickham.first.chapter == 'Chapter 15' and wickham.chapters == (15,)
    assert wickham.appearances(x.chapters_read) == [0] * (len(x.chapters_read) - 1) + [wickham.counts[0]]
    assert by_name['Pemberley'].first.chapter == 'Chapter 6'
    # in the order they first appear, each first place a fraction and a CFI the viewer opens
    firsts = [e.first.position for e in x.entities]
    assert firsts == sorted(firsts) and all(e.first.cfi.startswith('epubcfi(/') for e in x.entities)
    # the citations are passages read, each where it is
    read = {p.number: p for p in passages(novel) if p.end <= x.until}
    for e in x.entities:
        assert e.citations and all(c.number in read and c.text == read[c.number].text for c in e.citations)
    assert x.search('lizzy') == [liz] and x.search('estate') == [by_name['Pemberley']]
    assert x.find("Wickham's") is wickham and x.find('Mr. Darcy') is by_name['Mr. Darcy']
    assert x.find('said Elizabeth Bennet quietly') is liz and x.find('nobody') is None


def test_moving_on_sends_only_the_new_text(novel, tmp_path):
    cache = xr.XRayCache(str(tmp_path / 'xray'))
    middle = (novel.chapters[5].start + novel.chapters[6].start) // 2 / novel.length  # inside Chapter 5
    with ScriptedModel(roster_answer(ROSTER)) as model:
        first = build(novel, middle, model, cache)
        asked = len(model.requests)
        again = build(novel, middle, model, cache)
        assert len(model.requests) == asked and again.entities == first.entities and again.requests == 0
        on = build(novel, before(novel, 8), model, cache)
        # Chapter 5 again, now whole (it replaces the part read before), then 6 and 7
        chapters = [passages_of(r)[0][1] for r in model.requests[asked:]]
        assert chapters == ['Chapter 5', 'Chapter 6', 'Chapter 7'] and on.requests == 3
        back = build(novel, middle, model, cache)  # going back: the part of Chapter 5 read then, again
        assert len(model.requests) == asked + 4 and names(back) == names(first)
    records, problem = cache.records(key())
    assert not problem and sorted((r.chapter, r.complete) for r in records if r.chapter == 5) == [(5, False), (5, True)]
    plan = xr.plan_xray(novel, before(novel, 9), provider_at('http://127.0.0.1:9'), key(), cache, SMALL)
    assert [c.title for c in plan.chapters] == ['Chapter 8'] and plan.local and plan.cost is None
    assert plan.tokens >= plan.chapters[0].tokens


def test_the_estimate_of_an_online_provider(novel, tmp_path):
    openai = get_provider('openai', settings={'model': 'gpt-4o-mini'})
    plan = xr.plan_xray(novel, before(novel, 4), openai, xr.XRayKey('lib:1', 'openai', 'gpt-4o-mini'),
                        xr.XRayCache(str(tmp_path)))
    assert not plan.local and plan.cost is not None and 0 < plan.cost.amount < 0.05
    assert len(plan.chapters) == 4 and plan.tokens > sum(c.tokens for c in plan.chapters)  # with the instructions
    assert 'about' in plan.said() and '4 chapters' in plan.said()
    with pytest.raises(NoPlace):
        xr.plan_xray(novel, None, openai, xr.XRayKey('lib:1', 'openai', 'gpt-4o-mini'))


HOSTILE = {
    'not JSON': 'Here are the characters: Elizabeth, Jane.',
    'no list': json.dumps({'entities': 'Elizabeth'}),
    'wrong types': json.dumps({'entities': [None, 1, 'x', [], {'name': 5}, {'name': ['Elizabeth']},
                                            {'name': 'Elizabeth', 'kind': 7, 'other_names': 'Lizzy',
                                             'description': {'a': 1}, 'passages': ['1', 1.5, True, -3, 10 ** 30]}]}),
    'markup and controls': json.dumps({'entities': [{
        'name': 'Elizabeth', 'kind': 'character', 'other_names': ['<script>alert(1)</script>', 'Lizzy\x1b[2J'],
        'description': '<b>Bold</b> \x1b]52;c;cHduZWQ=\x07 and \x9b31m red <script>x()</script>',
        'passages': [1]}]}),
    'too many': json.dumps({'entities': [{'name': 'Elizabeth', 'kind': 'character', 'other_names': [],
                                          'description': str(i), 'passages': [1]} for i in range(5000)]}),
    'long fields': json.dumps({'entities': [{'name': 'E' * 500, 'kind': 'character', 'other_names': ['x' * 500] * 50,
                                             'description': 'word ' * 5000, 'passages': list(range(1000))},
                                            {'name': 'Elizabeth', 'kind': 'character', 'other_names': ['Lizzy'] * 50,
                                             'description': 'word ' * 5000, 'passages': list(range(1000))}]}),
    'cut short': '{"entities": [{"name": "Elizabeth", "kind": "character", "other_names": [], "description": '
                 '"x", "passages": [1]}, {"name": "Jane", "kind": "chara',
    'deep': '{"entities": ' + '[' * 100000 + ']' * 100000 + '}',
    'huge': json.dumps({'entities': [{'name': 'Elizabeth', 'description': 'x' * (2 * xr.MAX_ANSWER_CHARS)}]}),
    'fenced': '```json\n' + json.dumps({'entities': [{'name': 'Lizzy', 'kind': 'person', 'other_names': [],
                                                      'description': 'ok', 'passages': [1]}]}) + '\n```',
}


@pytest.mark.parametrize('case', sorted(HOSTILE))
def test_hostile_answers_end_in_words_with_nothing_lost(novel, tmp_path, case):
    cache = xr.XRayCache(str(tmp_path / 'xray'))
    good = roster_answer(ROSTER)
    with ScriptedModel(good) as model:
        kept = build(novel, before(novel, 2), model, cache)  # Chapters 0 and 1 kept first
    assert kept.complete
    file = Path(cache.file_of(key()))
    before_bytes = file.read_bytes()
    third = before(novel, 3)
    with ScriptedModel(lambda request: HOSTILE[case]) as model:
        x = build(novel, third, model, cache)
    assert len(model.requests) == 1  # only Chapter 2 was asked for
    # nothing lost: what was kept stays, whatever the answer
    assert 'Mr. Bingley' in names(x) and x.find('Lizzy') is not None  # ("Elizabeth Bennet" is first in Chapter 3)
    records, problem = cache.records(key())
    assert not problem and {r.chapter for r in records} >= {0, 1}
    for e in x.entities:
        for text in (e.name, *e.other_names, e.description):
            assert not any(c in text for c in '\x1b\x9b\x07'), text
            assert len(text) <= xr.MAX_DESCRIPTION_CHARS
        assert len(e.other_names) <= xr.MAX_OTHER_NAMES and len(e.citations) <= xr.MAX_CITATIONS
        assert all(c.place.position <= third for c in e.citations)
    unreadable = case in ('not JSON', 'no list', 'deep', 'huge')
    assert bool(x.notices) == (case not in ('wrong types', 'markup and controls', 'fenced', 'long fields')), x.notices
    assert all(len(n.split()) >= 4 for n in x.notices)
    assert (2 in x.missing) == unreadable  # an answer that cannot be read: its chapter is read again next time
    if unreadable:
        assert file.read_bytes() == before_bytes
    if case == 'markup and controls':  # kept as plain text, the controls gone
        liz = x.find('Elizabeth')
        assert '<script>' in liz.description and '<script>alert(1)</script>' not in liz.other_names  # not in text
    if case == 'cut short':
        assert 'cut short' in ' '.join(x.notices)


def test_three_unreadable_answers_stop_the_run_in_words(novel, tmp_path):
    cache = xr.XRayCache(str(tmp_path / 'xray'))
    with ScriptedModel(lambda request: 'I cannot do that.') as model:
        x = build(novel, before(novel, 10), model, cache)
    assert len(model.requests) == xr.MAX_FAILED_ANSWERS and not x.entities and len(x.missing) == 10
    assert any('stopped' in n for n in x.notices)
    assert not os.path.exists(cache.file_of(key()))


def test_a_service_that_refuses_the_schema_is_asked_without_it(novel, tmp_path):
    good = roster_answer(ROSTER)

    def answer(request):
        if 'response_format' in request:
            return 400, {'error': {'message': 'response_format is not supported', 'code': 400}}
        return good(request)
    with ScriptedModel(answer) as model:
        x = build(novel, before(novel, 4), model, xr.XRayCache(str(tmp_path)))
    assert x.complete and 'Elizabeth Bennet' in names(x)
    assert 'response_format' in model.requests[0] and all('response_format' not in r for r in model.requests[1:])


def test_a_chapter_too_long_for_the_model_is_sent_in_halves(novel, tmp_path):
    good = roster_answer(ROSTER)

    def answer(request):  # Chapter 6, of 13,000 characters, alone does not fit; its halves do
        if len(request['messages'][-1]['content']) > 14000:
            return 400, {'error': {'code': 400, 'message': 'the request exceeds the available context size',
                                   'type': 'exceed_context_size_error'}}
        return good(request)
    with ScriptedModel(answer) as model:
        x = build(novel, before(novel, 7), model, xr.XRayCache(str(tmp_path)))
    assert x.complete and {'Elizabeth Bennet', 'Mr. Darcy', 'Pemberley'} <= names(x)
    too_long = [r for r in model.requests if len(r['messages'][-1]['content']) > 14000]
    assert len(too_long) == 1 and passages_of(too_long[0])[0][1] == 'Chapter 6'
    after = model.requests[model.requests.index(too_long[0]) + 1:]
    assert len(after) >= 2 and {passages_of(r)[0][1] for r in after} == {'Chapter 6'}  # in parts that fit
    assert all('response_format' in r for r in model.requests)  # still asked with its schema


def test_stop_and_provider_errors_keep_what_was_done(novel, tmp_path):
    cache = xr.XRayCache(str(tmp_path / 'xray'))
    good = roster_answer(ROSTER)
    cancel = CancelToken()

    def answer(request):
        if len(seen) == 2:
            cancel.cancel()
        seen.append(1)
        return good(request)
    seen: list = []
    shown = []
    with ScriptedModel(answer) as model:
        with pytest.raises(Cancelled):
            build(novel, before(novel, 6), model, cache, cancel=cancel, progress=lambda *a: shown.append(a))
    assert shown[:2] == [(0, 6, novel.chapters[0].title), (1, 6, 'Chapter 1')]
    assert {r.chapter for r in cache.records(key())[0]} == {0, 1}
    with ScriptedModel(lambda request: (401, {'error': {'message': 'Invalid API key', 'code': 401}})) as model:
        with pytest.raises(AuthenticationFailed):
            build(novel, before(novel, 6), model, cache)
    assert {r.chapter for r in cache.records(key())[0]} == {0, 1}
    with ScriptedModel(good) as model:
        x = build(novel, before(novel, 6), model, cache)
    assert len(model.requests) == 4 and x.complete


@pytest.mark.parametrize('damage', ['garbage', 'truncated', 'wrong types', 'another book', 'folder', 'too large'])
def test_a_damaged_cache_is_set_aside_and_made_again(novel, tmp_path, damage):
    cache = xr.XRayCache(str(tmp_path / 'xray'))
    with ScriptedModel(roster_answer(ROSTER)) as model:
        build(novel, before(novel, 3), model, cache)
        path = Path(cache.file_of(key()))
        good = json.loads(path.read_text())
        if damage == 'garbage':
            path.write_bytes(b'\x00\xff not json')
        elif damage == 'truncated':
            path.write_bytes(path.read_bytes()[:100])
        elif damage == 'wrong types':
            good['records'][-1]['mentions'][0]['name'] = {'x': 1}
            path.write_text(json.dumps(good))
        elif damage == 'another book':
            good['book'] = 'lib:2'
            path.write_text(json.dumps(good))
        elif damage == 'folder':
            path.unlink()
            path.mkdir()
        else:
            with open(path, 'ab') as f:
                f.truncate(xr.MAX_CACHE_BYTES + 1)
        asked = len(model.requests)
        x = build(novel, before(novel, 3), model, cache)
        assert len(model.requests) == asked + 3  # read again
    assert x.complete and any('damaged' in n for n in x.notices), x.notices
    assert os.path.exists(str(path) + '.damaged') and path.is_file()
    assert not cache.records(key())[1]


def test_the_cache_is_per_model_and_language_and_forgotten(novel, tmp_path, prefs):
    cache = xr.XRayCache(str(tmp_path / 'xray'))
    with ScriptedModel(roster_answer(ROSTER)) as model:
        build(novel, before(novel, 2), model, cache)
        assert xr.cached_xray(novel, before(novel, 2), key(model='other'), cache).missing == (0, 1)
        assert xr.cached_xray(novel, before(novel, 2), key(), cache).complete
        assert not xr.cached_xray(novel, before(novel, 3), key(), cache).complete
    assert oct(os.stat(cache.file_of(key())).st_mode & 0o777) == '0o600'
    done = forget_everything(history_folder=str(tmp_path / 'history'), cache_folder=str(tmp_path / 'text'),
                             prefs=prefs, xray_folder=cache.folder, secrets=EmptySecrets())
    assert done.xrays == 1 and not os.path.exists(cache.folder)


class EmptySecrets:
    def delete_all(self, names):
        return 0


def test_consent_is_asked_once_per_book_of_an_online_provider(prefs):
    online = get_provider('openai', settings={'model': 'gpt-4o-mini'})
    local = provider_at('http://127.0.0.1:9')
    assert not xr.needs_consent('lib:1', local)
    assert xr.needs_consent('lib:1', online)
    xr.remember_consent('lib:1', online)
    assert not xr.needs_consent('lib:1', online) and xr.needs_consent('lib:2', online)
    assert 'lib:1|openai|xray' in prefs['book_text_consent']


def test_who_is_this_asks_from_the_xray_and_the_passages_before_the_place(novel, tmp_path, prefs):
    position = before(novel, 16)
    with ScriptedModel(roster_answer(ROSTER)) as model:
        x = build(novel, position, model, xr.XRayCache(str(tmp_path)))
    until = read_until(novel, position)
    q = xr.who_is("Wickham's", novel, position, x, budget=800)
    assert q.spoiler_safe and q.passages and q.excerpt.until == until
    assert 'What the X-Ray says of it so far: Mr. Wickham (character' in q.text
    sent = q.excerpt.passages
    assert all(p.end <= until for p in sent) and all('Wickham' in p.text for p in sent)
    assert sent[0].number == x.find('Wickham').first_passage  # where he first appears goes first
    assert sum(len(p.text) // 4 + 1 for p in sent) <= 800 and len(q.places) == len(sent)
    # no X-Ray: the passages naming it; nothing named: the best matches by words, still before the place
    bare = xr.who_is('Netherfield', novel, position)
    assert bare.passages and all('Netherfield' in p.text and p.end <= until for p in bare.excerpt.passages)
    index = Index(passages(novel))
    loose = xr.who_is('an amiable young fellow of large fortune', novel, position, x, index=index)
    assert all(p.end <= until for p in loose.excerpt.passages)
    later = xr.who_is('Georgiana', novel, position, x)  # named only in Chapter 21, after the place
    assert not later.passages and later.notices
    with pytest.raises(NoPlace):
        xr.who_is('Wickham', novel, None, x)


def test_answer_reading_alone():
    sent = passages(read_epub(EPUB))[10:12]
    reading = xr.parse_answer(json.dumps([{'name': 'Nobody Here', 'passages': [1]}]), sent)
    assert reading.readable and reading.mentions == ()
    name = next(w for w in sent[0].text.split() if w.istitle() and len(w) > 3).strip('.,;:!?"\'')
    reading = xr.parse_answer(json.dumps({'entities': [{'name': name, 'passages': [2, 3, 1, 1]}]}), sent)
    assert reading.mentions[0].passages == (sent[1].number, sent[0].number)  # 3 was not sent
    assert not xr.parse_answer(None, sent).readable
