# License: GPLv3 Copyright: the Book AI developers
"""Book AI's Ask AI panel in calibre's real E-book viewer, headless, on a book of a
real library, answered by llama-server."""

import json

import pytest

from helpers.books import library_epub
from helpers.peers import LlamaServer, direct_text, http
from helpers.sandbox import tracebacks

ASK = 'Summarize'
# The Lookup panel's tabs, Book AI's last: "Ask AI" where the viewer has no "Ask AI" of calibre's, "Book AI"
# beside calibre's own
TABS = {'bookworm': ['Lookup', 'Ask AI'], 'trixie': ['Lookup', 'Ask AI'], 'noai': ['Dictionary', 'Ask AI'],
        'forky': ['Dictionary', 'Ask AI', 'Book AI']}


TINY_TOKENS = 32


@pytest.fixture(scope='module')
def endless():
    with LlamaServer("tiny", alias="tiny", extra_args=("--temp", "0", "-n", "100000")) as server:
        yield server


def configure(sandbox, server):
    r = sandbox.run(['calibre-debug', '-r', 'Book AI', '--', 'configure', 'openai_compatible',
                     f'base_url={server.base_url}/v1', 'model=tiny', 'temperature=0'])
    assert r.returncode == 0, r


def test_a_quick_action_on_the_selection(sandbox, plugin_zip, library, tiny, endless, artifacts, host):
    sandbox.install(plugin_zip)
    configure(sandbox, tiny)
    log_start = len(endless.log())
    report, r = sandbox.probe('viewer', [library_epub(library)], env={
        'BOOKAI_PROBE_ASK': ASK, 'BOOKAI_PROBE_SHOTS': str(artifacts), 'BOOKAI_PROBE_ENDLESS_URL': endless.base_url})
    (artifacts / 'viewer-panel-report.json').write_text(json.dumps(dict(report, output=r.output), indent=1))
    assert report['rendered'] and not report['timeout'] and 'waited_for' not in report, r
    assert not tracebacks(r.output), r
    assert report['has_panel'], (report, r.output)
    # nothing AI is imported until the panel is first shown
    assert report['modules_before_shown'] == ['calibre_plugins.bookai', 'calibre_plugins.bookai.gui',
                                              'calibre_plugins.bookai.gui.icons', 'calibre_plugins.bookai.viewer',
                                              'calibre_plugins.bookai.viewer.hook'], report['modules_before_shown']
    assert report['tabs'] == TABS[host]
    assert report['panel_built'] and report['selected']
    assert report['quick_actions'] == ['Explain', 'Define', 'Summarize', 'Key points', 'Fix grammar', 'Translate']
    assert report['question'].startswith('Provide a concise summary of the following text.')
    assert 'Text to analyze: ' in report['question']
    assert report['messages'][0].startswith('I am currently reading the book: Quick Start Guide by John Schember')
    assert not report['error'] and report['answer'] == direct_text(tiny, [('system', report['messages'][0]),
                                                                              ('user', report['question'])])
    # a typed follow-up carries the conversation
    status, headers, body = http('POST', tiny.base_url + '/v1/chat/completions', {
        'model': 'tiny', 'temperature': 0, 'messages': [{'role': r, 'content': t} for r, t in report['free_messages']]})
    assert report['free_question'] == 'And who wrote it?' and len(report['free_messages']) == 4
    assert not report['free_error'] and report['free_answer'] == json.loads(body)['choices'][0]['message']['content']
    # Stop, mid-answer: the server sees it
    assert report['stopped_finish'] == 'cancelled' and report['stopped_chars'] > 0
    endless.wait_log(r'cancel', start=log_start)
    assert (artifacts / 'viewer-panel.png').stat().st_size > 10_000
    # where the book was read, and when, kept for the recap offered after a break (conversation/last_read.py)
    kept = json.loads((sandbox.cache / 'bookai' / 'last-read.json').read_text())
    (seen,) = kept['books'].values()
    assert seen['cfi'].startswith('epubcfi(/') and seen['seen'] > 1_700_000_000


@pytest.mark.parametrize('dock', ['open', 'closed'])
def test_the_last_lookup_tab_is_kept(sandbox, plugin_zip, library, host, artifacts, dock):
    """The viewer started again opens the Lookup panel on Book AI's tab when the reader last used it,
    whether the panel was left open or closed, and on the first tab when the reader left it there."""
    sandbox.install(plugin_zip)
    first_tab, ours = TABS[host][0], TABS[host][-1]

    def run(choose, shot=None):
        env = {'BOOKAI_PROBE_TAB': choose, 'BOOKAI_PROBE_TAB_DOCK': dock}
        if shot:
            env['BOOKAI_PROBE_TAB_SHOT'] = str(shot)
        report, r = sandbox.probe('viewer', [library_epub(library)], env=env)
        assert report['rendered'] and not report['timeout'] and 'waited_for' not in report, (report, r.output[-2000:])
        assert not tracebacks(r.output) and 'Book AI:' not in r.output, r
        assert report['tabs'] == TABS[host]
        return report

    # a new viewer: the first tab; the reader chooses Book AI's
    report = run('ours')
    assert report['tab_when_opened'] == first_tab and not report['panel_built_at_start']
    assert report['chosen'] == ours and report['lookup_open_at_close'] == (dock == 'open')
    # kept as calibre keeps it: calibre's key where the tab widget is calibre's, Book AI's where Book AI made it
    key = 'llm_lookup_tab_index' if host in ('forky', 'noai') else 'bookai_lookup_tab_index'
    assert report['prefs'][key] == TABS[host].index(ours), report['prefs']
    assert len([v for v in report['prefs'].values() if v is not None]) == 1, report['prefs']

    # started again: on Book AI's tab, at once if the panel opens with the viewer, else when it is opened
    report = run('first', shot=artifacts / f'viewer-tab-kept-{dock}.png')
    assert report['lookup_open_at_start'] == (dock == 'open')
    if dock == 'open':
        assert report['tab_at_start'] == ours and report['panel_built_at_start']
    else:  # nothing of Book AI's panel until it is shown
        assert report['tab_at_start'] == first_tab and not report['panel_built_at_start']
    assert report['tab_when_opened'] == ours and report['chosen'] == first_tab
    assert report['prefs'][key] == 0

    # the reader left the first tab: it stays the first
    report = run('ours')
    assert report['tab_at_start'] == report['tab_when_opened'] == first_tab and not report['panel_built_at_start']


def test_ask_ai_where_calibres_own_is_hidden(sandbox, plugin_zip, library, host):
    """calibre's tweak hide_ai_features hides calibre's "Ask AI" tab (8.11+): Book AI's is "Ask AI" then.
    On hosts without calibre's AI the tweak means nothing, and the tabs are as always."""
    sandbox.install(plugin_zip)
    code = 'from calibre.utils.config_base import write_custom_tweaks; write_custom_tweaks({"hide_ai_features": True})'
    assert sandbox.debug(code).returncode == 0
    report, r = sandbox.probe('viewer', [library_epub(library)], env={'BOOKAI_PROBE_TAB': 'ours'})
    assert report['rendered'] and not report['timeout'] and not tracebacks(r.output), r
    # calibre's own tab is still there, hidden; ours is the last
    assert report['tabs'] == (['Dictionary', 'Ask AI', 'Ask AI'] if host == 'forky' else TABS[host])
    assert report['chosen'] == 'Ask AI'


def test_save_as_note_reaches_the_librarys_annotations(sandbox, plugin_zip, library, tiny, artifacts):
    sandbox.install(plugin_zip)
    configure(sandbox, tiny)
    report, r = sandbox.probe('viewer', [library_epub(library)], env={
        'BOOKAI_PROBE_ASK': 'Explain', 'BOOKAI_PROBE_NOTE': '1'})
    assert report['rendered'] and not report['timeout'] and 'waited_for' not in report, (report, r.output[-2000:])
    assert not tracebacks(r.output), r
    assert report['answer'] and 'Saved as the note of the highlight.' in report['notice'], report['notice']
    (noted,) = [h for h in report['highlights'] if h['notes']]
    assert report['answer'] in noted['notes'] and 'Book AI' in noted['notes']
    # after the viewer closed: the highlight and its note, through calibre's annotations API
    code = ('import json; from calibre.library import db; c = db(%r).new_api; '
            'print(json.dumps([a["annotation"] for a in c.all_annotations_for_book(1) '
            'if a["annotation"]["type"] == "highlight"]))' % str(library))
    out = sandbox.debug(code)
    assert out.returncode == 0, out
    saved = json.loads(out.stdout.strip().splitlines()[-1])
    assert [h['uuid'] for h in saved] == [noted['uuid']] and report['answer'] in saved[0]['notes']


def test_a_book_outside_the_library_keeps_its_note_in_the_viewer(sandbox, plugin_zip, library, tiny, tmp_path):
    import shutil
    sandbox.install(plugin_zip)
    configure(sandbox, tiny)
    book = tmp_path / 'elsewhere' / 'guide.epub'
    book.parent.mkdir()
    shutil.copy(library_epub(library), book)
    report, r = sandbox.probe('viewer', [book], env={'BOOKAI_PROBE_ASK': 'Key points', 'BOOKAI_PROBE_NOTE': '1'})
    assert report['rendered'] and not report['timeout'] and 'waited_for' not in report, (report, r.output[-2000:])
    assert not tracebacks(r.output), r
    assert not report['book_library_details']  # not a library book
    (noted,) = [h for h in report['highlights'] if h['notes']]
    assert report['answer'] in noted['notes']
    # kept in the viewer's own store, as the viewer keeps highlights of such books
    stored = [json.loads(p.read_text()) for p in (sandbox.config / 'viewer' / 'annots').glob('*.json')]
    notes = [a.get('notes', '') for annots in stored for a in annots if a.get('type') == 'highlight']
    assert any(report['answer'] in n for n in notes), stored


def test_an_unexpected_viewer_is_left_as_it_is(sandbox, plugin_zip, library):
    sandbox.install(plugin_zip)
    report, r = sandbox.probe('viewer', [library_epub(library)], env={'BOOKAI_PROBE_UNEXPECTED': '1'})
    assert report['loaded'] and report['rendered'] and not report['timeout'], r
    assert not report['has_panel'] and not tracebacks(r.output), r
    lines = [line for line in r.output.splitlines() if line.startswith('Book AI:')]
    assert lines == ['Book AI: no Ask AI panel in this E-book viewer: LookupError: the Lookup panel is not where it '
                     'was expected'], r.output


def test_a_removed_plugin_leaves_no_panel(sandbox, plugin_zip, library):
    # calibre lets interface plugins be removed, not disabled
    sandbox.install(plugin_zip)
    assert sandbox.customize('-r', 'Book AI').returncode == 0
    report, r = sandbox.probe('viewer', [library_epub(library)])
    assert report['rendered'] and not report['has_panel'] and report['bookai_modules'] == [], r
    assert 'Book AI' not in r.output


def test_the_real_ebook_viewer_loads_only_the_hook(sandbox, plugin_zip, library):
    """ebook-viewer itself (not a probe), with Python's import log: the hook is imported while
    the viewer starts, nothing AI is."""
    import subprocess
    sandbox.install(plugin_zip)
    proc = subprocess.Popen(['ebook-viewer', str(library_epub(library))], env=sandbox.env(PYTHONPROFILEIMPORTTIME='1'),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=12)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    imported = [line.rpartition('|')[2].strip() for line in err.splitlines() if line.startswith('import time:')]
    ours = [m for m in imported if m.startswith('calibre_plugins.bookai')]
    assert 'calibre_plugins.bookai.viewer.hook' in ours, err[-3000:]
    assert not [m for m in ours if m.split('.')[2] in ('providers', 'core', 'conversation')], ours
    assert 'calibre_plugins.bookai.viewer.panel' not in ours
    assert 'Book AI:' not in err and not tracebacks(err), err[-3000:]


@pytest.fixture(scope='module')
def tiny_long():
    """The tiny model with room for passages of the book."""
    with LlamaServer('tiny', alias='tiny', ctx=16384, extra_args=('--temp', '0', '-n', '16')) as server:
        yield server


def test_book_text_up_to_where_the_viewer_is(sandbox, plugin_zip, library, tiny_long, artifacts):
    """Passages up to the viewer's place go with a question; a citation goes to its passage; the place the
    viewer saves on closing is the limit for a question asked from the library afterwards."""
    from calibre_plugins.bookai.grounding.extract import read_epub
    from calibre_plugins.bookai.conversation.prompts import passage_texts
    from calibre_plugins.bookai.grounding.scopes import SCOPES
    sandbox.install(plugin_zip)
    configure(sandbox, tiny_long)
    question = 'How do I convert an ebook to another format?'
    report, r = sandbox.probe('viewer', [library_epub(library)], env={
        'BOOKAI_PROBE_SECTIONS': '6', 'BOOKAI_PROBE_GROUNDED': question, 'BOOKAI_PROBE_SHOTS': str(artifacts)})
    assert report['rendered'] and not report['timeout'] and 'waited_for' not in report, (report, r.output[-2000:])
    assert not tracebacks(r.output), r
    assert report['scopes'] == list(SCOPES)
    book = read_epub(library_epub(library))
    where = book.offset_of_cfi(report['cfi'])
    assert where is not None and 0.05 < book.fraction(where) < 0.9, report['cfis']
    assert not report['g_error'] and report['g_spoiler_safe'] and report['g_places'], report.get('g_chat')
    texts = passage_texts(report['g_passages'])
    for text in texts.values():  # every passage sent ends before the viewer's place
        start = next(p.start for p in book.paragraphs if text.startswith(p.text))
        assert start + len(text) <= where + 1, (text[:80], start, where)
    assert 'none after where you are' in report['g_chat']
    assert report['g_links']
    # the citation of passage 1: the viewer is at that passage now
    chapter, position, cfi = report['g_places'][0]
    target = book.offset_of_cfi(cfi)
    assert texts[1].startswith(next(p.text for p in book.paragraphs if p.start == target))
    after = book.offset_of_cfi(report['cfi_after_jump'])
    assert after is not None and book.chapter_at(after).title == chapter, (report['cfi_after_jump'], cfi)
    # the viewer saved its place on closing: the library's questions keep to it
    r = sandbox.run(['calibre-debug', '-r', 'Book AI', '--', 'ask', '--library', library, '--book', '1',
                     '--prompt', 'What is calibre?', '--scope', 'position', '--show-sent'])
    assert r.returncode == 0, r
    sent = passage_texts(r.stdout)
    assert sent and 'Do not reveal anything that happens later' in r.stdout
    for text in sent.values():
        start = next(p.start for p in book.paragraphs if text.startswith(p.text))
        assert start + len(text) <= where + 1


def test_everything_read_up_to_where_the_viewer_is(sandbox, plugin_zip, library, tiny_long, artifacts):
    """"Everything up to where I am" in calibre's real viewer: the panel learns the model's window
    from llama-server, and every paragraph before the viewer's place goes, none after it."""
    from calibre_plugins.bookai.grounding.extract import read_epub
    from calibre_plugins.bookai.conversation.prompts import passage_texts
    sandbox.install(plugin_zip)
    configure(sandbox, tiny_long)
    report, r = sandbox.probe('viewer', [library_epub(library)], env={
        'BOOKAI_PROBE_SECTIONS': '1', 'BOOKAI_PROBE_GROUNDED': 'What have I read so far?',
        'BOOKAI_PROBE_SCOPE': 'so-far', 'BOOKAI_PROBE_SHOTS': str(artifacts),
        'BOOKAI_PROBE_SHOT_NAME': 'viewer-so-far.png'})
    assert report['rendered'] and not report['timeout'] and 'waited_for' not in report, (report, r.output[-2000:])
    assert not tracebacks(r.output), r
    book = read_epub(library_epub(library))
    where = book.offset_of_cfi(report['cfi'])
    assert where is not None and 0 < where < book.length, report['cfis']
    assert not report['g_error'] and report['g_spoiler_safe'], report.get('g_chat')
    assert 'Everything up to where you are goes with this question' in report['g_chat']
    sent = ' '.join(' '.join(passage_texts(report['g_passages']).values()).split())
    read = [' '.join(p.text.split()) for p in book.paragraphs if p.start + len(p.text) <= where]
    after = [' '.join(p.text.split()) for p in book.paragraphs if p.start >= where and len(p.text) > 60]
    assert read and all(text in sent for text in read)
    assert after and not [text[:60] for text in after if text in sent]


def test_the_xray_tab_in_the_real_viewer(sandbox, plugin_zip, artifacts):
    """The X-Ray tab of calibre's real viewer, on the real novel in a library, twelve chapters in: built by a
    scripted model (it names the novel's people as the passages sent hold them), nothing after the viewer's
    place sent; an entity shown (viewer-xray.png); then its name selected in the book and "Who or what is
    this?" asked, with what the X-Ray says of it and passages before the place."""
    from calibre_plugins.bookai.conversation.prompts import passage_texts
    from calibre_plugins.bookai.grounding.extract import read_epub
    from helpers.novel import EPUB
    from helpers.scripted_model import NOVEL_ROSTER, ScriptedModel, passages_of, roster_answer
    sandbox.install(plugin_zip)
    library = sandbox.make_library(EPUB)
    name = 'Elizabeth Bennet'
    with ScriptedModel(roster_answer(NOVEL_ROSTER)) as model:
        configure(sandbox, type('Server', (), {'base_url': model.url}))
        report, r = sandbox.probe('viewer', [library_epub(library)], timeout=240, env={
            'BOOKAI_PROBE_SECTIONS': '12', 'BOOKAI_PROBE_XRAY': name, 'BOOKAI_PROBE_SHOTS': str(artifacts),
            'BOOKAI_PROBE_TIMEOUT': '200'})
        requests = list(model.requests)
    (artifacts / 'viewer-xray-report.json').write_text(json.dumps(dict(report, output=r.output[-3000:]), indent=1))
    assert report['rendered'] and not report['timeout'] and 'waited_for' not in report, (report, r.output[-2000:])
    assert not tracebacks(r.output), r
    book = read_epub(library_epub(library))
    where = book.offset_of_cfi(report['cfi'])
    assert where is not None and book.chapter_at(where).title in ('Chapter 11', 'Chapter 12'), report['cfis']
    assert report['x_tabs'] == ['Chat', 'X-Ray']
    assert 'No X-Ray is kept for this book yet' in report['x_summary_before']
    assert report['x_button_before'] == 'Build X-Ray'
    read = report['x_chapters_read']
    assert read == list(range(len(read))) and not report['x_missing'] and report['x_button'] == 'Update X-Ray'
    built = requests[:len(read)]
    assert len(built) == len(read) and 'requests sent' in report['x_status']
    # nothing after the viewer's place went: no paragraph after it is in a request, and each chapter read went
    sent = ' '.join(' '.join(text.split()) for request in built for _n, _label, text in passages_of(request))
    after = [' '.join(p.text.split()) for p in book.paragraphs if p.start >= where and len(p.text) > 60]
    assert after and not [text[:60] for text in after if text[:60] in sent]
    assert [passages_of(request)[0][1] for request in built] == [book.chapters[n].title for n in read]
    entities = {e[0]: e for e in report['x_entities']}
    assert {name, 'Mr. Darcy', 'Mr. Bingley', 'Netherfield', 'Longbourn'} <= set(entities)
    assert not {'Mr. Collins', 'Mr. Wickham'} & set(entities)  # they come in Chapters 13 and 15
    assert report['x_shown'] == name and 'First appears: Chapter 1, at ' in report['x_details']
    assert (artifacts / 'viewer-xray.png').stat().st_size > 20_000
    # "where it first appears" took the viewer there; then the name, selected, asked about
    assert book.chapter_at(book.offset_of_cfi(report['x_cfi_after_first'])).title == 'Chapter 1'
    assert report['x_selected'].strip() == name and report['x_who_enabled']
    assert not report['x_who_error'] and report['x_who_shown'] == name
    assert report['x_who_question'].startswith(f'Who or what is "{name}" in this book, as far as I have read?')
    # the search found her full name first in Chapter 3: the X-Ray there knows her by her other names
    at_who = book.offset_of_cfi(report['x_cfi_at_who'])
    assert book.chapter_at(at_who).title == 'Chapter 3', report['x_cfi_at_who']
    assert ('What the X-Ray says of it so far: Elizabeth (character; also called Lizzy' in report['x_who_question']
            and 'The second of the five Bennet daughters' in report['x_who_question']), report['x_who_question']
    asked = requests[-1]['messages'][-1]['content']
    assert 'Who or what is "Elizabeth Bennet"' in asked and passage_texts(report['x_who_passages'])
    assert all(position * book.length < at_who + 1 for _c, position, _cfi in report['x_who_places'])
