# License: GPLv3 Copyright: the Book AI developers
"""What each provider's request says for each reasoning effort: the table the provider,
command line and settings tests check the wire against."""

import json

from calibre_plugins.bookai.core.messages import Message, Role
from calibre_plugins.bookai.providers.registry import get_provider

TURNS = [Message(Role.SYSTEM, 'sys'), Message(Role.USER, 'u1'), Message(Role.ASSISTANT, 'a1'),
         Message(Role.USER, 'u2')]


def payload(name, **settings):
    s = {'api_key': 'k' * 12, 'base_url': 'http://127.0.0.1:9'}
    s.update(settings)
    return json.loads(get_provider(name, settings=s).chat_request(TURNS, 'model-x').body)


# provider: {effort: what its request says}
REASONING = {
    'openai': lambda p: p.get('reasoning', {}).get('effort'),
    'anthropic': lambda p: p.get('thinking', {}).get('budget_tokens'),
    'gemini': lambda p: p.get('generationConfig', {}).get('thinkingConfig', {}).get('thinkingBudget'),
    'openrouter': lambda p: p.get('reasoning'),
    'ollama': lambda p: p.get('think'),
    'openai_compatible': lambda p: p.get('reasoning_effort'),
    'grok': lambda p: p.get('reasoning_effort'),
    # (effort, thinking turned off); for a model its list does not name, as chosen (providers/venice.py)
    'venice': lambda p: (p.get('reasoning_effort'), p['venice_parameters'].get('disable_thinking')),
}
EXPECTED = {
    'openai': {'auto': None, 'high': 'high', 'medium': 'medium', 'low': 'low', 'none': 'minimal'},
    'anthropic': {'auto': None, 'high': 16000, 'medium': 6000, 'low': 2000, 'none': None},
    'gemini': {'auto': None, 'high': 24576, 'medium': 8192, 'low': 1024, 'none': 0},
    'openrouter': {'auto': None, 'high': {'effort': 'high'}, 'medium': {'effort': 'medium'},
                   'low': {'effort': 'low'}, 'none': {'enabled': False}},
    'ollama': {'auto': None, 'high': True, 'medium': True, 'low': True, 'none': False},
    'openai_compatible': {'auto': None, 'high': 'high', 'medium': 'medium', 'low': 'low', 'none': None},
    'grok': {'auto': None, 'high': 'high', 'medium': 'high', 'low': 'low', 'none': None},
    'venice': {'auto': (None, None), 'high': ('high', None), 'medium': ('medium', None), 'low': ('low', None),
               'none': (None, True)},
}
