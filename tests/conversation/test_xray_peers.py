# License: GPLv3 Copyright: the Book AI developers
"""X-Ray (conversation/xray.py) against real llama.cpp servers, on the real novel: with sentinel
text after the reader's place (an invented name in the paragraph the place is in, the next one,
and a later chapter), no request a real server receives holds it, for the X-Ray and for "Who or
what is this?", and no entity or cache file does; the tiny model, held to the answer's schema by
the server, answers JSON the X-Ray reads; the demo's real model names the novel's people."""

import dataclasses
import json
from pathlib import Path

import pytest

from calibre_plugins.bookai.conversation import xray as xr
from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.grounding.extract import Book, read_epub
from calibre_plugins.bookai.grounding.so_far import read_until
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.novel import EPUB
from helpers.peers import LlamaServer, RecordingProxy

TINY_CONTEXT = 32768  # the tiny model reads a character as a token: a chapter of the novel, whole
SENTINEL = 'Zebediah Quartermaine'
# small answers for the tiny model (a token a character): JSON of that shape ends well within them
TINY = xr.Bounds(per_answer=3, name_chars=20, description_chars=40, other_names=2, cited=2, answer_tokens=1500,
                 part_tokens=2500)


@pytest.fixture(scope='module')
def novel():
    return read_epub(EPUB)


def with_sentinel(book: Book, position: float) -> Book:
    """A copy of book with SENTINEL in the paragraph holding the place, the one after it and one in
    Chapter 20, each the same length as before (so every place stays where it was)."""
    until = read_until(book, position)
    at = next(i for i, p in enumerate(book.paragraphs) if p.start + len(p.text) > until)
    later = next(i for i, p in enumerate(book.paragraphs) if p.chapter == 20 and len(p.text) > 100)
    paragraphs = list(book.paragraphs)
    for i in (at, at + 1, later):
        p = paragraphs[i]
        text = (f'{SENTINEL} came to Meryton. ' * (len(p.text) // 20 + 2))[:len(p.text)]
        paragraphs[i] = dataclasses.replace(p, text=text)
    return Book(book.chapters, paragraphs)


def provider_at(url):
    return get_provider('openai_compatible', settings={'base_url': url + '/v1', 'model': 'tiny', 'temperature': 0.0})


def test_nothing_after_the_place_reaches_the_server(novel, tiny, tmp_path, prefs):
    position = (novel.chapters[3].start + novel.chapters[4].start) / 2 / novel.length  # inside Chapter 3
    book = with_sentinel(novel, position)
    assert SENTINEL in '\n'.join(p.text for p in book.paragraphs if p.chapter == 3)
    cache = xr.XRayCache(str(tmp_path / 'xray'))
    key = xr.XRayKey('lib:1', 'openai_compatible', 'tiny')
    with RecordingProxy(tiny.base_url) as proxy:
        x = xr.build_xray(book, position, provider_at(proxy.base_url), key, cache, bounds=TINY)
        conv = Conversation([], 'lib')
        question = xr.who_is('Mr. Bingley', book, position, x, budget=600)
        asked = provider_at(proxy.base_url).text_chat(question.messages(conv), max_tokens=20)
        assert [c for c in asked if type(c).__name__ == 'Failed'] == []
        bodies = [body.decode('utf-8') for _method, _path, body in proxy.received]
    chats = proxy.chat_requests()
    assert len(chats) >= len(x.chapters_read) + 1 and x.chapters_read == (0, 1, 2, 3)
    assert not [b for b in bodies if 'Zebediah' in b or 'Quartermaine' in b]  # in no request, in no form
    assert all(c['response_format']['type'] == 'json_schema' for c in chats[:-1])
    for e in x.entities:
        assert 'Quartermaine' not in ' '.join((e.name, *e.other_names, e.description))
    kept = Path(cache.file_of(key)).read_text()
    assert 'Quartermaine' not in kept and 'Zebediah' not in kept
    # the chapter the reader is inside went as far as the place, not a paragraph more
    inside = chats[3]['messages'][-1]['content']
    until = read_until(book, position)
    last_read = [p for p in book.paragraphs if p.chapter == 3 and p.start + len(p.text) <= until][-1]
    assert ' '.join(last_read.text.split())[-60:] in inside


def test_the_tiny_model_held_to_the_schema_answers_what_the_xray_reads(novel, tiny, tmp_path):
    cache = xr.XRayCache(str(tmp_path / 'xray'))
    key = xr.XRayKey('lib:1', 'openai_compatible', 'tiny')
    position = (novel.chapters[3].start - 1) / novel.length
    with RecordingProxy(tiny.base_url) as proxy:
        x = xr.build_xray(novel, position, provider_at(proxy.base_url), key, cache, bounds=TINY)
        again = xr.build_xray(novel, position, provider_at(proxy.base_url), key, cache, bounds=TINY)
    # every answer was JSON of the shape asked for, so every chapter is kept, whatever its words
    assert x.complete and not x.notices and x.requests == len(proxy.chat_requests()) == 3
    assert again.requests == 0 and again.complete
    schema = proxy.chat_requests()[0]['response_format']['json_schema']['schema']
    assert schema['properties']['entities']['maxItems'] == 3
    records, problem = cache.records(key, TINY)
    assert not problem and [r.chapter for r in records] == [0, 1, 2]
    assert json.loads(Path(cache.file_of(key)).read_text())['model'] == 'tiny'


# What the demo's model makes of the novel does not change with the host, and takes a minute and a
# half: it runs once, on the host whose run is the shortest. The X-Ray's mechanics (the tests
# above, with the tiny model) run on every host.
@pytest.mark.hosts('noai', why="the real model's reading of the novel, the same on every host")
def test_the_demos_model_names_the_people_of_the_first_chapter(novel, tmp_path):
    with LlamaServer('qwen', alias='qwen', ctx=8192, extra_args=('--temp', '0')) as qwen:
        p = get_provider('openai_compatible', settings={'base_url': qwen.base_url + '/v1', 'model': 'qwen',
                                                        'temperature': 0.0})
        position = (novel.chapters[2].start - 1) / novel.length  # the title page and Chapter 1 read
        x = xr.build_xray(novel, position, p, xr.XRayKey('lib:1', 'openai_compatible', 'qwen'),
                          xr.XRayCache(str(tmp_path)), bounds=xr.Bounds(per_answer=12, answer_tokens=1200))
    assert x.complete, x.notices
    names = ' '.join(n for e in x.entities for n in e.names)
    assert 'Bennet' in names or 'Bingley' in names, [e.names for e in x.entities]
    # whatever the model knows of the novel, nothing of later chapters: all first met in Chapter 1
    assert all(e.first.chapter in ('Chapter 1', novel.chapters[0].title) for e in x.entities)
    assert 'Darcy' not in names and 'Wickham' not in names
