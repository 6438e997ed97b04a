# License: GPLv3 Copyright: the Book AI developers
"""Search library by meaning… and More like this in calibre's real main window, headless, with the
real embedding model (all-MiniLM-L6-v2 in llama-server), on a library made through calibre's API
(helpers/meaning_library.py): the entries in Book AI's menu and calibre's Similar books menu, the
index built as a calibre job, the book the words paraphrase first in calibre's own book list (its
search, its marks, its sort) and selected, with why in the window; More like this, from calibre's
Similar books menu, the other book of the same series first. The pictures are the README's."""

import json

from helpers.meaning_library import BOOKS, QUERIES, make_meaning_library
from helpers.peers import LlamaServer
from helpers.sandbox import tracebacks


def test_search_by_meaning_and_more_like_this_in_calibre(sandbox, plugin_zip, artifacts, host):
    lib, ids = make_meaning_library(sandbox.root)
    sandbox.install(plugin_zip)
    words, i = QUERIES[0]
    with LlamaServer('embed') as server:
        report, r = sandbox.probe('library_search', [lib], timeout=240, env={
            'BOOKAI_PROBE_EMBED_SERVER': server.base_url, 'BOOKAI_PROBE_EMBED_MODEL': server.model,
            'BOOKAI_PROBE_WORDS': words, 'BOOKAI_PROBE_SHOTS': str(artifacts)})
    (artifacts / 'library-search-in-calibre.json').write_text(json.dumps(report, indent=1))
    assert report['probed'] and not report['timeout'] and 'waited_for' not in report, (report, r)
    assert not tracebacks(r.output), r
    assert report['module_before'] is False  # nothing of it loaded until it is used
    assert report['similar_menu'][-1] == 'More like this (Book AI)'
    assert report['books'] >= len(BOOKS)
    assert report['jobs'] == [[f'Book AI: the library by meaning, {report["books"]} books', False]]
    assert report['search_text'] == 'marked:bookai' and report['sorted_on'] == ['marked', True]
    window = report['window']
    assert report['shown'][0] == ids[i] and report['selected'] == [ids[i]]
    assert [row[0] for row in window] == report['shown_titles']  # the same books, in the same order
    assert window[0][0] == BOOKS[i][0] and window[0][1] and float(window[0][2]) > 0.3
    assert "shown in calibre's book list too" in report['status']
    assert report['more_title'] == 'More like this' and report['more_nearest'] == f'Nearest to: {BOOKS[0][0]}'
    assert report['more_shown'][0] == ids[5] and ids[0] not in report['more_shown']
    assert 'Ada Brine' in report['more_window'][0][1] and report['more_selected'] == [ids[5]]
    for name in ('library-search.png', 'more-like-this.png'):
        assert (artifacts / name).stat().st_size > 20_000
