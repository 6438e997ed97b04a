# License: GPLv3 Copyright: the Book AI developers
"""The AI covers' windows, offscreen, against providers pointed at a scripted server that answers
as OpenAI's images API does, with a real PNG: what is shown is what the server sent (as Book AI
decoded it, in calibre's worker), what the server received is what "What will be sent" showed, and
nothing is sent before Generate; a crafted image (issue 26) is said in words, and nothing of it
can be used."""

import base64
import copy
import json
import time

import pytest
from qt.core import (
    QApplication, QBuffer, QColor, QFont, QImage, QIODevice, QLinearGradient, QPainter, QTextDocument, QTimer, Qt,
)

from calibre.ebooks.metadata.book.base import Metadata

from calibre_plugins.bookai.core.images import structure
from calibre_plugins.bookai.covers.prompt import cover_prompt, refine_prompt
from calibre_plugins.bookai.covers.styles import saved_styles, style_by_name
from calibre_plugins.bookai.gui.cover_dialog import BulkCoverDialog, CoverDialog
from calibre_plugins.bookai.providers.pricing import PRICE_DATE
from calibre_plugins.bookai.settings.secrets import secret_store
from helpers.calibre_gui import shoot, wait_until, when_modal
from helpers.scripted_server import Reply, ScriptedServer


def cover_png(width=512, height=768, top='#1b2a49', bottom='#c0392b', words='The Moving Toyshop'):
    """A real PNG of a made-up cover: a gradient, a frame and a title."""
    image = QImage(width, height, QImage.Format.Format_RGB32)
    p = QPainter(image)
    g = QLinearGradient(0, 0, 0, height)
    g.setColorAt(0, QColor(top))
    g.setColorAt(1, QColor(bottom))
    p.fillRect(image.rect(), g)
    p.setPen(QColor('#f5d76e'))
    p.drawRect(20, 20, width - 41, height - 41)
    font = QFont()
    font.setPixelSize(width // 12)
    font.setBold(True)
    p.setFont(font)
    p.drawText(image.rect().adjusted(30, 60, -30, -height // 2), Qt.AlignmentFlag.AlignHCenter
               | Qt.TextFlag.TextWordWrap, words)
    p.end()
    buf = QBuffer()
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    assert image.save(buf, 'PNG')
    return bytes(buf.data())


def image_reply(png, usage=None):
    body = {'created': 1, 'data': [{'b64_json': base64.b64encode(png).decode('ascii')}]}
    if usage is not None:
        body['usage'] = usage
    return Reply(200, json.dumps(body).encode(), [('Content-Type', 'application/json')])


def stalled_reply():
    """Headers, then nothing: a request that hangs until it is stopped."""
    return Reply(200, headers=[('Content-Type', 'application/json')], chunks=[b'{"data": ['], stall_after=0)


def book():
    mi = Metadata('The Moving Toyshop', ['Edmund Crispin'])
    mi.series, mi.series_index = 'Gervase Fen', 3
    mi.comments = '<p>A poet finds a body in a toyshop that is gone in the morning.</p>'
    return mi


@pytest.fixture
def secrets():
    store = secret_store().config
    before = copy.deepcopy(dict(store))
    yield secret_store()
    dict.clear(store)
    dict.update(store, before)
    store.commit()


def use_images(prefs, server, provider='openai_compatible', secrets=None, **settings):
    """Covers made by provider at the scripted server."""
    providers = dict(prefs['providers'])
    providers[provider] = dict({'base_url': server.url + '/v1'}, **settings)
    prefs['providers'] = providers
    prefs['image_provider'] = provider
    if secrets is not None:
        secrets.set(provider, 'api_key', 'xai-test-key-0123456789')


def plain(label):
    """A label's text as it reads (its HTML rendered)."""
    doc = QTextDocument()
    doc.setHtml(label.text())
    return doc.toPlainText()


def requests_to(server, path):
    return [r for r in server.received if r['path'].endswith(path)]


def made(d):
    wait_until(lambda: not d.busy, timeout=60)
    return d


def test_generate_shows_the_image_and_the_cost(qapp, prefs, artifacts):
    png = cover_png()
    with ScriptedServer([image_reply(png)]) as server:
        use_images(prefs, server)
        d = CoverDialog(book(), 1, 'lib', None)
        d.show()
        QApplication.processEvents()
        assert d.stack.currentWidget() is d.main_page
        assert 'The Moving Toyshop' in d.book_label.text() and 'Edmund Crispin' in d.book_label.text()
        assert not d.use_button.isEnabled() and not d.refine_button.isEnabled()
        # what will be sent, before anything is
        QTimer.singleShot(0, lambda: d.preview.reject())
        d.show_preview()
        shown_prompt = d.preview.prompt
        summary = plain(d.preview.summary)
        assert 'OpenAI compatible, on this computer' in summary and 'no cost' in summary
        assert "The book's description is not included." in summary
        assert server.received == []  # nothing sent by opening the window or looking
        d.generate_button.click()
        assert d.busy and d.generate_button.text() == 'Sto&p'
        made(d)
        (req,) = requests_to(server, '/v1/images/generations')
        sent = json.loads(req['body'])
        assert sent['prompt'] == shown_prompt == d.sent_prompt == cover_prompt(book(), d.choices.choices())
        assert sent['size'] == '576x768'  # 3:4, the default aspect
        assert 'Title: "The Moving Toyshop"' in sent['prompt'] and 'Gervase Fen, book 3' in sent['prompt']
        assert 'Book description' not in sent['prompt']
        assert d.image is not None and d.image.data == png
        assert (d.view.image.width(), d.view.image.height()) == (512, 768)
        status = d.status.text()
        assert 'This image: no cost: runs on this computer' in status, status
        assert 'free' not in status.lower()
        assert d.use_button.isEnabled() and d.start_over_button.isEnabled()
        d.resize(900, 680)
        shoot(d, artifacts / 'cover-single.png', 15_000, for_readme=True)
        d.accept()
        # what goes on the book is Book AI's own JPEG of it, never the bytes the server sent
        found = structure(d.cover_data, 'It')
        assert d.cover_data != png and d.cover.ok
        assert (found.mime, found.width, found.height, found.progressive) == ('image/jpeg', 512, 768, False)
        d.deleteLater()


def test_the_description_goes_only_when_asked(qapp, prefs):
    with ScriptedServer([image_reply(cover_png())]) as server:
        use_images(prefs, server)
        d = CoverDialog(book(), 1, 'lib', None)
        d.choices.include_description.setChecked(True)
        d.choices.include_series.setChecked(False)
        QTimer.singleShot(0, lambda: d.preview.reject())
        d.show_preview()
        assert "The book's description is included." in plain(d.preview.summary)
        d.generate_button.click()
        made(d)
        prompt = json.loads(server.received[0]['body'])['prompt']
        assert prompt == d.preview.prompt
        assert 'Book description:\nA poet finds a body in a toyshop' in prompt and 'Series:' not in prompt
        assert prefs['cover_description'] is True  # remembered for the next cover
        d.reject()


def test_refine_sends_the_image_to_a_provider_that_edits(qapp, prefs, secrets):
    first, second = cover_png(), cover_png(top='#0b6e4f', words='Darker')
    with ScriptedServer([image_reply(first), image_reply(second)]) as server:
        use_images(prefs, server, 'grok', secrets)
        d = CoverDialog(book(), 1, 'lib', None)
        d.show()
        d.generate_button.click()
        made(d)
        assert requests_to(server, '/v1/images/generations')
        assert d.refine_button.isEnabled() is False  # nothing typed yet
        d.change_edit.setText('make the background darker')
        assert d.refine_button.isEnabled()
        QTimer.singleShot(0, lambda: d.preview.reject())
        d.show_preview()
        assert 'The current image goes with it' in plain(d.preview.summary)
        previewed = d.preview.prompt
        d.refine_button.click()
        made(d)
        (edit,) = requests_to(server, '/v1/images/edits')
        sent = json.loads(edit['body'])
        assert sent['image']['url'] == 'data:image/png;base64,' + base64.b64encode(first).decode('ascii')
        assert sent['prompt'] == previewed == refine_prompt(book(), d.choices.choices(), 'make the background darker')
        assert 'Authorization' in edit['headers'] and 'xai-test-key' not in d.status.text()
        assert d.image.data == second and d.change_edit.text() == ''
        status = d.status.text()
        assert f'This image: about $0.02 (prices of {PRICE_DATE})' in status, status
        assert f'Total since this window opened: about $0.04 (prices of {PRICE_DATE})' in status, status
        d.reject()


def test_refine_without_editing_makes_it_again_with_the_change(qapp, prefs):
    with ScriptedServer([image_reply(cover_png()), image_reply(cover_png(top='#333333'))]) as server:
        use_images(prefs, server)
        d = CoverDialog(book(), 1, 'lib', None)
        d.show()
        d.generate_button.click()
        made(d)
        first_prompt = json.loads(server.received[0]['body'])['prompt']
        d.change_edit.setText('add a moon')
        d.refine_button.click()
        made(d)
        assert len(requests_to(server, '/v1/images/generations')) == 2 and not requests_to(server, '/images/edits')
        second = json.loads(server.received[1]['body'])['prompt']
        assert 'Additionally apply the following refinements:\n- add a moon' in second
        assert second.startswith(first_prompt.split('\n\n')[0])
        assert 'cannot edit images' in d.status.text()
        d.start_over_button.click()
        assert d.image is None and not d.use_button.isEnabled() and d.refinements == []
        d.reject()


def test_unknown_cost_is_said_unknown(qapp, prefs, secrets):
    # Grok with a model the price table does not know, and no cost reported: unknown, not free
    with ScriptedServer([image_reply(cover_png())]) as server:
        use_images(prefs, server, 'grok', secrets, image_model='grok-some-new-image-model')
        d = CoverDialog(book(), 1, 'lib', None)
        QTimer.singleShot(0, lambda: d.preview.reject())
        d.show_preview()
        assert 'The price of an image from this model is not known to Book AI.' in plain(d.preview.summary)
        d.generate_button.click()
        made(d)
        assert 'This image: cost unknown' in d.status.text() and 'free' not in d.status.text().lower()
        d.reject()


def test_an_error_is_said_in_words_and_nothing_changes(qapp, prefs):
    refusal = json.dumps({'error': {'message': 'Your request was rejected by the safety system.',
                                    'type': 'invalid_request_error', 'code': 'content_policy_violation'}}).encode()
    with ScriptedServer([Reply(400, refusal, [('Content-Type', 'application/json')]),
                         Reply(429, b'{"error": {"message": "slow down"}}', [('Content-Type', 'application/json'),
                                                                             ('Retry-After', '0')])]) as server:
        use_images(prefs, server)
        d = CoverDialog(book(), 1, 'lib', None)
        d.show()
        d.generate_button.click()
        made(d)
        assert 'safety system' in d.status.text() and d.image is None and not d.use_button.isEnabled()
        assert 'c0392b' in d.status.styleSheet()
        d.reject()


def test_closing_during_a_request_stops_it(qapp, prefs):
    with ScriptedServer([stalled_reply(), image_reply(cover_png())]) as server:
        use_images(prefs, server)
        d = CoverDialog(book(), 1, 'lib', None)
        d.show()
        d.generate_button.click()
        wait_until(lambda: server.received, timeout=30)
        token = d.cancel
        d.reject()  # Cancel while the request hangs
        assert token.cancelled and d.cancel is None and d.cover_data is None
        d.deleteLater()
        end = time.monotonic() + 1
        while time.monotonic() < end:  # whatever comes later is dropped, nothing breaks
            QApplication.processEvents()
        # Stop, in a window that stays open: the request ends, the window is usable again
        d = CoverDialog(book(), 1, 'lib', None)
        d.show()
        server.replies.insert(0, stalled_reply())
        d.generate_button.click()
        wait_until(lambda: len(server.received) == 2, timeout=30)
        d.generate_button.click()  # Stop
        made(d)
        assert 'Stopped' in d.status.text() and d.image is None and d.generate_button.isEnabled()
        d.reject()


def test_without_an_image_provider_nothing_can_be_sent(qapp, prefs):
    prefs['image_provider'] = ''
    d = CoverDialog(book(), 1, 'lib', None)
    d.show()
    assert d.stack.currentWidget() is d.missing_page
    assert 'No image provider is chosen' in d.missing_page.text.text()
    assert not d.generate_button.isEnabled() and not d.use_button.isEnabled()
    d.generate_or_stop()
    assert d.cancel is None
    opened = []

    def settings():  # what the button opens: the settings, on the covers' tab; a provider chosen there
        opened.append(True)
        prefs['image_provider'] = 'openai_compatible'
        prefs['providers'] = dict(prefs['providers'], openai_compatible={'base_url': 'http://127.0.0.1:9/v1'})
    d.open_settings_now = settings
    d.missing_page.settings_button.click()
    assert opened and d.stack.currentWidget() is d.main_page and d.generate_button.isEnabled()
    d.reject()


def test_the_settings_button_opens_the_covers_tab(qapp, prefs):
    prefs['image_provider'] = ''
    d = CoverDialog(book(), 1, 'lib', None)
    seen = []

    def look(w):
        seen.append(w.settings.tabs.currentIndex() == w.settings.TABS.index('covers'))
        w.reject()
    when_modal(look)
    d.missing_page.settings_button.click()
    assert seen == [True]
    d.reject()


def test_styles_saved_and_deleted(qapp, prefs, monkeypatch):
    prefs['cover_styles'] = []
    prefs['image_provider'] = 'openai_compatible'
    prefs['providers'] = dict(prefs['providers'], openai_compatible={'base_url': 'http://127.0.0.1:9/v1'})
    d = CoverDialog(book(), 1, 'lib', None)
    c = d.choices
    keys = [c.style_box.itemData(i) for i in range(c.style_box.count())]
    assert keys[:8] == ['pulp', 'romance', 'scifi', 'fantasy', 'noir', 'literary', 'children', 'horror']
    assert keys[-1] == 'custom' and not c.delete_style_button.isEnabled()
    c.prompt_edit.setPlainText('Soft watercolour washes on rough paper.')
    from qt.core import QInputDialog
    monkeypatch.setattr(QInputDialog, 'getText', staticmethod(lambda *a, **k: ('Watercolour', True)))
    c.save_style_button.click()
    assert [s.name for s in saved_styles()] == ['custom_watercolour']
    assert c.style_box.currentData() == 'custom_watercolour' and c.delete_style_button.isEnabled()
    assert style_by_name('custom_watercolour').template == 'Soft watercolour washes on rough paper.'
    c.delete_style_button.click()
    assert saved_styles() == [] and c.style_box.findData('custom_watercolour') < 0
    d.reject()


def test_bulk_dialog(qapp, prefs, artifacts):
    with ScriptedServer([]) as server:
        use_images(prefs, server)
        prefs['cover_requests_at_once'] = 4
        d = BulkCoverDialog(12, None, sample=book())
        d.show()
        QApplication.processEvents()
        assert '12 selected books' in d.count_label.text() and 'at most 4 at a time' in d.count_label.text()
        assert 'OpenAI compatible, on this computer' in d.price_label.text()
        d.choices.style_box.setCurrentIndex(d.choices.style_box.findData('noir'))
        d.choices.style_chosen()
        assert d.choices.prompt_edit.toPlainText() == style_by_name('noir').template
        QTimer.singleShot(0, lambda: d.preview.reject())
        d.show_preview()
        assert d.preview.prompt == cover_prompt(book(), d.choices.choices())
        assert 'One request for each of the 12 selected books' in plain(d.preview.summary)
        d.resize(640, 560)
        shoot(d, artifacts / 'cover-bulk.png', 15_000, for_readme=True)
        d.generate_button.click()
        assert d.result() == d.DialogCode.Accepted and d.result_choices.style_text == style_by_name('noir').template
        assert prefs['cover_style'] == 'noir'
        assert server.received == []  # the dialog only chooses: the job sends


@pytest.mark.parametrize('name', ['damaged pixel data (89 bytes)', '8192x8192', '28 GB of zeros',
                                  '10,000 scans of 2048x2048'])
def test_a_crafted_image_is_said_in_words_and_cannot_be_used(qapp, prefs, name):
    from helpers.images import jpeg_progressive, png_bomb, png_damaged, png_of_side
    data, words = {'damaged pixel data (89 bytes)': (png_damaged(), 'is damaged (its pixel data cannot be unpacked)'),
                   '8192x8192': (png_of_side(8192, 8192), 'has 8192x8192 pixels'),
                   '28 GB of zeros': (png_bomb(), 'holds far more data than its 64x64 pixels need'),
                   '10,000 scans of 2048x2048': (jpeg_progressive(2048, 2048, 3, 10_000),
                                                 'is a JPEG of more than 100 scans')}[name]
    with ScriptedServer([image_reply(data)]) as server:
        use_images(prefs, server)
        d = CoverDialog(book(), 1, 'lib', None)
        d.show()
        d.generate_button.click()
        made(d)
        status = d.status.text()
        assert status.startswith('The image OpenAI compatible sent ') and words in status, status
        assert 'c0392b' in d.status.styleSheet()
        assert d.image is None and d.view.image.isNull() and not d.use_button.isEnabled()
        d.accept()  # nothing to use
        assert d.cover is None and d.cover_data is None
        d.reject()


def test_templates_go_through_calibres_worker_when_sent_and_the_preview_evaluates_none(qapp, prefs, monkeypatch):
    """Issue 26: the window's What will be sent evaluates no template (it says they apply when the cover
    is made); Generate puts the fields through them in calibre's worker, off the GUI thread, once."""
    from calibre_plugins.bookai.core import isolated
    runs = []
    real_run = isolated.run
    monkeypatch.setattr(isolated, 'run', lambda *a, **k: runs.append(a[:2]) or real_run(*a, **k))
    prefs['cover_templates'] = {'title': '{title:uppercase()}'}
    png = cover_png()
    with ScriptedServer([image_reply(png), image_reply(png)]) as server:
        use_images(prefs, server)
        d = CoverDialog(book(), 1, 'lib', None)
        d.show()
        QApplication.processEvents()
        QTimer.singleShot(0, lambda: d.preview.reject())
        d.show_preview()
        assert 'Title: "The Moving Toyshop"' in d.preview.prompt
        assert 'templates for the title, authors and series are applied when the cover is made' in plain(
            d.preview.summary)
        assert runs == [] and server.received == []
        d.generate_button.click()
        made(d)
        (req,) = requests_to(server, '/v1/images/generations')
        sent = json.loads(req['body'])['prompt']
        assert 'Title: "THE MOVING TOYSHOP"' in sent and sent == d.sent_prompt
        assert ('covers.prompt', 'evaluate_in_worker') in runs
        QTimer.singleShot(0, lambda: d.preview.reject())
        d.show_preview()  # once evaluated, What will be sent shows what goes
        assert 'Title: "THE MOVING TOYSHOP"' in d.preview.prompt
        d.close()
