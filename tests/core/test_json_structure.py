# License: GPLv3 Copyright: the Book AI developers
"""JSON bounded by its structure, not only its bytes (issue 26, finding 7): limits.load_json
refuses, before parsing and at C speed, JSON whose values would take more than
JSON_MEMORY_PER_BYTE times its size in memory (TooManyValues), as well as JSON nested too deep
(TooDeep). The crafted answers of the issue (an image answer of 14 million empty objects, a
model list of empty objects) are refused within a few times their size; real answers (OpenRouter's
and Venice's model lists, 64 embeddings of 4,096 numbers, a 30 MB image in base64) are read; the
estimate load_json goes by is never below what this Python measures json.loads to take, for
every shape that costs Python more than its text (tracemalloc); and the depth check sees
through strings both ways."""

import base64
import json
import random
import signal
import tracemalloc
from pathlib import Path

import pytest

from calibre_plugins.bookai.core import limits
from helpers.peak import MB, peak_growth

FIXTURES = Path(__file__).resolve().parent.parent / 'providers' / 'fixtures'
OPENROUTER = sorted((FIXTURES / 'openrouter').glob('models-*.json'))
VENICE = FIXTURES / 'venice-models.json'


def empty_objects(count: int, head: bytes = b'{"created":1,"data":[') -> bytes:
    return head + b'{},' * (count - 1) + b'{}]}'


def tracemalloc_peak(text):
    """What json.loads(text) takes at its peak, as Python counts its own allocations."""
    tracemalloc.start()
    try:
        value = json.loads(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del value
    return peak


# the crafted answers of the issue

def test_an_image_answer_of_14_million_empty_objects_is_refused_within_three_times_its_size():
    text = empty_objects(14_000_000)  # 40 MB: under the image answer's bound in bytes
    assert 40 * MB < len(text) <= limits.MAX_IMAGE_JSON_BYTES
    for per_byte in (None, limits.IMAGE_JSON_MEMORY_PER_BYTE):
        outcome, growth = peak_growth(lambda: limits.load_json(text, memory_per_byte=per_byte))
        assert isinstance(outcome, limits.TooManyValues), outcome
        assert outcome.per_byte == (per_byte or limits.JSON_MEMORY_PER_BYTE)
        assert growth < 3.5 * len(text), growth / len(text)  # json.loads: 24 times its size


def test_a_model_list_of_empty_objects_is_refused_within_three_times_its_size():
    text = empty_objects(5_300_000, b'{"data":[')
    assert len(text) <= limits.MAX_JSON_BYTES
    outcome, growth = peak_growth(lambda: limits.load_json(text))
    assert isinstance(outcome, limits.TooManyValues), outcome
    assert growth < 3.5 * len(text), growth / len(text)


@pytest.mark.parametrize('unit', [b'[]', b'[[[[0]]]]', b'{"a":{}}', b'{"":""}', b'"ab"', b'[true]'])
def test_other_costly_shapes_are_refused(unit):
    text = b'[' + b','.join([unit] * (8 * MB // len(unit))) + b']'
    with pytest.raises(limits.TooManyValues):
        limits.load_json(text)
    with pytest.raises(limits.TooManyValues):
        limits.load_json(text.decode())


def test_distinct_keys_count_each_and_repeated_ones_once():
    model = {'id': 'openai/gpt-4o-mini', 'name': 'OpenAI: GPT-4o mini', 'context_length': 128000}
    repeated = ('{"data":[' + ','.join([json.dumps(model, separators=(',', ':'))] * 100_000) + ']}').encode()
    outside, strings = limits.STRING.subn('', repeated.decode())
    every_key = limits.json_cost(repeated.decode(), len(repeated), True, outside, strings)
    assert every_key > limits.JSON_MEMORY_PER_BYTE * len(repeated) + limits.JSON_MEMORY_FLOOR  # were each key new
    assert limits.load_json(repeated)['data'][-1] == model  # each is counted once
    distinct = ('{' + ','.join(f'"{chr(0x4e00 + i % 20000)}{i // 20000}":0' for i in range(600_000)) + '}').encode()
    with pytest.raises(limits.TooManyValues):
        limits.load_json(distinct)


# real answers

def bigger_openrouter_list(size):
    """OpenRouter's recorded list, its models repeated (each id made its own) to about size bytes."""
    models = json.loads(OPENROUTER[-1].read_bytes())['data']
    out, n, length = [], 0, 0
    while length < size:
        for m in models:
            m = dict(m, id=f'{m["id"]}-{n}')
            n += 1
            out.append(m)
            length += len(json.dumps(m)) + 2
    return json.dumps({'data': out}).encode()


def embeddings(shape):
    random.seed(26)
    if shape == 'openai':  # as OpenAI's API sends them: indented, full doubles
        return json.dumps({'object': 'list', 'data': [
            {'object': 'embedding', 'index': i, 'embedding': [random.uniform(-0.1, 0.1) for _ in range(4096)]}
            for i in range(64)], 'model': 'text-embedding-3-large', 'usage': {'prompt_tokens': 9, 'total_tokens': 9}},
            indent=2).encode()
    if shape == 'ollama':  # compact, float32 digits
        return json.dumps({'model': 'm', 'embeddings': [[float(f'{random.uniform(-0.1, 0.1):.9g}') for _ in range(4096)]
                                                        for _ in range(64)]}, separators=(',', ':')).encode()
    return json.dumps({'data': [{'embedding': [round(random.uniform(-1, 1), 3) for _ in range(4096)], 'index': i}
                                for i in range(64)]}, separators=(',', ':')).encode()  # three digits: the densest


def image_answer():
    random.seed(26)
    return json.dumps({'created': 1, 'data': [{'b64_json': base64.b64encode(random.randbytes(22 * MB)).decode(),
                                               'revised_prompt': 'A cover.'}],
                       'usage': {'input_tokens': 10, 'output_tokens': 4000}}).encode()


@pytest.mark.parametrize('name', [p.name for p in OPENROUTER] + [VENICE.name])
def test_recorded_model_lists_are_read(name):
    raw = (FIXTURES / 'openrouter' / name if name.startswith('models-') else VENICE).read_bytes()
    assert limits.load_json(raw) == json.loads(raw)
    # and without the floor that lets any small document through: by their shape alone
    assert limits.json_memory(raw) < limits.JSON_MEMORY_PER_BYTE * len(raw) / 1.25


@pytest.mark.parametrize('what', ['model list near MAX_JSON_BYTES', 'embeddings openai', 'embeddings ollama',
                                  'embeddings of 3 digits', 'image answer'])
def test_real_answers_at_their_size_are_read_within_their_bound(what):
    per_byte = limits.JSON_MEMORY_PER_BYTE
    if what == 'image answer':
        text, per_byte = image_answer(), limits.IMAGE_JSON_MEMORY_PER_BYTE
        assert 29 * MB < len(text) <= limits.MAX_IMAGE_JSON_BYTES
    elif what.startswith('embeddings'):
        text = embeddings(what.split()[-1] if 'digits' not in what else 'short')
    else:
        text = bigger_openrouter_list(limits.MAX_JSON_BYTES - MB)
        assert len(text) <= limits.MAX_JSON_BYTES
    outcome, growth = peak_growth(lambda: limits.load_json(text, memory_per_byte=per_byte))
    assert not isinstance(outcome, Exception), outcome
    assert growth <= per_byte * len(text) + limits.JSON_MEMORY_FLOOR, growth / len(text)
    assert limits.json_memory(text) < per_byte * len(text) / 1.25  # read with a margin, not by a hair


# the estimate is never below what Python takes

N = 40_000


def shapes():
    def each(unit):
        return '[' + ','.join([unit] * N) + ']'
    yield from (each(u) for u in ('{}', '[]', '{"a":0}', '{"a":{}}', '{"":[]}', '{"a":"xy"}', '{"a":0,"b":1}',
                                  '{"a":1.5,"b":1.5,"c":2.5,"d":3.5,"e":4.5,"f":5.5}', '[[[[0]]]]', '[[[[]]]]', '[0]',
                                  '[0,0]', '[0,0,0,0,0,0,0,0,0]', '0', '257', '1.5', '1e5', '-1.5', 'null', '""', '"a"',
                                  '"ab"', '"\\u0100"', '"Ā"', '"\\ud83d\\ude00"', '"😀"', '"\\u00e9x"', '"\\nx"',
                                  '[' * 20 + ']' * 20, '{"a":' * 20 + '0' + '}' * 20, '{"a":[]}'))
    yield '[' + ','.join(f'"{i}"' for i in range(N)) + ']'
    yield '{' + ','.join(f'"{i}":0' for i in range(4 * N)) + '}'
    yield '{' + ','.join(json.dumps(chr(0x100 + i + (0x800 if 0x100 + i >= 0xd800 else 0)), ensure_ascii=False) + ':0'
                         for i in range(N)) + '}'
    yield '[' + ','.join('{' + json.dumps(chr(0x100 + i + (0x800 if 0x100 + i >= 0xd800 else 0))) + ':0}'
                         for i in range(N)) + ']'
    yield '{' + ','.join(json.dumps(chr(0x10000 + i), ensure_ascii=False) + ':null' for i in range(N)) + '}'
    yield '["' + 'a' * 10 * N + '\\ud83d\\ude00"]'
    yield '["' + 'a' * 10 * N + '😀"]'
    yield '["' + '\\n' * 10 * N + '"]'


@pytest.mark.parametrize('text', list(shapes()), ids=lambda t: t[:24])
@pytest.mark.parametrize('kind', ['str', 'bytes'])
def test_the_estimate_is_never_below_what_json_loads_takes(text, kind):
    doc = text if kind == 'str' else text.encode()
    assert limits.json_memory(doc) >= tracemalloc_peak(doc)


@pytest.mark.parametrize('unit', ['{}', '[[[[0]]]]', '{"a":{}}', '"ab"', '1e5', '{"a":1.5,"b":2.5}'])
def test_a_costly_shape_just_within_its_bound_takes_no_more_than_its_bound(unit):
    """The costliest documents accepted: a shape that costs Python the most for its text, padded with
    one long string (cheap) until load_json just accepts it; resident memory, not Python's count."""
    values = '[' + ','.join([unit] * (2 * MB // len(unit))) + ']'

    def document(padding):
        return ('{"padding":"' + 'x' * padding + '","values":' + values + '}').encode()

    def accepted(doc):
        return limits.json_memory(doc) <= limits.JSON_MEMORY_PER_BYTE * len(doc) + limits.JSON_MEMORY_FLOOR

    low, high = 0, 64 * MB
    assert not accepted(document(low)) and accepted(document(high))
    while high - low > 64 * 1024:
        middle = (low + high) // 2
        low, high = (low, middle) if accepted(document(middle)) else (middle, high)
    doc = document(high)
    outcome, growth = peak_growth(lambda: limits.load_json(doc))
    assert not isinstance(outcome, Exception), outcome
    assert growth <= limits.JSON_MEMORY_PER_BYTE * len(doc) + limits.JSON_MEMORY_FLOOR, growth / len(doc)
    with pytest.raises(limits.TooManyValues):
        limits.load_json(document(low))


# depth

def test_closing_brackets_in_strings_do_not_hide_depth():
    deep = ('[' * 100 + '"' + ']' * 100 + '"') * 3 + ']' * 300
    with pytest.raises(limits.TooDeep):
        limits.load_json(deep)
    fine = '[' * 100 + '"' + '[' * 1000 + '"' + ']' * 100
    assert limits.load_json(fine) is not None


class Hang(BaseException):
    """Not an Exception: no `except Exception` in the code under test can swallow it."""


def guarded(seconds, fn):
    """fn(), or Hang after seconds: a guard against a hang (a search gone quadratic), not a measure of speed."""
    def alarm(signum, frame):
        raise Hang(f'no result after {seconds} seconds')
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize('text', ['"' + '\\"' * 2_000_000, '[' * 200 + '"' + '\\"' * 2_000_000,
                                  '["' * 1_000_000, '"\\' * 1_000_000 + '[' * 200, '{"a":' * 1_000_000])
def test_strings_that_never_end_are_refused_in_linear_time(text):
    outcome = guarded(120, lambda: pytest.raises(ValueError, limits.load_json, text))
    assert outcome.value is not None
