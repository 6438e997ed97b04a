# License: GPLv3 Copyright: the Book AI developers
"""Venice AI (providers/venice.py): what it sends for each reasoning effort and for web
search, as calibre 9.17's Venice provider does; its automatic model choice on Venice's own
model list; a streamed answer with the pages Venice cites; its errors; and the same
provider against a real OpenAI-style server (llama-server) and an independent fake (aimock).

The model list is Venice's, as its documentation publishes it (fixtures/venice-models.json
says from where). The streams Venice adds fields to (venice_parameters.web_search_citations,
'citations') are written from Venice's API reference (docs.venice.ai, the chat completions
response schema and its example) and replayed by a scripted server: aimock sends only the
fields of OpenAI's own stream."""

import json
from pathlib import Path

import pytest

from calibre_plugins.bookai.core import errors
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.messages import Answer, Message, Role, WebLink
from calibre_plugins.bookai.core.web_links import kept_links
from calibre_plugins.bookai.providers.models import Model, read_models_cache
from calibre_plugins.bookai.providers.registry import get_provider, provider_id
from helpers.peers import AiMock, LlamaServer, http
from helpers.reasoning import TURNS
from helpers.scripted_server import Reply, ScriptedServer, sse

FIXTURES = Path(__file__).parent / 'fixtures'
LISTING = (FIXTURES / 'venice-models.json').read_bytes()
KEY = 'vn-key-0123456789abcdef'


def venice(url, **settings):
    s = {'base_url': url, 'api_key': KEY}
    s.update(settings)
    return get_provider('venice', settings=s)


def listed():
    """The models of the recorded list, as the provider reads them."""
    return get_provider('venice', settings={'api_key': KEY}).parse_models(json.loads(LISTING))


def by_id(models, model_id):
    return next(m for m in models if m.id == model_id)


def test_it_is_registered_and_remote():
    p = get_provider('venice', settings={'api_key': KEY})
    assert (p.display_name, p.config.base_url) == ('Venice AI', 'https://api.venice.ai/api/v1')
    assert not p.connection.is_local and p.needs_key
    assert provider_id('Venice AI') == provider_id('venice') == 'venice'
    assert p.option_named('web_search').default is False  # it costs extra: off until turned on


# the model list {{{

def test_the_list_keeps_text_models_with_what_venice_says_of_them():
    data = json.loads(LISTING)['data']
    models = listed()
    assert len(models) == sum(1 for m in data if m['type'] == 'text') == 113  # no image, tts... model
    glm = by_id(models, 'zai-org-glm-5-2')
    assert (glm.name, glm.context_length, glm.created) == ('GLM 5.2', 1000000, 1781568000.0)
    assert (glm.reasoning, glm.reasoning_effort, glm.prices) == (True, True, (1.4, 4.4))
    assert set(glm.traits) == {'default', 'function_calling_default'}
    opus = by_id(models, 'claude-opus-4-5')
    assert (opus.reasoning, opus.reasoning_effort) == (True, False)
    llama = by_id(models, 'llama-3.3-70b')
    assert (llama.reasoning, llama.reasoning_effort, llama.traits) == (False, False, ())
    assert by_id(models, 'stealth-ox-alpha').prices == ()  # priced 0: not known, not free
    assert glm.price('prompt') == pytest.approx(1.4e-6) and glm.price('completion') == pytest.approx(4.4e-6)
    assert by_id(models, 'stealth-ox-alpha').pricing == ()
    assert (by_id(models, 'venice-uncensored-1-2').moderated, glm.moderated) == (False, None)  # None: not said


def test_offline_models_and_damaged_entries_are_left_out():
    p = get_provider('venice', settings={'api_key': KEY})
    models = p.parse_models({'data': [
        {'id': 'gone', 'type': 'text', 'model_spec': {'offline': True, 'traits': ['default']}},
        {'id': 'odd', 'type': 'text', 'created': 'yesterday', 'model_spec': {
            'name': 7, 'traits': 'fastest', 'availableContextTokens': -5, 'capabilities': ['supportsReasoning'],
            'pricing': {'input': {'usd': 'free'}, 'output': 3}}},
        {'id': 'many-traits', 'model_spec': {'traits': ['t%d' % i for i in range(100)] + [None, 'x' * 500]}},
        {'type': 'text'}, 'not a model', {'id': ['list'], 'type': 'text'}]})
    assert [m.id for m in models] == ['odd', 'many-traits']
    odd = models[0]
    assert (odd.name, odd.created, odd.context_length) == ('', 0.0, 0)
    assert (odd.traits, odd.reasoning, odd.prices) == ((), False, ())
    assert len(models[1].traits) == 16 and all(len(t) <= 64 for t in models[1].traits)
    assert p.parse_models(['not', 'a', 'list', 'of', 'models']) == p.parse_models('nothing') == []


def test_the_list_is_asked_for_text_models_with_the_key_and_cached():
    with ScriptedServer([Reply(200, LISTING)]) as server:
        p = venice(server.url + '/api/v1')
        assert len(p.models()) == 113
        got = server.received[0]
    assert got['path'] == '/api/v1/models?type=text'
    assert got['headers']['Authorization'] == f'Bearer {KEY}'
    cached = read_models_cache(p.model_list.cache_path())  # read back as an older Book AI wrote it, too
    assert by_id(cached, 'grok-4-6').traits and by_id(cached, 'grok-4-6').reasoning_effort


def test_a_cache_written_before_these_fields_existed_still_reads(tmp_path):
    path = tmp_path / 'venice.json'
    path.write_text(json.dumps({'fetched': 4e9, 'base_url': 'x', 'models': [
        {'id': 'm', 'name': 'M', 'created': 1, 'context_length': 2, 'free': False, 'reasoning': True, 'prices': []}]}))
    models = read_models_cache(str(path))
    assert models == [Model('m', 'M', 1, 2, reasoning=True, prices=())]
    assert (models[0].traits, models[0].reasoning_effort) == ((), False)


# }}}

# the automatic model choice {{{

def test_the_tiers_follow_venices_traits_on_its_own_list():
    """The recorded list names a 'most_intelligent' and a 'default' model, but no 'fastest'."""
    p = get_provider('venice', settings={'api_key': KEY})
    models = listed()
    got = {tier: p.pick_for_tier(models, tier).id for tier in ('high', 'medium', 'low')}
    # low: the lowest output price (a price of 0 is unknown, not cheap: stealth-ox-alpha is not it)
    assert got == {'high': 'grok-4-6', 'medium': 'zai-org-glm-5-2', 'low': 'e2ee-qwen-2-5-7b-p'}


def test_with_no_traits_the_tiers_go_by_price():
    p = get_provider('venice', settings={'api_key': KEY})
    models = [Model(m.id, m.name, m.created, prices=m.prices) for m in listed()]
    # high: the highest output price; of the two at $225, the newer
    assert p.pick_for_tier(models, 'high').id == 'openai-gpt-55-pro'
    assert p.pick_for_tier(models, 'low').id == p.pick_for_tier(models, 'medium').id == 'e2ee-qwen-2-5-7b-p'
    assert p.pick_for_tier([], 'high') is None


def test_the_fastest_trait_wins_the_low_tier():
    """The example answer of Venice's API reference (docs.venice.ai/api-reference/endpoint/models/list)."""
    example = {'data': [{'created': 1727966436, 'id': 'llama-3.2-3b', 'model_spec': {
        'availableContextTokens': 131072,
        'capabilities': {'supportsReasoning': False, 'supportsReasoningEffort': False},
        'description': 'Compact and efficient model for quick responses and lighter workloads.',
        'name': 'Llama 3.2 3B', 'offline': False, 'privacy': 'private',
        'pricing': {'input': {'usd': 0.15, 'diem': 0.15}, 'output': {'usd': 0.6, 'diem': 0.6}},
        'traits': ['fastest']}, 'object': 'model', 'owned_by': 'venice.ai', 'type': 'text'}],
        'object': 'list', 'type': 'text'}
    p = get_provider('venice', settings={'api_key': KEY})
    models = listed() + p.parse_models(example)
    assert p.pick_for_tier(models, 'low').id == 'llama-3.2-3b'
    assert p.parse_models(example)[0].description.startswith('Compact and efficient model')
    assert p.pick_for_tier(models, 'medium').id == 'zai-org-glm-5-2'


def test_with_no_model_set_the_tiers_model_answers():
    chunks = sse(json.dumps({'model': 'grok-4-6', 'choices': [{'delta': {'content': 'Hi'}, 'finish_reason': 'stop'}]}),
                 '[DONE]')
    with ScriptedServer([Reply(200, LISTING), Reply(200, chunks=chunks)]) as server:
        p = venice(server.url + '/api/v1', model_tier='high')
        answer = Answer()
        for chunk in p.text_chat([Message(Role.USER, 'q')]):
            answer.add(chunk)
        sent = json.loads(server.received[1]['body'])
    assert answer.failed is None, answer.failed
    assert sent['model'] == 'grok-4-6' and len(server.received) == 2  # the list was asked for once


# }}}

# what goes on the wire {{{

def payloads(**settings):
    """The chat payloads for models of the recorded list that reason with an effort, reason
    without one, and do not reason, and for a model the list does not name."""
    with ScriptedServer([Reply(200, LISTING)]) as server:
        p = venice(server.url + '/api/v1', **settings)
        got = {}
        for model in ('zai-org-glm-5-2', 'claude-opus-4-5', 'llama-3.3-70b', 'not-listed'):
            p.prepare_chat(model, CancelToken())  # as text_chat does before each request
            got[model] = json.loads(p.chat_request(TURNS, model).body)
        assert len(server.received) == 1  # one list for all
    return got


@pytest.mark.parametrize('effort, with_effort, without_effort, not_reasoning, unknown', [
    ('auto', (None, None), (None, None), (None, None), (None, None)),
    ('high', ('high', None), (None, None), (None, None), ('high', None)),
    ('medium', ('medium', None), (None, None), (None, None), ('medium', None)),
    ('low', ('low', None), (None, None), (None, None), ('low', None)),
    ('none', (None, True), (None, True), (None, None), (None, True)),
])
def test_each_reasoning_effort_as_the_model_can_take_it(effort, with_effort, without_effort, not_reasoning, unknown):
    sent = payloads(reasoning_effort=effort)

    def reasoning(p):
        return p.get('reasoning_effort'), p['venice_parameters'].get('disable_thinking')

    assert reasoning(sent['zai-org-glm-5-2']) == with_effort
    assert reasoning(sent['claude-opus-4-5']) == without_effort
    assert reasoning(sent['llama-3.3-70b']) == not_reasoning
    assert reasoning(sent['not-listed']) == unknown


def test_every_request_turns_off_venices_own_system_prompt_and_asks_for_usage():
    sent = payloads()['zai-org-glm-5-2']
    assert sent['venice_parameters'] == {'include_venice_system_prompt': False}
    assert sent['stream'] is True and sent['stream_options'] == {'include_usage': True}
    assert [(m['role'], m['content']) for m in sent['messages']] == [
        ('system', 'sys'), ('user', 'u1'), ('assistant', 'a1'), ('user', 'u2')]
    assert 'temperature' not in sent and 'max_tokens' not in sent


def test_web_search_asks_for_citations():
    sent = payloads(web_search=True)['llama-3.3-70b']
    assert sent['venice_parameters'] == {'include_venice_system_prompt': False, 'enable_web_search': 'auto',
                                         'enable_web_citations': True}


# }}}

# a streamed answer {{{

# the two pages of the example in Venice's chat completions reference, their text shortened
CITED = [{'title': 'Why is the sky blue? | BBC Sky at Night Magazine', 'date': '2024-08-13T13:45:16',
          'url': 'https://www.skyatnightmagazine.com/space-science/why-is-the-sky-blue',
          'content': 'So, the sky appears blue because the molecules of nitrogen and oxygen scatter light.'},
         {'title': 'Why is the sky blue?', 'date': '2025-04-16T16:55:11',
          'url': 'https://theconversation.com/why-is-the-sky-blue-246393',
          'content': 'Blue light from the Sun is scattered the most when it passes through the atmosphere.'}]


def chunk(**fields):
    base = {'id': 'chatcmpl-a81fbc2d81a7a083bb83ccf9f44c6e5e', 'object': 'chat.completion.chunk',
            'created': 1739928524, 'model': 'zai-org-glm-5-2'}
    base.update(fields)
    return json.dumps(base)


def delta(**d):
    return [{'index': 0, 'delta': d, 'finish_reason': None}]


def ask(chunks, **settings):
    """The answer to one question, the chat request as sent, and everything the server got."""
    with ScriptedServer([Reply(200, LISTING), Reply(200, chunks=chunks)]) as server:
        p = venice(server.url + '/api/v1', model='zai-org-glm-5-2', **settings)
        answer = Answer()
        for c in p.text_chat([Message(Role.SYSTEM, 'Be brief.'), Message(Role.USER, 'Why is the sky blue?')]):
            answer.add(c)
        return answer, json.loads(server.received[-1]['body']), server.received


def test_a_streamed_answer_with_the_pages_venice_cites():
    answer, sent, received = ask(sse(
        chunk(choices=delta(role='assistant', content=''), venice_parameters={
            'enable_e2ee': False, 'enable_web_search': 'auto', 'enable_web_citations': True,
            'include_venice_system_prompt': False, 'web_search_citations': CITED}),
        chunk(choices=delta(reasoning_content='The user asks about the sky.')),
        chunk(choices=delta(content='Rayleigh scattering^1^ ')),
        chunk(choices=delta(content='makes it blue^2^.')),
        chunk(choices=[{'index': 0, 'delta': {}, 'finish_reason': 'stop'}]),
        chunk(choices=[], usage={'prompt_tokens': 612, 'completion_tokens': 146, 'total_tokens': 758}),
        '[DONE]'), web_search=True)
    assert answer.failed is None, answer.failed
    assert answer.text == 'Rayleigh scattering^1^ makes it blue^2^.'
    assert answer.reasoning == 'The user asks about the sky.'
    assert answer.done.web_links == tuple(WebLink(c['title'], c['url']) for c in CITED)
    assert (answer.done.model, answer.done.finish_reason) == ('zai-org-glm-5-2', 'stop')
    usage = answer.done.usage
    assert (usage.input_tokens, usage.output_tokens) == (612, 146)
    # estimated from the list's prices: $1.4 in, $4.4 out per million tokens
    assert usage.cost.source == 'estimated' and usage.cost.amount == pytest.approx((612 * 1.4 + 146 * 4.4) / 1e6)
    assert [r['path'] for r in received] == ['/api/v1/models?type=text', '/api/v1/chat/completions']
    assert received[1]['headers']['Authorization'] == f'Bearer {KEY}'
    assert sent['venice_parameters']['enable_web_search'] == 'auto'


def test_citations_as_plain_addresses_are_links_too_each_once():
    answer, _sent, _received = ask(sse(
        chunk(choices=delta(content='See'), citations=['https://example.org/a', 'https://example.org/b'],
              venice_parameters={'web_search_citations': [{'title': 'A', 'url': 'https://example.org/a'},
                                                          'https://example.org/c']}),
        chunk(choices=[{'index': 0, 'delta': {}, 'finish_reason': 'stop'}], citations=['https://example.org/a']),
        '[DONE]'), web_search=True)
    assert [w.url for w in answer.done.web_links] == ['https://example.org/a', 'https://example.org/b',
                                                      'https://example.org/c']


def test_hostile_citations_are_bounded_and_only_web_addresses():
    pages = [{'title': 'Evil\x1b[31m\nred\u202e', 'url': 'https://example.org/evil'},
             {'title': 'script', 'url': 'javascript:alert(1)'},
             {'title': 'file', 'url': 'file:///etc/passwd'},
             {'title': 'long', 'url': 'https://example.org/' + 'x' * 5000},
             {'title': 'spaced', 'url': 'https://example.org/a b'},
             {'title': 'T' * 1000, 'url': 'https://example.org/long-title'},
             {'title': None, 'url': 'https://example.org/untitled'},
             {'url': 42}, 17, None]
    pages += [{'title': str(i), 'url': f'https://example.org/{i}'} for i in range(200)]
    answer, _sent, _received = ask(sse(
        chunk(choices=delta(content='x'), venice_parameters={'web_search_citations': pages}, citations='not a list'),
        chunk(choices=[{'index': 0, 'delta': {}, 'finish_reason': 'stop'}], citations=5,
              venice_parameters={'web_search_citations': {'url': 'https://example.org/not-a-list'}}), '[DONE]'))
    assert answer.failed is None, answer.failed
    links, left_out = kept_links(answer.done.web_links)  # as every window and the command line keep them
    assert len(links) == 50 and left_out == 4 + 153
    assert links[0] == WebLink('Evil\\x1b[31m red\\u202e', 'https://example.org/evil')
    assert [w.url for w in links[1:3]] == ['https://example.org/long-title', 'https://example.org/untitled']
    assert links[1].title == 'T' * 299 + '…' and links[2].title == 'https://example.org/untitled'
    assert all(w.url.startswith('https://example.org/') and len(w.url) < 100 for w in links)


def test_a_model_the_list_does_not_name_has_an_unknown_cost():
    answer, _sent, _received = ask(sse(
        chunk(model='some-new-model', choices=[{'index': 0, 'delta': {'content': 'x'}, 'finish_reason': 'stop'}]),
        chunk(model='some-new-model', choices=[], usage={'prompt_tokens': 1, 'completion_tokens': 1}), '[DONE]'))
    assert answer.done.usage.input_tokens == 1 and answer.done.usage.cost is None


# }}}

# errors {{{

@pytest.mark.parametrize('status, body, kind, said', [
    # Venice's own error shapes (StandardError, DetailedError of its API reference)
    (401, {'error': 'Authentication failed'}, errors.AuthenticationFailed, 'Authentication failed'),
    (402, {'error': 'Insufficient USD or Diem balance to complete request'}, errors.NoCredit, 'Insufficient'),
    (400, {'error': 'Invalid request parameters',
           'details': {'_errors': [], 'model': {'_errors': ['Field is required']}}},
     errors.BadRequest, 'Invalid request parameters'),
    (404, {'error': 'Specified model not found'}, errors.ModelNotFound, 'zai-org-glm-5-2'),
])
def test_venices_errors_are_told_in_words(status, body, kind, said):
    with ScriptedServer([Reply(200, LISTING), Reply(status, json.dumps(body).encode(),
                                                   headers=[('Content-Type', 'application/json')])]) as server:
        answer = Answer()
        for c in venice(server.url + '/api/v1', model='zai-org-glm-5-2').text_chat([Message(Role.USER, 'q')]):
            answer.add(c)
    assert isinstance(answer.failed.error, kind), answer.failed
    assert said in answer.failed.message and KEY not in answer.failed.message


def test_a_list_that_cannot_be_had_does_not_stop_the_chat():
    """With a model set, the list only says what the model can do: without it, the chat goes
    on, and says what is wrong if anything is."""
    chunks = sse(chunk(choices=[{'index': 0, 'delta': {'content': 'Hi'}, 'finish_reason': 'stop'}]), '[DONE]')
    with ScriptedServer([Reply(500, b'<html><body>Bad gateway</body></html>'), Reply(200, chunks=chunks)]) as server:
        answer = Answer()
        p = venice(server.url + '/api/v1', model='zai-org-glm-5-2', reasoning_effort='low')
        for c in p.text_chat([Message(Role.USER, 'q')]):
            answer.add(c)
        sent = json.loads(server.received[1]['body'])
    assert answer.text == 'Hi' and answer.failed is None
    assert sent['reasoning_effort'] == 'low'  # as chosen: nothing says the model cannot


def test_stop_ends_the_asking_for_the_list_too():
    """The list is asked for before the question: Stop then ends it, and the question is never sent."""
    import threading
    import time

    from calibre_plugins.bookai.core.messages import Done
    cancel, chunks = CancelToken(), []
    with ScriptedServer([Reply(200, chunks=[b'{"data": [', b']}'], stall_after=1)]) as server:
        p = venice(server.url + '/api/v1', model='zai-org-glm-5-2', read_timeout=600.0)
        worker = threading.Thread(target=lambda: chunks.extend(p.text_chat([Message(Role.USER, 'q')], cancel=cancel)))
        worker.start()
        safety = time.monotonic() + 60  # a safeguard, not an assertion
        while not server.received and time.monotonic() < safety:
            time.sleep(0.01)
        cancel.cancel()
        worker.join(60)
        assert not worker.is_alive()
        assert [r['path'] for r in server.received] == ['/api/v1/models?type=text']
    assert len(chunks) == 1 and isinstance(chunks[0], Done) and chunks[0].finish_reason == 'cancelled'


def test_an_error_inside_the_stream():
    answer, _sent, _received = ask(sse(chunk(choices=delta(content='Par')), json.dumps({'error': 'Model overloaded'})))
    assert answer.text == 'Par' and 'Model overloaded' in answer.failed.message


# }}}

# carried over from calibre {{{

def test_calibres_venice_settings_carry_over_and_mean_the_same(tmp_path):
    """A reader of calibre 9.17 with Venice AI set up: its settings, as calibre's Venice
    ConfigWidget.settings saves them (calibre/ai/venice/config.py), become Book AI's."""
    from calibre_plugins.bookai.from_calibre.carry_over import read
    (tmp_path / 'ai.json').write_text(json.dumps({
        'providers': {'Venice AI': {
            'api_key': KEY.encode('utf-8').hex(), 'model_choice_strategy': 'low', 'reasoning_strategy': 'none',
            'allow_web_searches': True, 'safe_mode': True, 'text_model': ['claude-opus-4-5', 'Claude Opus 4.5'],
            'text_to_image_model': ['qwen-image', 'Qwen Image']}},
        'purpose_map': {'AICapabilities.text_to_text': 'Venice AI'}}))
    found = read(str(tmp_path), libraries=())
    venice_items = [i for i in found.items if i.section == 'Venice AI']
    assert all(i.carried for i in venice_items), [i for i in venice_items if not i.carried]
    settings, keys = {}, {}
    for i in venice_items:
        if i.carried:
            settings.update(i.changes.providers.get('venice', {}))
            keys.update(i.changes.keys)
    assert settings == {'model_tier': 'low', 'reasoning_effort': 'none', 'web_search': True,
                        'model': 'claude-opus-4-5', 'image_model': 'qwen-image',
                        'safe_mode': True}  # Venice makes covers too, blurred as in calibre
    assert keys == {'venice': KEY}
    assert any(i.changes.prefs == {'provider': 'venice'} for i in venice_items)
    with ScriptedServer([Reply(200, LISTING)]) as server:
        p = venice(server.url + '/api/v1', **settings)
        sent = json.loads(p.chat_request(TURNS, p.choose_model()).body)
    assert sent['model'] == 'claude-opus-4-5'
    assert sent['venice_parameters'] == {'include_venice_system_prompt': False, 'disable_thinking': True,
                                         'enable_web_search': 'auto', 'enable_web_citations': True}


# }}}

# real and independent peers {{{

def test_against_a_real_llama_server():
    """llama.cpp's server speaks the same chat API and ignores venice_parameters: the answer
    streamed through the provider is the one the server gives a plain request."""
    with LlamaServer('tiny', alias='tiny', extra_args=('--temp', '0')) as llama:
        status, _headers, body = http('POST', llama.base_url + '/v1/chat/completions', {
            'model': 'tiny', 'max_tokens': 16, 'temperature': 0,
            'messages': [{'role': 'user', 'content': 'Name three colours.'}]})
        assert status == 200, body
        direct = json.loads(body)['choices'][0]['message']['content']
        p = venice(llama.base_url + '/v1', model='tiny', reasoning_effort='high', web_search=True)
        answer = Answer()
        for c in p.text_chat([Message(Role.USER, 'Name three colours.')], max_tokens=16):
            answer.add(c)
    assert answer.failed is None, answer.failed
    assert answer.text == direct and answer.done.finish_reason == 'length'
    assert answer.done.usage.output_tokens == 16
    assert [m.id for m in p.models()] == ['tiny']  # its list, read though it has no model_spec


def test_against_aimock():
    fixtures = {'fixtures': [{'match': {'userMessage': 'venice question'}, 'response': {
        'content': 'Venice says: the lagoon is shallow.', 'reasoning': 'A question about Venice.',
        'model': 'zai-org-glm-5-2', 'usage': {'prompt_tokens': 10, 'completion_tokens': 8, 'total_tokens': 18}}}]}
    with AiMock(FIXTURES / 'aimock.json', chunk_size=5) as mock:
        mock.add_fixtures(fixtures['fixtures'])
        answer = Answer()
        p = venice(mock.base_url + '/v1', model='zai-org-glm-5-2')
        for c in p.text_chat([Message(Role.USER, 'venice question')]):
            answer.add(c)
        request = [r for r in mock.journal() if r['path'] == '/v1/chat/completions'][-1]
    assert answer.failed is None, answer.failed
    assert answer.text == 'Venice says: the lagoon is shallow.' and len(answer.text_parts) > 3
    assert answer.reasoning == 'A question about Venice.'
    assert answer.done.web_links == () and answer.done.usage.output_tokens == 8
    assert request['headers'].get('authorization') == '[REDACTED]'  # sent (aimock hides its value)

# }}}
