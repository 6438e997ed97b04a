# License: GPLv3 Copyright: the Book AI developers
"""What was made of a book before reaches the model's lookups (conversation/lookup_sources.py): the
chapter summaries kept for the book and the model show in the contents, the X-Ray kept gives its
entries; nothing is made or sent for it, and nothing of them after the reader's place is shown."""

import json

from calibre_plugins.bookai.conversation import xray as xr
from calibre_plugins.bookai.conversation.lookup_sources import kept_for_lookups
from calibre_plugins.bookai.conversation.question import book_question
from calibre_plugins.bookai.conversation.summaries import BookKey, BookSummaries, Summary, SummaryCache, chapter_segments
from calibre_plugins.bookai.core.messages import ToolCall
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.grounding.so_far import read_until
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.novel import EPUB
from helpers.scripted_model import ScriptedModel, roster_answer

ROSTER = [{'name': 'Mr. Bingley', 'other_names': ['Bingley'], 'description': 'A rich young man'},
          {'name': 'Netherfield', 'kind': 'place', 'description': 'The house Bingley takes'}]


def run(tools, name, arguments):
    return tools.run(ToolCall('c1', name, json.dumps(arguments)), 1)


def test_the_summaries_and_the_xray_kept_are_what_lookups_show(tmp_path):
    book = read_epub(EPUB)
    position = (book.chapters[5].start - 0.5) / book.length  # before the novel's chapter 5
    key = BookKey('lib', 1, 'EPUB')
    summaries = SummaryCache(str(tmp_path / 'summaries'))
    kept = BookSummaries(summaries, key)
    segments = chapter_segments(book, read_until(book, 0.9), current=False)
    for s in segments:  # kept for chapters before and after the place, by the model that answers
        kept.keep(Summary('openai_compatible/tiny', s.chapter, s.title, s.first, s.last, True, s.end, s.digest,
                          f'SUMMARY OF {s.title.upper()} [{s.first}].', 1.0))
    xrays = xr.XRayCache(str(tmp_path / 'xray'))
    with ScriptedModel(roster_answer(ROSTER, [])) as model:
        provider = get_provider('openai_compatible', settings={'base_url': model.url + '/v1', 'model': 'tiny'})
        xr.build_xray(book, position, provider, xr.XRayKey('lib:1', 'openai_compatible', 'tiny'), cache=xrays,
                      bounds=xr.Bounds(part_tokens=8000))
        sent_before = len(model.requests)
        found = kept_for_lookups(provider, 'tiny', book, position, key, 'lib:1', '', summaries, xrays)
        assert len(model.requests) == sent_before  # read from the files: nothing sent
    read = [s for s in segments if s.end <= read_until(book, position)]
    assert read and set(found.summaries) == {s.chapter for s in read}  # the chapters read to their end only
    assert found.xray is not None and 'A rich young man' in (found.xray.entry('Bingley') or '')
    q = book_question('Who is Bingley?', 'position', book, position=position, budget=300, kept=found)
    assert q.tools is not None and 'xray_entry' in {t.name for t in q.tools.tools()}
    contents = run(q.tools, 'contents', {})
    assert all(f'SUMMARY OF {s.title.upper()}' in contents.text for s in read)
    later = [s for s in segments if s not in read]
    assert later and not any(f'SUMMARY OF {s.title.upper()}' in contents.text for s in later)
    assert 'A rich young man' in run(q.tools, 'xray_entry', {'name': 'Bingley'}).text


def test_another_model_or_no_model_reads_nothing(tmp_path):
    book = read_epub(EPUB)
    provider = get_provider('openai_compatible', settings={'base_url': 'http://127.0.0.1:9/v1', 'model': 'tiny'})
    key = BookKey('lib', 1, 'EPUB')
    for model, position in (('', 0.5), ('tiny', None)):
        found = kept_for_lookups(provider, model, book, position, key, 'lib:1', '', SummaryCache(str(tmp_path)),
                                 xr.XRayCache(str(tmp_path / 'x')))
        assert not found.summaries and found.xray is None
