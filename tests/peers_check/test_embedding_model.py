# License: GPLv3 Copyright: the Book AI developers
"""The real embedding model (all-MiniLM-L6-v2, which dev/peers.py converts to GGUF) served by
llama-server as a reader's local server would serve it, asked through Book AI's OpenAI-compatible
provider: vectors of the model's length, and descriptions that mean the same nearest each other
even when they share no words. A chat model's pooled states (SmolLM2's) do not do that reliably:
this is the peer the library index by meaning is tested against."""

import math

import pytest

from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.peers import EMBED_DIM, LlamaServer

# Book descriptions, and for each a paraphrase that shares none of its content words.
DESCRIPTIONS = (
    'A lighthouse keeper lives alone on a rocky island and tends the lamp every night.',
    'A detective investigates a murder in a snowbound country house.',
    'Quick vegetarian recipes for busy families on weeknights.',
    'A history of the Roman Empire from Augustus to its fall.',
    'Two sisters inherit a failing vineyard in France and learn to make wine.',
)
PARAPHRASES = (
    'The man who looks after the beacon on a remote rock spends his evenings in solitude keeping it burning.',
    'An inspector tries to find out who killed a guest at a manor cut off by a blizzard.',
    'Fast meat-free dishes for parents short on time after work.',
    "The story of Rome's imperial age, from its first emperor to the collapse.",
    'A pair of siblings are left a struggling wine estate in Burgundy and discover how grapes become a vintage.',
)


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.fixture(scope='module')
def server():
    with LlamaServer('embed') as s:
        yield s


@pytest.fixture(scope='module')
def provider(server):
    return get_provider('openai_compatible', settings={'base_url': server.base_url + '/v1', 'model': server.model})


@pytest.fixture(scope='module')
def vectors(provider):
    return provider.embed(DESCRIPTIONS + PARAPHRASES)


def test_the_provider_gets_a_vector_of_the_models_length_for_each_text(server, provider, vectors):
    assert server.model == 'all-MiniLM-L6-v2'
    assert len(vectors) == len(DESCRIPTIONS) * 2
    assert all(len(v) == EMBED_DIM for v in vectors)
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-3 for v in vectors)  # the server normalises
    assert provider.embed([DESCRIPTIONS[2]]) == [vectors[2]]  # alone, in another batch: the same vector


def test_a_paraphrase_ranks_above_every_unrelated_description(vectors):
    descriptions, paraphrases = vectors[:len(DESCRIPTIONS)], vectors[len(DESCRIPTIONS):]
    for i, query in enumerate(paraphrases):
        scores = [cosine(query, d) for d in descriptions]
        ranking = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)
        assert ranking[0] == i, (PARAPHRASES[i], [round(s, 3) for s in scores])
        assert scores[i] > 0.4 and max(s for j, s in enumerate(scores) if j != i) < 0.3, scores


def test_cls_pooling_can_be_asked_for_instead(vectors):
    with LlamaServer('embed', extra_args=('--pooling', 'cls')) as cls:
        assert 'specified multiple times' not in cls.log()  # the default --pooling mean was left out
        p = get_provider('openai_compatible', settings={'base_url': cls.base_url + '/v1', 'model': cls.model})
        (v,) = p.embed([DESCRIPTIONS[0]])
    assert len(v) == EMBED_DIM and cosine(v, vectors[0]) < 0.99  # [CLS]'s state, not the mean of all


def test_a_text_longer_than_the_model_reads_is_an_error_in_words(provider):
    with pytest.raises(ProviderError) as e:
        provider.embed(['lighthouse ' * 600])
    assert 'too large' in str(e.value) and len(str(e.value)) < 1000
