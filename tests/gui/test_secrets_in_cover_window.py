# License: GPLv3 Copyright: the Book AI developers
"""The cover window, offscreen, making a cover with OpenRouter (a scripted server answering as
OpenRouter documents it) whose answer names its model "model-<key>" and says the key in its
words (issue 26, finding 3: the key was in the window's status line), then refuses with the key
in its error: the window shows no form of the key, and the model's name shows it was redacted."""

import base64
import copy
import json

import pytest
from qt.core import QApplication

from calibre.ebooks.metadata.book.base import Metadata

from calibre_plugins.bookai.gui.cover_dialog import CoverDialog
from calibre_plugins.bookai.settings.secrets import secret_store
from helpers.calibre_gui import wait_until
from helpers.images import png
from helpers.scripted_server import Reply, ScriptedServer
from helpers.secret_forms import forms_of, leaks

KEY = 'sk-or-v1-9d8c7b6a5f4e3d2c1b0a9f8e7d6c'
CATALOGUE = {'data': [{'id': 'google/gemini-2.5-flash-image', 'name': 'Gemini 2.5 Flash Image',
                       'architecture': {'output_modalities': ['image', 'text']}}]}


@pytest.fixture
def key_kept():
    """OpenRouter's key in the key store for this test, the store as it was afterwards."""
    store = secret_store().config
    before = copy.deepcopy(dict(store))
    secret_store().set('openrouter', 'api_key', KEY)
    yield
    dict.clear(store)
    dict.update(store, before)
    store.commit()


def as_json(body: object, status: int = 200) -> Reply:
    return Reply(status, json.dumps(body).encode(), [('Content-Type', 'application/json')])


def made_by(echo: str) -> Reply:
    image = 'data:image/png;base64,' + base64.b64encode(png(64, 96)).decode()
    return as_json({'id': f'gen-{echo}', 'model': f'model-{echo}', 'choices': [{'finish_reason': 'stop', 'message': {
        'role': 'assistant', 'content': f'Made for {echo}.', 'images': [
            {'type': 'image_url', 'image_url': {'url': image}}]}}], 'usage': {'cost': 0.04}})


def everything_shown(d: CoverDialog) -> str:
    QApplication.processEvents()
    return '\n'.join([d.status.text(), d.status.toolTip(), d.windowTitle()] + [
        w.text() for w in d.findChildren(type(d.status))])


@pytest.mark.parametrize('form', ['raw', 'lower', 'percent-every-byte', 'json-u', 'html-hex', 'hex'])
def test_the_cover_window_shows_no_key(qapp, prefs, key_kept, form):
    echo = forms_of(KEY)[form]
    refused = as_json({'error': {'message': f'Invalid credentials for {echo}', 'code': 401}}, 401)
    with ScriptedServer([as_json(CATALOGUE), made_by(echo), refused]) as server:
        prefs['providers'] = dict(prefs['providers'], openrouter={
            'base_url': server.url + '/api/v1', 'image_model': 'google/gemini-2.5-flash-image'})
        prefs['image_provider'] = 'openrouter'
        d = CoverDialog(Metadata('The Moving Toyshop', ['Edmund Crispin']), 1, 'lib', None)
        d.show()
        d.generate_button.click()
        wait_until(lambda: not d.busy, timeout=60)
        assert d.image is not None, d.status.text()
        shown = everything_shown(d)
        assert 'Model: model-' in shown and '[redacted]' in shown, shown
        assert leaks(shown, KEY) == [], shown
        d.generate_button.click()
        wait_until(lambda: not d.busy, timeout=60)
        shown = everything_shown(d)
        assert 'refused the API key' in shown and '[redacted]' in shown, shown
        assert leaks(shown, KEY) == [], shown
        d.reject()
        d.deleteLater()
