# License: GPLv3 Copyright: the Book AI developers
"""Hostile and broken streams: the SSE and NDJSON decoders and every provider's reading
of a stream, fuzzed with hypothesis.

Three kinds of input, each cut into arbitrary reads: arbitrary bytes; real streams,
recorded at test time from llama-server and aimock, then mutated (bit flips,
truncation, duplication, deletion, inserted lines); and well-framed events whose JSON
has any shape, built from the keys and values the real streams use. The only allowed
outcomes are answer chunks (with str text) and a ProviderError; never another
exception, never a hang (each example runs under an alarm, a guard against hangs, not
a measure of speed). The number of inputs tried per target is printed and written to
the artifacts folder as fuzz-volume.json.
"""

import json
import signal
from pathlib import Path

import pytest

from helpers.fuzzing import fuzz, mutate  # first: it points hypothesis at its cache
from hypothesis import given, strategies as st

from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.core.messages import Message, ReasoningDelta, Role, TextDelta, Usage
from calibre_plugins.bookai.core.streams import NDJSONDecoder, SSEDecoder, SSEEvent
from calibre_plugins.bookai.providers.streaming import StreamState
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.peers import AiMock, LlamaServer, http

AIMOCK_FIXTURES = Path(__file__).parent.parent / 'providers' / 'fixtures' / 'aimock.json'
HANG_GUARD = 5  # seconds one example may take before it counts as a hang

# inputs per test over the four hosts (each tries its own quarter: helpers.fuzzing.fuzz), tens of
# thousands in all
ANY_BYTES = 1500
MUTATED = 2500
PROVIDER_ANY_BYTES = 600
PROVIDER_MUTATED = 1100
PROVIDER_SHAPED = 300


# what is recorded: provider -> (peer, question, model); openrouter reads the chat-completions
# streams too, with its own usage reading
RECORDED = {
    'openai_compatible': [('llama', 'Say hello.', 'tiny'), ('aimock', 'gemini question', 'test-model')],
    'openai': [('llama', 'Say hello.', 'tiny'), ('aimock', 'responses question', 'gpt-5-mini')],
    'anthropic': [('llama', 'Say hello.', 'tiny'), ('aimock', 'claude question', 'claude-sonnet-4-5')],
    'gemini': [('aimock', 'gemini question', 'gemini-2.5-flash')],
    'ollama': [('aimock', 'ollama question', 'llama3.2')],
}
PROVIDERS = ('openai_compatible', 'openrouter', 'openai', 'anthropic', 'gemini', 'ollama')
WIRE = {'openrouter': 'openai_compatible'}


def provider(name, base_url='http://127.0.0.1:9', model='m'):
    return get_provider(name, settings={'base_url': base_url, 'api_key': 'fuzz-key-0123456789', 'model': model})


@pytest.fixture(scope='module')
def recordings():
    """{wire format's provider: [stream bytes]}, as the real peers send them now."""
    found = {}
    with LlamaServer('tiny', alias='tiny') as llama, AiMock(AIMOCK_FIXTURES) as mock:
        for name, asks in RECORDED.items():
            for peer, question, model in asks:
                root = llama.base_url if peer == 'llama' else mock.base_url
                base = root + {'gemini': '/v1beta', 'ollama': ''}.get(name, '/v1')
                req = provider(name, base, model).chat_request(
                    [Message(Role.SYSTEM, 'Be brief.'), Message(Role.USER, question)], model, 16)
                status, headers, body = http(req.method, req.url, req.body, req.headers, timeout=120)
                assert status == 200 and body, (name, peer, status, body[:300])
                found.setdefault(name, []).append(body)
    return found


@pytest.fixture(scope='module')
def volume(artifacts):
    """Inputs tried per target, written out when the module's tests are done."""
    counts = {}
    yield counts
    path = artifacts / 'fuzz-volume.json'
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        kept = {}
    kept.update(counts)
    path.write_text(json.dumps(kept, indent=1, sort_keys=True))
    for name, n in sorted(counts.items()):
        print('fuzz volume', name, n)
    print('fuzz volume total', sum(counts.values()))


class Hang(BaseException):
    """Not an Exception: no `except Exception` in the code under test can swallow it."""


def guarded(fn, *args):
    def alarm(signum, frame):
        raise Hang(f'no result after {HANG_GUARD} seconds')
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_GUARD)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# inputs {{{

@st.composite
def split(draw, data):
    """data cut into reads at arbitrary points (empty reads included)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=24)))
    return [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]


def json_values(keys=st.text(max_size=8), strings=st.text(max_size=12)):
    scalars = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | strings
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=6),
                        max_leaves=8)


def encoded(value):
    return json.dumps(value, ensure_ascii=False).encode('utf-8')


@st.composite
def hostile_lines(draw):
    """A line a broken or hostile server might slip into a stream."""
    return draw(st.sampled_from((
        b'data: [DONE]\n\n', b'data: {}\n\n', b'data: []\n\n', b'data: null\n\n', b'data: "x"\n\n', b'data: 5\n\n',
        b'event: error\n', b'event: ping\ndata: {}\n\n', b': comment\n', b'\r', b'\n', b'\r\n', b'data:\n\n',
        b'{"error": 5}\n', b'{"done": true, "message": 3}\n', b'\xef\xbb\xbf', b'\xff\xfe\x00', b'retry: 9\n',
    )) | st.binary(max_size=40).map(lambda b: b + b'\n') | json_values().map(lambda v: b'data: ' + encoded(v) + b'\n\n'))


@st.composite
def mutated(draw, streams):
    return mutate(draw, draw(st.sampled_from(streams)), hostile_lines())


def vocabulary(streams):
    """The keys and the short string values of the JSON in streams: what a structured fuzz builds from."""
    keys, strings = set(), set()

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                keys.add(k)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str) and len(v) < 40:
            strings.add(v)
    for data in streams:
        for line in data.decode('utf-8', 'replace').splitlines():
            try:
                walk(json.loads(line.removeprefix('data:')))
            except ValueError:
                pass
    keys |= {'error', 'type', 'code', 'message', 'status', 'usage', 'delta', 'text', 'done'}
    return sorted(keys), sorted(strings)


def shaped(streams, ndjson):
    """Well-framed events whose JSON has any shape, from the words the real streams use."""
    keys, strings = vocabulary(streams)
    values = json_values(st.sampled_from(keys), st.sampled_from(strings) | st.text(max_size=6))
    events = st.dictionaries(st.sampled_from(keys), values, max_size=6) | values
    if ndjson:
        frame = events.map(lambda v: encoded(v) + b'\n')
    else:
        names = st.sampled_from([b''] + [b'event: ' + s.encode() + b'\n' for s in strings])
        frame = st.tuples(names, events).map(lambda ne: ne[0] + b'data: ' + encoded(ne[1]) + b'\n\n')
    return st.lists(frame, min_size=1, max_size=8).map(b''.join)

# }}}


# what is run {{{

def decode(decoder, pieces):
    out = []
    for piece in pieces:
        out += decoder.feed(piece)
    return out + decoder.close()


def ndjson_outcome(pieces):
    try:
        return repr(decode(NDJSONDecoder(), pieces))  # repr: NaN is not equal to itself
    except ValueError:
        return 'not JSON'


class Replay:
    """A response whose body arrives in the given reads."""

    def __init__(self, pieces):
        self.pieces = pieces

    def chunks(self):
        yield from self.pieces


def read(name, pieces):
    """What provider name makes of a stream arriving in pieces: its chunks and the Done it would end with."""
    p = provider(name)
    state = StreamState()
    chunks = []
    try:
        for chunk in p.answering.answer_chunks(p.connection.events(Replay(pieces)), state):
            assert type(chunk) in (TextDelta, ReasoningDelta) and isinstance(chunk.text, str), chunk
            chunks.append(chunk)
    except ProviderError as e:
        assert isinstance(str(e), str)
    done = p.answering.done(state, 'm', state.finish_reason or 'stop')
    assert isinstance(done.model, str) and isinstance(done.usage, Usage), done
    for n in (done.usage.input_tokens, done.usage.output_tokens, done.usage.reasoning_tokens,
              done.usage.cached_tokens):
        assert n is None or type(n) is int, done.usage
    assert all(isinstance(w.url, str) and isinstance(w.title, str) for w in done.web_links), done.web_links
    return chunks

# }}}


# the decoders {{{

@fuzz(ANY_BYTES)
@given(data=st.data())
def test_sse_decoder_with_any_bytes(data, volume):
    stream = data.draw(st.binary(max_size=600) | st.lists(hostile_lines(), max_size=12).map(b''.join))
    pieces = data.draw(split(stream))
    events = guarded(decode, SSEDecoder(), pieces)
    assert all(type(e) is SSEEvent and isinstance(e.data, str) and isinstance(e.event, str) for e in events)
    assert events == decode(SSEDecoder(), [stream])  # however the bytes arrive, the same events
    volume['sse: any bytes'] = volume.get('sse: any bytes', 0) + 1


@fuzz(MUTATED)
@given(data=st.data())
def test_sse_decoder_with_mutated_real_streams(data, recordings, volume):
    sse = [s for name, streams in recordings.items() if name != 'ollama' for s in streams]
    stream = data.draw(mutated(sse))
    events = guarded(decode, SSEDecoder(), data.draw(split(stream)))
    assert events == decode(SSEDecoder(), [stream])
    volume['sse: mutated recordings'] = volume.get('sse: mutated recordings', 0) + 1


@fuzz(ANY_BYTES)
@given(data=st.data())
def test_ndjson_decoder_with_any_bytes(data, volume):
    stream = data.draw(st.binary(max_size=600) | st.lists(json_values(), max_size=8).map(
        lambda vs: b'\n'.join(map(encoded, vs))))
    assert guarded(ndjson_outcome, data.draw(split(stream))) == ndjson_outcome([stream])
    volume['ndjson: any bytes'] = volume.get('ndjson: any bytes', 0) + 1


@fuzz(MUTATED)
@given(data=st.data())
def test_ndjson_decoder_with_mutated_real_streams(data, recordings, volume):
    stream = data.draw(mutated(recordings['ollama']))
    assert guarded(ndjson_outcome, data.draw(split(stream))) == ndjson_outcome([stream])
    volume['ndjson: mutated recordings'] = volume.get('ndjson: mutated recordings', 0) + 1

# }}}


# the providers {{{

def test_the_recordings_read_as_answers(recordings):
    """The fuzz starts from real, healthy streams: each reads as a finished answer."""
    for name in PROVIDERS:
        for stream in recordings[WIRE.get(name, name)]:
            p, state = provider(name), StreamState()
            text = "".join(c.text for c in p.answering.answer_chunks(p.connection.events(Replay([stream])), state)
                           if isinstance(c, TextDelta))
            assert text and state.finished, (name, stream[:300])


@pytest.mark.parametrize('name', PROVIDERS)
def test_a_provider_with_any_bytes(name, volume):
    @fuzz(PROVIDER_ANY_BYTES)
    @given(data=st.data())
    def run(data):
        stream = data.draw(st.binary(max_size=400) | st.lists(hostile_lines(), max_size=10).map(b''.join))
        guarded(read, name, data.draw(split(stream)))
        volume[f'{name}: any bytes'] = volume.get(f'{name}: any bytes', 0) + 1
    run()


@pytest.mark.parametrize('name', PROVIDERS)
def test_a_provider_with_mutated_real_streams(name, recordings, volume):
    streams = recordings[WIRE.get(name, name)]

    @fuzz(PROVIDER_MUTATED)
    @given(data=st.data())
    def run(data):
        guarded(read, name, data.draw(split(data.draw(mutated(streams)))))
        volume[f'{name}: mutated recordings'] = volume.get(f'{name}: mutated recordings', 0) + 1
    run()


@pytest.mark.parametrize('name', PROVIDERS)
def test_a_provider_with_events_of_any_shape(name, recordings, volume):
    streams = shaped(recordings[WIRE.get(name, name)], name == 'ollama')

    @fuzz(PROVIDER_SHAPED)
    @given(data=st.data())
    def run(data):
        guarded(read, name, data.draw(split(data.draw(streams))))
        volume[f'{name}: events of any shape'] = volume.get(f'{name}: events of any shape', 0) + 1
    run()

# }}}


# what the fuzz found, kept as plain tests {{{

def answer_of(name, stream):
    """(text, error, state) of a stream read whole by provider name."""
    p, state, text = provider(name), StreamState(), ''
    try:
        for chunk in p.answering.answer_chunks(p.connection.events(Replay([stream])), state):
            text += chunk.text
    except ProviderError as e:
        return text, e, state
    return text, None, state


@pytest.mark.parametrize('name', ['openai_compatible', 'openai', 'anthropic', 'gemini'])
@pytest.mark.parametrize('payload', [b'null', b'[]', b'5', b'"text"', b'[{"type": "message_stop"}]'])
def test_an_event_that_is_not_a_json_object_is_a_protocol_error(name, payload):
    # was: TypeError or AttributeError from `'error' in data` / `data.get(...)`
    text, error, state = answer_of(name, b'data: ' + payload + b'\n\n')
    assert type(error).__name__ == 'ProtocolError' and 'not a valid answer stream' in str(error), error


@pytest.mark.parametrize('name, stream', [
    ('openai_compatible', b'data: {"choices": [5]}\n\n'),
    ('openai_compatible', b'data: {"choices": [{"delta": "x"}]}\n\n'),
    ('openai_compatible', b'data: {"choices": {"a": 1}}\n\n'),
    ('openai_compatible', b'data: {"choices": [{"delta": {}, "finish_reason": ["stop"]}]}\n\n'),
    ('openrouter', b'data: {"choices": [], "usage": {"cost": "free"}}\n\n'),
    ('openai', b'data: {"type": "response.completed", "response": {"usage": 5}}\n\n'),
    ('anthropic', b'event: message_start\ndata: {"type": "message_start", "message": [1]}\n\n'),
    ('anthropic', b'data: {"type": "content_block_delta", "delta": {"type": "text_delta", "text": {"a": 1}}}\n\n'),
    ('anthropic', b'data: {"type": "error", "error": "overloaded"}\n\n'),
    ('gemini', b'data: {"candidates": [{"content": {"parts": ["a"]}}]}\n\n'),
    ('gemini', b'data: {"candidates": [{"content": {"parts": [{"text": 5}]}}]}\n\n'),
    ('gemini', b'data: {"error": "quota"}\n\n'),
    ('ollama', b'{"message": "hello"}\n'),
    ('ollama', b'{"message": {"content": ["a"]}}\n'),
])
def test_json_of_the_wrong_shape_is_a_protocol_error(name, stream):
    # was: AttributeError, TypeError or a chunk whose text is not text
    text, error, state = answer_of(name, stream)
    assert type(error).__name__ == 'ProtocolError' and 'not a valid answer stream' in str(error), error


@pytest.mark.parametrize('name, stream', [
    ('openai_compatible', b'data: {"model": 5, "choices": [], "usage": {"prompt_tokens": "12", '
                          b'"completion_tokens": 3.5}}\n\ndata: [DONE]\n\n'),
    ('gemini', b'data: {"modelVersion": ["m"], "usageMetadata": {"promptTokenCount": "many"}, '
               b'"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}\n\n'),
    ('ollama', b'{"model": {"n": 1}, "message": {"content": "hi"}, "done": true, "prompt_eval_count": [1]}\n'),
])
def test_counts_and_names_of_the_wrong_type_are_dropped_not_shown(name, stream):
    # was: a model name that is not text and token counts that are not numbers, reaching the window
    text, error, state = answer_of(name, stream)
    assert error is None and state.finished
    done = provider(name).answering.done(state, 'asked-model', 'stop')
    assert done.model == 'asked-model' and (done.usage.input_tokens, done.usage.output_tokens) in (
        (None, None), (None, 0))


def test_a_healthy_answer_keeps_its_counts():
    text, error, state = answer_of('openai_compatible', b'data: {"model": "m1", "choices": [{"delta": {"content": '
                                   b'"hi"}}], "usage": {"prompt_tokens": 12, "completion_tokens": 3}}\n\ndata: [DONE]\n\n')
    assert (text, error, state.model, state.usage.input_tokens, state.usage.output_tokens) == ('hi', None, 'm1', 12, 3)

# }}}
