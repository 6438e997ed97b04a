# License: GPLv3 Copyright: the Book AI developers
"""Options that can never work are refused when they are set, from the one declaration
(providers.options.Option): by configure, with a sentence and exit code 2, nothing saved; by the
settings dialog, with the problem under its field and nothing saved. Values already saved
that cannot be used (an edited file) make missing_setup() say what is wrong, instead of
"ready". NaN is never written. An empty key is refused; --forget-key deletes the key."""

import io
import json
import math

import pytest

from calibre_plugins.bookai import cli
from calibre_plugins.bookai.providers.registry import get_provider
from calibre_plugins.bookai.settings import secrets
from calibre_plugins.bookai.settings.keyring import Unavailable

# (option=value, what the sentence says)
BAD = [
    ('timeout=-5', '"-5" is not a number from 0.1 to 3600'),
    ('timeout=nan', '"nan" is not a number from 0.1 to 3600'),
    ('timeout=inf', '"inf" is not a number from 0.1 to 3600'),
    ('timeout=0', '"0" is not a number from 0.1 to 3600'),
    ('read_timeout=1e999', '"1e999" is not a number from 0.1 to 3600'),
    ('temperature=nan', '"nan" is not a number from -1 to 2'),
    ('temperature=5', '"5" is not a number from -1 to 2'),
    ('base_url=http://127.0.0.1:9/v1\nX-Injected: 1', 'has a space, a line break or a control character'),
    ('base_url=http://127.0.0.1 :9/v1', 'has a space, a line break or a control character'),
    ('base_url=http://127.0.0.1:99999/v1', 'The port in "http://127.0.0.1:99999/v1" is not a number from 1 to 65535'),
    ('base_url=http://[::1', '"http://[::1" is not an http:// or https:// address'),
    ('base_url=http://127.0.0.1:9/v1?query#fragment', 'has a ? or # part: give only the address of the API'),
    ('base_url=http://127.0.0.1:9/v1#fragment', 'has a ? or # part'),
    ('base_url=ftp://127.0.0.1/', 'is not an http:// or https:// address'),
    ('base_url=http://reader:s3cret-pass@127.0.0.1:9/v1',
     'holds a user name or password: put the key in the API key field instead'),
    ('model=tiny\x1b]52;c;aGk=\x07', 'has a line break or a control character'),
    ('headers=not a header', 'is not a "Name: value" header'),
]


def configure(*args, stdin=''):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(['configure', 'openai_compatible'] + list(args), stdin=io.StringIO(stdin), stdout=out,
                    stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize('item, said', BAD, ids=[b[0].encode('unicode_escape').decode() for b in BAD])
def test_configure_refuses_what_can_never_work(prefs, item, said):
    prefs['providers'] = {'openai_compatible': {'base_url': 'http://127.0.0.1:9/v1'}, 'ollama': {'model': 'm'}}
    before = json.dumps(prefs['providers'], sort_keys=True)
    code, out, err = configure(item)
    assert code == cli.USAGE and said in err, err
    assert 'Traceback' not in err and 's3cret-pass' not in err + out and '\x1b' not in err
    assert json.dumps(prefs['providers'], sort_keys=True) == before  # nothing saved


def test_nan_is_never_written(prefs):
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    configure('temperature=nan')
    configure('temperature=0.5', 'timeout=30')
    with open(plugin_prefs().file_path, 'rb') as f:
        saved = json.loads(f.read(), parse_constant=lambda c: pytest.fail(f'{c} in the settings file'))
    assert saved['providers']['openai_compatible']['temperature'] == 0.5
    with pytest.raises(ValueError):  # nor by any other way to the file
        prefs['book_text_budget'] = math.nan
    prefs['book_text_budget'] = 1500


@pytest.fixture
def key_store(monkeypatch):
    def no_keyring():
        raise Unavailable('none here')
    store = secrets.SecretStore(file='plugins/bookai-secrets-option-checks', open_system_store=no_keyring)
    monkeypatch.setattr(secrets, '_store', store)
    yield store
    store.delete_all()


def test_an_empty_key_is_refused_and_the_stored_one_kept(prefs, key_store):
    assert configure('api_key=-', stdin='sk-stored-key-0123\n')[0] == cli.OK
    code, out, err = configure('api_key=-', stdin='\n')
    assert code == cli.USAGE and 'No key came on standard input, so the stored key is kept.' in err
    assert key_store.get('openai_compatible', 'api_key') == 'sk-stored-key-0123'
    code, out, err = configure('api_key=-', stdin='sk with spaces\n')
    assert code == cli.USAGE and 'An API key is one line' in err and 'sk with' not in err
    assert key_store.get('openai_compatible', 'api_key') == 'sk-stored-key-0123'
    assert configure('--forget-key')[0] == cli.OK  # deleting the key: an action of its own
    assert key_store.get('openai_compatible', 'api_key') == ''


SAVED_BAD = {
    'read_timeout': -5, 'connect_timeout': 0, 'temperature': math.nan, 'base_url': 'http://127.0.0.1:99999/v1',
    'model': 5, 'enabled': 'yes', 'headers': 'X-One',
}


@pytest.fixture
def edited(prefs):
    """Provider settings as a reader's editing of the file leaves them (NaN included, which the
    JSON reader takes): in memory only, as read from such a file."""
    def edit(providers):
        dict.__setitem__(prefs, 'providers', providers)
    yield edit
    dict.__setitem__(prefs, 'providers', {})


@pytest.mark.parametrize('name', SAVED_BAD)
def test_a_saved_value_that_cannot_work_is_said_instead_of_ready(edited, name):
    edited({'openai_compatible': {'base_url': 'http://127.0.0.1:9/v1', name: SAVED_BAD[name]}})
    p = get_provider('openai_compatible')
    label = p.option_named(name).label
    assert p.config.missing_setup().startswith(f'The setting "{label}" of OpenAI compatible cannot be used: ')
    assert p.config.timeouts.read > 0 and p.config.timeouts.connect > 0  # read as the default meanwhile: never a crash
    out = io.StringIO()
    assert cli.main(['providers'], stdout=out, stderr=io.StringIO()) == cli.OK
    line = next(x for x in out.getvalue().splitlines() if 'openai_compatible' in x)
    assert 'cannot be used' in line and not line.endswith('ready')


class NoSecrets:
    def get(self, provider, name):
        return ''

    def where(self):
        return 'Kept nowhere: a test.'


def test_the_dialog_shows_the_problem_under_its_field_and_saves_nothing(qapp, prefs, artifacts):
    from calibre_plugins.bookai.gui.provider_config import ProviderConfigWidget
    prefs['providers'] = {'openai_compatible': {'base_url': 'http://127.0.0.1:9/v1'}}
    p = get_provider('openai_compatible', secrets=NoSecrets())
    w = ProviderConfigWidget(p)
    w.resize(640, 900)
    w.show()
    for text, said in [('http://127.0.0.1:99999/v1', 'not a number from 1 to 65535'),
                       ('http://user:pw@127.0.0.1:9/v1', 'put the key in the API key field'),
                       ('http://127.0.0.1:9/v1?x=1', 'has a ? or # part'),
                       ('http://127.0.0.1 :9/v1', 'has a space')]:
        w.editors['base_url'].setText(text)
        assert said in w.problems['base_url'].text() and w.problems['base_url'].isVisibleTo(w)
        assert said in w.validate()
        w.commit()
        assert prefs['providers'] == {'openai_compatible': {'base_url': 'http://127.0.0.1:9/v1'}}  # unchanged
    w.editors['base_url'].setText('http://127.0.0.1:99999/v1')
    qapp.processEvents()
    assert w.grab().save(str(artifacts / 'provider-config-bad-address.png'))
    w.editors['base_url'].setText('http://127.0.0.1:8/v1')
    assert not w.problems['base_url'].isVisibleTo(w) and w.validate() == ''
    w.commit()
    assert prefs['providers']['openai_compatible']['base_url'] == 'http://127.0.0.1:8/v1'
    w.close()


def test_the_dialog_shows_a_saved_value_that_cannot_work(qapp, prefs, edited, artifacts):
    from calibre_plugins.bookai.gui.provider_config import ProviderConfigWidget
    edited({'openai_compatible': {'base_url': 'http://127.0.0.1:9/v1', 'read_timeout': -5,
                                  'temperature': math.nan}})
    p = get_provider('openai_compatible', secrets=NoSecrets())
    w = ProviderConfigWidget(p)
    w.resize(640, 900)
    w.show()
    qapp.processEvents()
    assert w.editors['read_timeout'].value() == 600.0  # the default is shown
    assert w.problems['read_timeout'].text() == '"-5" is not a number from 0.1 to 3600'
    assert w.problems['temperature'].text() == '"nan" is not a number from -1 to 2'
    assert w.grab().save(str(artifacts / 'provider-config-saved-bad-values.png'))
    w.commit()  # saving writes what is shown: values that work
    saved = prefs['providers']['openai_compatible']
    assert saved['read_timeout'] == 600.0 and saved['temperature'] == -1.0
    w.close()
