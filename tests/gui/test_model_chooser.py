# License: GPLv3 Copyright: the Book AI developers
"""The model chooser (gui/model_chooser.py), offscreen, on OpenRouter's recorded catalogue
(tests/providers/fixtures/openrouter/): search, Only free, Only unmoderated, each sort, the
details of the model selected, hostile text shown as text; and from OpenRouter's settings
(gui/provider_config.py): Choose… fetches the list through the provider from a scripted
server, Refresh asks again, and the model chosen goes into the model field."""

import json
import shutil
from pathlib import Path

from qt.core import QDialog, QLocale, Qt

from calibre_plugins.bookai.gui.model_chooser import ModelChooser, output_price
from calibre_plugins.bookai.gui.provider_config import ProviderConfigWidget
from calibre_plugins.bookai.providers.models import Model, kept_models
from calibre_plugins.bookai.providers.registry import PROVIDERS, get_provider
from helpers.calibre_gui import wait_until
from helpers.project import HOST, PROJECT
from helpers.scripted_server import Reply, ScriptedServer

LISTING = (Path(__file__).parent.parent / 'providers' / 'fixtures' / 'openrouter' / 'models-2026-05-01.json').read_bytes()


class NoSecrets:
    def get(self, provider, name):
        return ''

    def where(self):
        return 'Kept nowhere: a test.'


def catalogue() -> list[Model]:
    p = get_provider('openrouter', settings={'api_key': 'sk-or-0123456789'})
    return kept_models(p.parse_models(json.loads(LISTING)))


def shown_ids(d: ModelChooser) -> list[str]:
    return [d.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(d.list.count())]


def sort_by(d: ModelChooser, key: str) -> None:
    d.sort.setCurrentIndex(d.sort.findData(key))


def test_search_filters_sorts_and_details(qapp, artifacts, prefs):
    models = catalogue()
    by_id = {m.id: m for m in models}
    d = ModelChooser(models, 'openai/gpt-5-mini', 'OpenRouter')
    d.resize(d.sizeHint())
    d.show()
    qapp.processEvents()
    assert d.chosen_id() == 'openai/gpt-5-mini'
    assert d.counts.text() == f'{len(models)} models' and d.list.count() == len(models)
    text = d.details.toPlainText()
    for said in ('OpenAI: GPT-5 Mini', 'openai/gpt-5-mini', '$0.25 per million input tokens',
                 '$2 per million output tokens', '$0.01 per web search',
                 f'{QLocale.system().toString(400000)} tokens', 'Content moderated', 'yes',
                 'Published', '7 August 2025', 'GPT-5 Mini is a compact version of GPT-5'):
        assert said in text, said

    d.search.setText('gpt 5 MINI')  # every word is part of a word of the name or id
    ids = shown_ids(d)
    assert ids and all('gpt-5' in i and 'mini' in i for i in ids) and 'openai/gpt-5-mini' in ids
    assert d.counts.text() == f'{len(ids)} of {len(models)} models'
    assert d.chosen_id() == 'openai/gpt-5-mini'  # kept selected while it is shown
    d.search.setText('')

    d.only_free.setChecked(True)
    free = shown_ids(d)
    assert free and sorted(free) == sorted(m.id for m in models if m.free)
    assert 'openai/gpt-oss-120b:free' in free and 'openrouter/auto' not in free
    d.only_unmoderated.setChecked(True)
    both = shown_ids(d)
    assert both and all(by_id[i].free and by_id[i].moderated is False for i in both)
    assert len(both) < len(free)  # gpt-oss's free endpoints are moderated
    d.only_free.setChecked(False)
    unmoderated = shown_ids(d)
    assert sorted(unmoderated) == sorted(m.id for m in models if m.moderated is False)
    d.only_unmoderated.setChecked(False)

    sort_by(d, 'name')
    names = [d.list.item(i).text().lower() for i in range(d.list.count())]
    assert names == sorted(names)
    sort_by(d, 'newest')
    created = [by_id[i].created for i in shown_ids(d)]
    assert created == sorted(created, reverse=True) and created[0] > created[-1]
    sort_by(d, 'cheapest')
    prices = [output_price(by_id[i]) for i in shown_ids(d)]
    assert prices == sorted(prices) and prices[0] == 0 and prices[-1] == float('inf')  # openrouter/auto: -1
    sort_by(d, 'expensive')
    paid = [p for p in (output_price(by_id[i]) for i in shown_ids(d)) if p != float('inf')]
    assert paid == sorted(paid, reverse=True) and shown_ids(d)[-1] == 'openrouter/auto'
    sort_by(d, 'context')
    contexts = [by_id[i].context_length for i in shown_ids(d)]
    assert contexts == sorted(contexts, reverse=True)

    sort_by(d, 'newest')
    d.search.setText('claude')
    d.list.setCurrentRow(0)
    qapp.processEvents()
    assert d.chosen_id().startswith(('anthropic/', '~anthropic/'))
    shot = artifacts / 'openrouter-chooser.png'
    assert d.grab().save(str(shot)) and shot.stat().st_size > 8000
    if HOST == 'forky':
        shutil.copy(shot, PROJECT / 'docs' / 'screenshots' / 'openrouter-chooser.png')
    d.accept()
    assert d.result() == QDialog.DialogCode.Accepted


def test_what_a_service_says_is_shown_as_text(qapp, prefs):
    hostile = Model('evil/model', 'Evil: <b>Bold</b>\x1b[31m\u202eRed', 1e300, 10 ** 30,
                    description='<script>alert(1)</script>\n<a href="http://example.invalid/">link</a> '
                                '<img src="http://example.invalid/x.png"> [md](http://example.invalid/)',
                    pricing=(('prompt', 0.000001), ('completion', 0.000002)), moderated=None)
    d = ModelChooser([hostile], 'evil/model')
    text, page = d.details.toPlainText(), d.details.toHtml()
    assert '<script>alert(1)</script>' in text and '<a href="http://example.invalid/">link</a>' in text
    assert 'href="http://example.invalid' not in page and '<img' not in page
    assert '\x1b' not in text and '\u202e' not in text and '\x1b' not in d.list.item(0).text()
    assert 'not said' in text  # moderation unknown
    d.close()


def test_choosing_automatically_clears_the_choice(qapp, prefs):
    d = ModelChooser(catalogue(), 'openai/gpt-5-mini')
    d.clear_button.click()
    assert d.result() == QDialog.DialogCode.Accepted and d.chosen_id() == ''


def test_the_filters_and_sort_are_remembered(qapp, prefs):
    models = catalogue()
    d = ModelChooser(models)
    assert not d.only_free.isChecked() and d.sort.currentData() == 'newest'
    d.only_free.setChecked(True)
    sort_by(d, 'cheapest')
    d.reject()
    assert prefs['model_chooser'] == {'only_free': True, 'only_unmoderated': False, 'sort': 'cheapest'}
    d = ModelChooser(models)
    assert d.only_free.isChecked() and not d.only_unmoderated.isChecked() and d.sort.currentData() == 'cheapest'
    assert all(by.free for by in models if by.id in shown_ids(d)) and d.list.count() < len(models)
    d.reject()
    prefs['model_chooser'] = {'only_free': 'yes', 'only_unmoderated': 1, 'sort': ['name']}  # an edited file
    d = ModelChooser(models)
    assert not d.only_free.isChecked() and not d.only_unmoderated.isChecked() and d.sort.currentData() == 'newest'
    assert d.list.count() == len(models)
    d.reject()


def test_only_providers_with_a_chooser_offer_it(qapp):
    for name in PROVIDERS:
        p = get_provider(name, settings={}, secrets=NoSecrets())
        w = ProviderConfigWidget(p)
        picker = w.editors['model']
        assert (picker.choose_button is not None) == p.has_model_chooser == (name == 'openrouter'), name
        w.close()


def test_choose_from_the_settings_sets_the_model_field(qapp, prefs):
    """Choose… asks the service for its list through the provider (in a worker thread), opens
    the chooser on it; Refresh asks again; the model chosen lands in the model field."""
    with ScriptedServer([Reply(200, LISTING), Reply(200, LISTING)]) as server:
        provider = get_provider('openrouter', settings={'base_url': server.url + '/api/v1'}, secrets=NoSecrets())
        w = ProviderConfigWidget(provider)
        w.show()
        picker = w.editors['model']
        picker.choose_button.click()
        wait_until(lambda: w.chooser is not None or 'red' in w.status.text())
        d = w.chooser
        assert d is not None, w.status.text()
        assert [r['path'] for r in server.received] == ['/api/v1/models']
        assert d.list.count() == len(json.loads(LISTING)['data'])
        d.refresh_button.click()
        wait_until(lambda: d.refresh_button.isEnabled())
        assert len(server.received) == 2 and 'models available' in d.status.text()
        d.search.setText('deepseek v4 pro')
        d.list.setCurrentRow(0)
        chosen = d.chosen_id()
        assert chosen.startswith('deepseek/')
        d.accept()
        assert picker.value() == chosen and w.values()['model'] == chosen
        w.close()


def test_a_list_that_cannot_be_had_is_said_in_the_settings(qapp):
    with ScriptedServer([Reply(401, b'{"error": {"message": "No auth credentials found", "code": 401}}')]) as server:
        provider = get_provider('openrouter', settings={'base_url': server.url + '/api/v1'}, secrets=NoSecrets())
        w = ProviderConfigWidget(provider)
        w.editors['model'].choose_button.click()
        wait_until(lambda: w.editors['model'].choose_button.isEnabled() and w.status.text())
        assert w.chooser is None and 'No auth credentials found' in w.status.text()
        w.close()
