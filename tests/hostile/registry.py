# License: GPLv3 Copyright: the Book AI developers
"""Every entry point where outside bytes come into Book AI, in one place.

An Entry names what comes in (`what`), the function that takes the bytes (`takes`), how the
battery feeds it (`fed`: a peer serving the bytes, a file put at the path, a call with the
bytes), its bounds (the names of the limits that hold for it: 'core.limits:MAX_JSON_BYTES',
module below calibre_plugins.bookai), the attack classes that apply to it (ATTACKS), the
functions the bytes go through on the way (`readers`), and its Surface: how the battery feeds it
and what a reader is then told (surfaces.py, wire.py, stores.py, calls.py).

READERS_ELSEWHERE names the readers a scan of plugin/ finds that no entry goes through, each
with why; test_registry.py fails for a reader found in neither (a new surface is untested, and
red, until it is registered here), for a registered name that is no longer in plugin/, and for
a bound that is not there.

The README's table "Bounds on what comes from outside" is bounds_table(), from the entries.
"""

from dataclasses import dataclass

from hostile import wire
from hostile.surfaces import Surface

# the attack classes {{{

# name: (what it is, its variants: each a case of its own; ('',) for one case)
ATTACKS = {
    'oversized': ('a body or a file larger than its bound', ('',)),
    'endless': ('a body that never ends', ('',)),
    'trickle': ('a body that trickles, a byte at a time', ('',)),
    'deep_json': ('JSON nested 100,000 levels deep', ('',)),
    'many_values': ('JSON of millions of tiny values, within the byte bound', ('',)),
    'wrong_types': ('a value of every wrong JSON type at every level', ('',)),
    'control_chars': ('control characters and terminal escapes in every text', ('',)),
    'key_echo': ('the key echoed in every field, in every encoding', ('',)),
    'not_a_file': ('a FIFO, a device, a socket, a link to a FIFO or a folder where a file should be',
                   ('fifo', 'device', 'socket', 'symlink to a FIFO', 'folder')),
    'damaged': ('a damaged or truncated file', ('',)),
    'code': ('a template, a prompt or a file that is code', ('python template', 'backtracking regex',
                                                             'looping template', 'format attacks', 'pickle')),
    'urls': ('look-alike (mixed-script) hosts and user:password in addresses', ('',)),
    'numbers': ('NaN, infinite, negative and huge numbers in usage, prices and vectors', ('',)),
    'crafted_image': ('crafted images: decompression bombs, many scans or frames, huge area, damaged data',
                      tuple(wire.CRAFTED)),
    'hostile_book': ('hostile books: zip bombs, millions of elements, deep nesting, a huge chapter',
                     ('zip bomb', 'millions of elements', 'deep nesting', 'huge chapter', 'many attributes',
                      'entity expansion')),
}
# how long a case may take before the watchdog ends it: many times what any case takes (a case
# that reads a bound's worth of bytes takes a few seconds), so that ending it means it hung
WATCHDOG = {'not_a_file': 20.0}
WATCHDOG_DEFAULT = 60.0

# }}}


@dataclass(frozen=True)
class Entry:
    name: str                       # 'wire/openai/stream', 'file/settings', ...
    what: str                       # the bytes, in words
    takes: str                      # the function that takes them ('module:Qual.name')
    fed: str                        # 'peer', 'file' or 'call'
    bounds: tuple[str, ...]         # 'module:NAME' of each limit that holds for it
    attacks: tuple[str, ...]
    readers: tuple[str, ...]        # the functions the bytes go through
    surface: Surface


# the services' answers {{{

JSON = ('core.limits:MAX_JSON_DEPTH', 'core.limits:JSON_MEMORY_PER_BYTE')  # every JSON load_json reads
JSON_ATTACKS = ('oversized', 'endless', 'trickle', 'deep_json', 'many_values', 'wrong_types')
TRANSPORT = ('core.transport:Transport._send', 'core.transport:Response.read_all', 'core.transport:Response.finish',
             'providers.base:AIProviderPlugin.parse_error')
STREAM = ('providers.connection:Connection.read_json', 'providers.connection:Connection.events',
          'core.streams:SSEDecoder.feed', 'core.streams:NDJSONDecoder._parse',
          'providers.streaming:json_of', 'providers.operations:Answering.answer_chunks')
BODY = ('providers.connection:Connection.json_answer', 'core.limits:load_json',
        'providers.connection:Connection.read_json')
IMAGE = ('covers.making:make_image', 'providers.operations:ImageMaking.generate_image',
         'providers.operations:ImageMaking.image',
         'core.images:image_from_base64', 'core.images:decoded_base64',
         'core.images:image_from_bytes', 'core.images:images_api_result', 'core.images:structure',
         'core.images:decode_images', 'covers.making:decoded_image', 'gui.image_decoding:decode_in_worker',
         'gui.image_decoding:decode_one', 'gui.image_decoding:qimage',
         'main_window.cover_actions:CoverReview.load_thumbnails')
CHAT = 'providers.openai_chat:OpenAIChat'
CLASSES = {'openai': 'providers.openai_responses:OpenAI', 'anthropic': 'providers.anthropic:Anthropic',
           'gemini': 'providers.gemini:GoogleGemini', 'ollama': 'providers.ollama:Ollama',
           'openrouter': 'providers.openrouter:OpenRouter', 'venice': 'providers.venice:Venice',
           'github': 'providers.openai_chat:GitHubModels', 'grok': 'providers.openai_chat:Grok',
           'lmstudio': CHAT, 'openai_compatible': 'providers.openai_chat:OpenAICompatible'}
NAMES = {'openai': 'OpenAI', 'anthropic': 'Anthropic', 'gemini': 'Google Gemini', 'ollama': 'Ollama',
         'openrouter': 'OpenRouter', 'venice': 'Venice AI', 'github': 'GitHub models', 'grok': 'xAI Grok',
         'lmstudio': 'LM Studio', 'openai_compatible': 'OpenAI compatible'}
WEB_SEARCH = ('openai', 'anthropic', 'gemini', 'venice')
# the providers that hold a secret to echo: a key, or (Ollama) the value of the reader's own header;
# LM Studio takes neither
KEYED = ('openai', 'anthropic', 'gemini', 'ollama', 'openrouter', 'venice', 'github', 'grok', 'openai_compatible')
PRICED = {'openrouter': ('providers.openrouter:openrouter_pricing',), 'venice': ('providers.venice:model_of',)}


def defined(where: str, method: str) -> str:
    """'module:Class.method' of the class that defines method for the class at where (its own, or
    the one of its bases it inherits it from), as the scan names it."""
    import importlib
    module, _sep, name = where.partition(':')
    cls = getattr(importlib.import_module(f'calibre_plugins.bookai.{module}'), name)
    for base in cls.__mro__:
        if method in vars(base):
            return f'{base.__module__.removeprefix("calibre_plugins.bookai.")}:{base.__qualname__}.{method}'
    return f'{where}.{method}'


def wire_entries() -> list[Entry]:
    W = wire
    chat_stream = (W.CHAT_EVENTS, '/v1', r'/chat/completions$')
    streams = {
        'openai': (W.RESPONSES_EVENTS, '/v1', r'/responses$'), 'anthropic': (W.ANTHROPIC_EVENTS, '/v1', r'/messages$'),
        'gemini': (W.GEMINI_EVENTS, '/v1beta', r':streamGenerateContent'),
        'ollama': (W.OLLAMA_EVENTS, '', r'/api/chat$'),
        'openai_compatible': chat_stream, 'openrouter': chat_stream, 'lmstudio': chat_stream, 'grok': chat_stream,
        'github': (W.CHAT_EVENTS, '/inference', r'/chat/completions$'),
        'venice': (W.VENICE_EVENTS, '/api/v1', r'/chat/completions$'),
    }
    errors = {'anthropic': W.ANTHROPIC_ERROR, 'gemini': W.GEMINI_ERROR, 'ollama': W.OLLAMA_ERROR}
    models = {
        'openai': (W.CHAT_MODELS, r'/models$'), 'anthropic': (W.ANTHROPIC_MODELS, r'/models\?limit='),
        'gemini': (W.GEMINI_MODELS, r'/models\?pageSize='), 'ollama': (W.OLLAMA_MODELS, r'/api/tags$'),
        'openai_compatible': (W.CHAT_MODELS, r'/models$'), 'lmstudio': (W.CHAT_MODELS, r'/models$'),
        'grok': (W.CHAT_MODELS, r'/models$'), 'openrouter': (W.OPENROUTER_MODELS, r'/models$'),
        'github': (W.GITHUB_MODELS, r'/catalog/models$'), 'venice': (W.VENICE_MODELS, r'/models\?type=text'),
    }
    embeddings = {'openai': W.OPENAI_EMBEDDINGS, 'openai_compatible': W.OPENAI_EMBEDDINGS,
                  'lmstudio': W.OPENAI_EMBEDDINGS, 'openrouter': W.OPENAI_EMBEDDINGS,
                  'gemini': (W.GEMINI_EMBEDDINGS, r':batchEmbedContents'),
                  'ollama': (W.OLLAMA_EMBEDDINGS, r'/api/embed$')}
    venice_list = ('GET', r'/models', W.VENICE_MODELS)
    out = []
    for name, (events, base, path) in streams.items():
        cls = CLASSES[name]
        settings = {'web_search': True} if name in WEB_SEARCH else {}
        others = [venice_list] if name == 'venice' else []
        keyed = ('key_echo',) if name in KEYED else ()
        attacks = JSON_ATTACKS + ('control_chars',) + keyed + ('numbers',) + (('urls',) if name in WEB_SEARCH else ())
        out.append(Entry(
            f'wire/{name}/stream', f"{NAMES[name]}'s streamed answer: text, reasoning, model, usage and cost"
            + (', web pages' if name in WEB_SEARCH else ''), defined(cls, 'read_stream'), 'peer',
            ('core.limits:MAX_ANSWER_BYTES', 'core.limits:MAX_LINE_CHARS', *JSON, 'core.limits:ANSWER_SECONDS',
                                            'core.limits:MAX_WEB_LINKS'),
            attacks, TRANSPORT + STREAM + (f'{CHAT}.read_stream',) + (
                (f'{cls}.read_stream',) if name in ('openai', 'anthropic', 'gemini', 'ollama', 'venice') else ()) + (
                ('providers.venice:cited_pages',) if name == 'venice' else ()),
            W.WireSurface(W.Shape(name, 'stream', events, path=path, base=base, settings=settings, others=others,
                                  bound='core.limits:MAX_LINE_CHARS', full=name == 'openai_compatible'), attacks)))
        body = errors.get(name, W.OPENAI_ERROR)
        attacks = JSON_ATTACKS + ('control_chars',) + keyed + ('numbers',)
        out.append(Entry(
            f'wire/{name}/error', f"{NAMES[name]}'s error body (HTTP 400)", f'{cls}.parse_error' if name == 'ollama'
            else 'providers.base:AIProviderPlugin.parse_error', 'peer',
            ('core.limits:MAX_ERROR_BODY', *JSON), attacks,
            TRANSPORT + ('core.limits:load_json', 'core.transport:http_error_to_provider_error'),
            W.WireSurface(W.Shape(name, 'error', body, path=path, base=base, status=400, others=others,
                                  bound='core.limits:MAX_ERROR_BODY', full=True), attacks)))
        good, mpath = models[name]
        attacks = JSON_ATTACKS + ('control_chars',) + keyed + ('numbers',)
        out.append(Entry(
            f'wire/{name}/models', f"{NAMES[name]}'s model list: ids, names, descriptions, prices",
            defined(cls, 'parse_models'), 'peer',
            ('core.limits:MAX_JSON_BYTES', *JSON, 'core.limits:MAX_MODELS',
             'core.limits:MAX_MODEL_ID_CHARS', 'core.limits:MAX_MODEL_DESCRIPTION_CHARS',
             'core.limits:MAX_MODEL_PRICES', 'core.limits:MAX_MODELS_CACHE_BYTES'), attacks,
            TRANSPORT + BODY + ('providers.operations:ModelList.models', 'providers.models:kept_models',
                                'providers.models:redacted_models', f'{CHAT}.parse_models')
            + PRICED.get(name, ()) + (defined(cls, 'parse_models'),),
            W.WireSurface(W.Shape(name, 'models', good, method='GET', path=mpath, base=streams[name][1],
                                  bound='core.limits:MAX_JSON_BYTES', full=name == 'openrouter'), attacks)))
        if name in embeddings:
            good = embeddings[name]
            good, epath = good if isinstance(good, tuple) else (good, r'/embeddings$')
            attacks = JSON_ATTACKS + keyed + ('numbers',)
            out.append(Entry(
                f'wire/{name}/embeddings', f"{NAMES[name]}'s embeddings: a vector of numbers per passage",
                defined(cls, 'parse_embeddings'), 'peer',
                ('core.limits:MAX_JSON_BYTES', *JSON), attacks,
                TRANSPORT + BODY + ('providers.operations:Embedding.embed',) + (
                    (f'{cls}.parse_embeddings',) if name in ('gemini', 'ollama') else ()),
                W.WireSurface(W.Shape(name, 'embeddings', good, path=epath, base=streams[name][1],
                                      settings={'embedding_model': 'e'}, bound='core.limits:MAX_JSON_BYTES',
                                      full=name == 'openai'),
                              attacks)))
    images = {
        'openai': (W.OPENAI_IMAGE, r'/images/generations$', '/v1', 'gpt-image-1', []),
        'openai_compatible': (W.COMPATIBLE_IMAGE, r'/images/generations$', '/v1', 'sd-model', []),
        'grok': (W.GROK_IMAGE, r'/images/generations$', '/v1', 'grok-imagine-image', []),
        'openrouter': (W.OPENROUTER_IMAGE, r'/chat/completions$', '/v1', 'google/gemini-image',
                       [('GET', r'/models\?output_modalities=image', W.OPENROUTER_IMAGE_MODELS)]),
        'gemini': (W.GEMINI_IMAGE, r':generateContent', '/v1beta', 'gemini-2.5-flash-image', []),
        'imagen': (W.IMAGEN_IMAGE, r':predict', '/v1beta', 'imagen-4.0-generate-001', []),
        'venice': (W.VENICE_IMAGE, r'/image/generate$', '/api/v1', 'venice-img',
                   [('GET', r'/models\?type=image', W.VENICE_IMAGE_MODELS)]),
    }
    for name, (good, path, base, model, others) in images.items():
        provider = 'gemini' if name == 'imagen' else name
        cls = CLASSES[provider]
        attacks = JSON_ATTACKS + ('control_chars', 'key_echo', 'numbers', 'crafted_image')
        parse = {'imagen': f'{cls}.imagen_answer'}.get(name) or defined(cls, 'parse_image_answer')
        out.append(Entry(
            f'wire/{name}/image', f"{NAMES[provider]}'s image answer"
            + (' (Imagen)' if name == 'imagen' else '') + ': the image, the model, revised prompt, words, usage',
            parse, 'peer', ('core.limits:MAX_IMAGE_JSON_BYTES', 'core.limits:MAX_IMAGE_BYTES',
                            'core.limits:MAX_IMAGE_SIDE', 'core.images:MAX_IMAGE_PIXELS', 'core.limits:MAX_JSON_DEPTH',
                            'core.limits:IMAGE_JSON_MEMORY_PER_BYTE', 'core.isolated:WORKER_MEMORY'), attacks,
            TRANSPORT + IMAGE + (parse, defined(cls, 'parse_image_answer')) + (
                ('providers.openrouter:OpenRouter.image_models',) if name == 'openrouter' else
                ('providers.venice:Venice.image_models', 'providers.venice:image_model_of') if name == 'venice'
                else ()),
            W.WireSurface(W.Shape(provider, 'image', good, path=path, base=base, others=others,
                                  settings={'image_model': model}, bound='core.limits:MAX_IMAGE_JSON_BYTES',
                                  full=name == 'openai'), attacks)))
    urls = {'openai': {'created': 1, 'data': [{'url': W.HERE, 'revised_prompt': 'A cover, as revised.'}]},
            'grok': {'data': [{'url': W.HERE, 'revised_prompt': 'A cover, as revised.'}]},
            'openai_compatible': {'created': 1, 'data': [{'url': W.HERE}]},
            'openrouter': {'model': 'google/gemini-image', 'choices': [{'message': {
                'role': 'assistant', 'content': 'Here.',
                'images': [{'type': 'image_url', 'image_url': {'url': W.HERE}}]}}],
                'usage': {'cost': 0.04}}}
    for name, good in urls.items():
        _g, path, base, model, others = images[name]
        attacks = ('oversized', 'endless', 'trickle', 'wrong_types', 'control_chars', 'key_echo', 'urls',
                   'crafted_image')
        out.append(Entry(
            f'wire/{name}/image_url', f"the image at the address {NAMES[name]}'s answer names", 
            'providers.connection:Connection.image_at', 'peer',
            ('core.limits:MAX_IMAGE_BYTES', 'core.limits:MAX_IMAGE_SIDE', 'core.images:MAX_IMAGE_PIXELS'), attacks,
            TRANSPORT + IMAGE + ('providers.connection:Connection.image_at',
                                 defined(CLASSES[name], 'parse_image_answer')),
            W.WireSurface(W.Shape(name, 'image_url', good, path=path, base=base, others=others,
                                  settings={'image_model': model}, bound='core.limits:MAX_IMAGE_BYTES',
                                  full=name == 'openai'), attacks)))
    for name, good, path in (('openrouter', W.OPENROUTER_IMAGE_MODELS, r'/models\?output_modalities=image'),
                             ('venice', W.VENICE_IMAGE_MODELS, r'/models\?type=image')):
        attacks = JSON_ATTACKS + ('control_chars', 'key_echo', 'numbers')
        cls = CLASSES[name]
        out.append(Entry(
            f'wire/{name}/image_models', f"{NAMES[name]}'s list of image models", f'{cls}.image_models', 'peer',
            ('core.limits:MAX_JSON_BYTES', *JSON, 'core.limits:MAX_MODELS'), attacks,
            TRANSPORT + BODY + (f'{cls}.image_models',) + (
                ('providers.venice:image_model_of',) if name == 'venice' else (defined(cls, 'parse_models'),)),
            W.WireSurface(W.Shape(name, 'image_models', good, method='GET', path=path,
                                  base='/api/v1' if name == 'venice' else '/v1', bound='core.limits:MAX_JSON_BYTES',
                                  full=name == 'venice'),
                          attacks)))
    for name, good, path, base, method in (
            ('openai_compatible', W.LLAMA_PROPS, r'/props$', '/v1', 'GET'),
            ('lmstudio', W.LMSTUDIO_MODELS, r'/api/v0/models$', '/v1', 'GET'),
            ('ollama', W.OLLAMA_SHOW, r'/api/show$', '', 'POST')):
        cls = CLASSES[name]
        attacks = JSON_ATTACKS + ('numbers',)
        parse = {'openai_compatible': 'providers.openai_chat:context_of_props',
                 'lmstudio': 'providers.openai_chat:context_of_lmstudio',
                 'ollama': 'providers.ollama:context_of_show'}[name]
        out.append(Entry(
            f'wire/{name}/context', f"what {NAMES[name]} says of the context window of the model it serves",
            parse, 'peer', ('core.limits:MAX_JSON_BYTES', *JSON, 'core.limits:CONTEXT_LOOKUP_SECONDS',
                            'providers.models:MOST_CONTEXT'), attacks,
            TRANSPORT + BODY + ('providers.operations:ModelList.context_window',
                                'providers.operations:ModelList.learned_window', 'providers.context:window_tokens',
                                defined(cls if name != 'lmstudio' else 'providers.openai_chat:LMStudio',
                                        'served_context'), parse),
            W.WireSurface(W.Shape(name, 'context', good, method=method, path=path, base=base,
                                  bound='core.limits:MAX_JSON_BYTES'), attacks)))
    return out

# }}}


# files: Book AI's own, calibre's {{{

FILE_ATTACKS = ('oversized', 'deep_json', 'many_values', 'wrong_types', 'not_a_file', 'damaged')
READ_REGULAR = 'core.files:read_regular'
READ_KEPT = 'core.files:read_kept'  # Book AI's own kept JSON files, through READ_REGULAR


def file_entries() -> list[Entry]:
    from hostile import stores as S
    return [
        Entry('file/settings', "Book AI's settings file (plugins/bookai.json)", 'settings.prefs:read_settings_file',
              'file', ('settings.prefs:LARGEST_SETTINGS_FILE', *JSON),
              FILE_ATTACKS + ('control_chars',),
              ('settings.prefs:private_config', 'settings.prefs:read_settings_file', READ_REGULAR,
               'providers.options:parse_headers'),
              S.SettingsFile(FILE_ATTACKS + ('control_chars',))),
        Entry('file/keys', "Book AI's keys file, where the system has no keyring (plugins/bookai-secrets.json)",
              'settings.prefs:read_settings_file', 'file', ('settings.prefs:LARGEST_SETTINGS_FILE',), FILE_ATTACKS,
              ('settings.prefs:private_config', 'settings.prefs:read_settings_file', READ_REGULAR),
              S.KeysFile(FILE_ATTACKS)),
        Entry('file/history', 'a conversation kept in the History (plugins/bookai-history/LIBRARY/ID.json)',
              'conversation.history:read', 'file', ('core.limits:MAX_CONVERSATION_BYTES', *JSON),
              FILE_ATTACKS + ('control_chars', 'numbers'),
              ('conversation.history:read', 'conversation.conversation:Conversation.from_dict',
               'conversation.conversation:book_from_dict', 'conversation.conversation:turn_from_dict'),
              S.HistoryFile(FILE_ATTACKS + ('control_chars', 'numbers'))),
        Entry('file/history_searched', 'a conversation kept in the History, searched and exported as Markdown and HTML',
              'conversation.history:History.search', 'file', ('core.limits:MAX_CONVERSATION_BYTES', *JSON,
                                                              'conversation.history:MAX_SEARCH_WORDS'),
              FILE_ATTACKS + ('control_chars', 'numbers'),
              ('conversation.history:History.search', 'conversation.history:History.conversations',
               'conversation.history:read', 'conversation.history:match', 'conversation.export:export'),
              S.HistorySearched(FILE_ATTACKS + ('control_chars', 'numbers'))),
        Entry('file/models_cache', "a provider's cached model list (cache/bookai/models/*.json)",
              'providers.models:read_models_cache', 'file',
              ('core.limits:MAX_MODELS_CACHE_BYTES', *JSON, 'core.limits:MAX_MODELS'),
              FILE_ATTACKS + ('control_chars', 'numbers'),
              ('providers.models:read_models_cache', 'providers.models:model_from_dict', 'core.limits:load_json'),
              S.ModelsCache(FILE_ATTACKS + ('control_chars', 'numbers'))),
        Entry('file/tool_support', 'which models refused tools (cache/bookai/tool-support.json)',
              'providers.tool_support:read', 'file',
              ('providers.tool_support:MAX_FILE_BYTES', *JSON, 'providers.tool_support:MAX_ENTRIES'),
              FILE_ATTACKS + ('control_chars', 'numbers'),
              ('providers.tool_support:read', READ_KEPT, READ_REGULAR, 'core.limits:load_json'),
              S.ToolSupportFile(FILE_ATTACKS + ('control_chars', 'numbers'))),
        Entry('file/text_cache', "a book's cached text (cache/bookai/text/LIBRARY/ID.FORMAT.bookai)",
              'grounding.cache:TextCache.get', 'file',
              ('grounding.cache:MAX_FILE_BYTES', 'grounding.cache:MAX_UNPACKED_BYTES',
               'grounding.cache:MAX_HEADER_BYTES'),
              ('oversized', 'not_a_file', 'damaged', 'code'), ('grounding.cache:TextCache.get', READ_REGULAR),
              S.TextCacheFile(('oversized', 'not_a_file', 'damaged', 'code'))),
        Entry('file/xray_cache', "a book's X-Ray kept (cache/bookai/xray/BOOK/PROVIDER-MODEL.json): its chapters' "
              'entities, names, descriptions and passages', 'conversation.xray:XRayCache.records', 'file',
              ('conversation.xray:MAX_CACHE_BYTES', *JSON, 'conversation.xray:MAX_RECORDS',
               'conversation.xray:MAX_ENTITIES', 'conversation.xray:MAX_NAME_CHARS',
               'conversation.xray:MAX_DESCRIPTION_CHARS', 'conversation.xray:MAX_NUMBER'),
              FILE_ATTACKS + ('control_chars', 'numbers'),
              ('conversation.xray:XRayCache.records', 'conversation.xray:record_of', 'conversation.xray:mention_of',
               READ_REGULAR, 'core.limits:load_json'),
              S.XRayCacheFile(FILE_ATTACKS + ('control_chars', 'numbers'))),
        Entry('file/last_read', "when and where books were last read in the viewer (cache/bookai/last-read.json)",
              'conversation.last_read:LastReadRecord.read', 'file',
              ('conversation.last_read:MAX_FILE_BYTES', *JSON, 'conversation.last_read:MAX_BOOKS',
               'conversation.last_read:MAX_CFI_CHARS'),
              FILE_ATTACKS + ('control_chars', 'numbers'),
              ('conversation.last_read:LastReadRecord.read', 'conversation.last_read:last_read_of', READ_KEPT,
               READ_REGULAR, 'core.limits:load_json', 'conversation.last_read:LastReadRecord.get'),
              S.LastReadFile(FILE_ATTACKS + ('control_chars', 'numbers'))),
        Entry('file/summaries', "a book's chapter summaries (cache/bookai/summaries/LIBRARY/ID.FORMAT.json)",
              'conversation.summaries:SummaryCache.read', 'file',
              ('conversation.summaries:MAX_FILE_BYTES', *JSON, 'conversation.summaries:MAX_ENTRIES',
               'conversation.summaries:MAX_KEPT_CHARS', 'conversation.summaries:MAX_TITLE_CHARS',
               'conversation.summaries:MAX_MODEL_CHARS', 'conversation.summaries:MOST_NUMBER'),
              FILE_ATTACKS + ('control_chars', 'numbers'),
              ('conversation.summaries:SummaryCache.read', 'conversation.summaries:summary_from_dict', READ_KEPT,
               READ_REGULAR, 'core.limits:load_json', 'conversation.summaries:BookSummaries.find'),
              S.SummariesFile(FILE_ATTACKS + ('control_chars', 'numbers'))),
        Entry('file/metadata_undo', "the metadata values AI metadata replaced, kept for Undo "
              "(cache/bookai/metadata-undo/LIBRARY.json)", 'metadata.changes:MetadataUndo.sets', 'file',
              ('metadata.changes:MAX_FILE_BYTES', *JSON, 'metadata.changes:MAX_SETS', 'metadata.changes:MAX_CHANGES',
               'metadata.changes:MAX_VALUE_CHARS', 'metadata.changes:MAX_LIST_VALUES'),
              FILE_ATTACKS + ('control_chars', 'numbers'),
              ('metadata.changes:MetadataUndo.sets', 'metadata.changes:change_ok', 'metadata.changes:kept_value',
               READ_KEPT, READ_REGULAR, 'core.limits:load_json'),
              S.MetadataUndoFile(FILE_ATTACKS + ('control_chars', 'numbers'))),
        Entry('file/metadata_kept', "the values AI metadata proposed, kept for a later review "
              "(cache/bookai/metadata-kept/LIBRARY.json)", 'metadata.kept:KeptProposals.review', 'file',
              ('metadata.kept:MAX_FILE_BYTES', *JSON, 'metadata.kept:MAX_PROPOSALS', 'metadata.kept:MAX_LABEL_CHARS',
               'metadata.kept:MAX_TITLE_CHARS', 'metadata.kept:MAX_NOTES', 'metadata.kept:MAX_NOTE_CHARS',
               'metadata.kept:MAX_NEW_TAGS', 'metadata.changes:MAX_VALUE_CHARS', 'metadata.changes:MAX_LIST_VALUES'),
              FILE_ATTACKS + ('control_chars', 'numbers'),
              ('metadata.kept:KeptProposals.review', 'metadata.changes:LibraryFile.read', 'metadata.kept:proposal_of',
               'metadata.changes:kept_value', READ_KEPT, READ_REGULAR, 'core.limits:load_json'),
              S.MetadataKeptFile(FILE_ATTACKS + ('control_chars', 'numbers'))),
        Entry('file/library_vectors', "a library's books' vectors, for search by meaning "
              '(cache/bookai/library-vectors/LIBRARY.vectors)', 'library_search.vectors:VectorFiles.read', 'file',
              ('library_search.vectors:MAX_FILE_BYTES', 'library_search.vectors:MAX_HEADER_BYTES', *JSON,
               'library_search.vectors:MAX_BOOKS', 'library_search.vectors:MAX_DIMENSION',
               'library_search.vectors:MAX_VALUES', 'library_search.vectors:MAX_MODEL_CHARS'),
              ('oversized', 'not_a_file', 'damaged', 'numbers', 'code'),
              ('library_search.vectors:VectorFiles.read', 'library_search.vectors:read_file',
               'library_search.vectors:BookVectors.from_bytes', 'library_search.vectors:is_whole',
               'library_search.vectors:VectorFiles.write', READ_REGULAR, 'core.limits:load_json'),
              S.LibraryVectorsFile(('oversized', 'not_a_file', 'damaged', 'numbers', 'code'))),
        Entry('file/undo', "a cover kept for Undo (cache/bookai/covers-undo/LIBRARY/BOOK/TIME.cover)",
              'covers.undo:CoverUndo.read', 'file', ('covers.undo:MAX_ENTRY_BYTES', 'covers.undo:MAX_HEADER'),
              ('oversized', 'not_a_file', 'damaged'), ('covers.undo:CoverUndo.read', 'covers.undo:CoverUndo.last'),
              S.UndoEntry(('oversized', 'not_a_file', 'damaged'))),
        Entry('file/staged_manifest', "the manifest of covers made for many books (covers-staged/RUN/manifest.json)",
              'covers.bulk:load_run', 'file', ('covers.bulk:MAX_MANIFEST_BYTES', 'covers.bulk:MAX_BOOKS',
                                               'covers.bulk:MAX_TEXT'),
              FILE_ATTACKS + ('control_chars', 'numbers'), ('covers.bulk:load_run', 'covers.bulk:_outcome'),
              S.StagedManifest(FILE_ATTACKS + ('control_chars', 'numbers'))),
        Entry('file/staged_image', 'a cover staged by a many-books run (covers-staged/RUN/BOOK.png)',
              'core.images:decode_images', 'file',
              ('core.limits:MAX_IMAGE_BYTES', 'core.limits:MAX_IMAGE_SIDE', 'core.images:MAX_IMAGE_PIXELS',
               'core.isolated:WORKER_MEMORY', 'core.images:DECODE_SECONDS'),
              ('oversized', 'not_a_file', 'damaged', 'crafted_image'),
              ('core.images:decode_images', 'core.images:loaded', READ_REGULAR, 'core.isolated:run',
               'gui.image_decoding:decode_in_worker', 'main_window.cover_actions:CoverReview.load_thumbnails',
               'main_window.cover_actions:covers_to_apply'),
              S.StagedImage(('oversized', 'not_a_file', 'damaged', 'crafted_image'))),
        Entry('calibre/ai.json', "calibre's AI settings (ai.json): providers, keys, purposes",
              'from_calibre.carry_over:read_json', 'file', ('settings.prefs:LARGEST_SETTINGS_FILE',),
              FILE_ATTACKS + ('control_chars',),
              ('from_calibre.carry_over:read_json', 'settings.prefs:read_settings_file', READ_REGULAR,
               'from_calibre.carry_over:provider_items'),
              S.CalibreFile('ai.json', FILE_ATTACKS + ('control_chars',))),
        Entry('calibre/gui.json', "calibre's GUI settings (gui.json): quick actions, fields, AI covers' choices "
              'and templates, the libraries used', 'from_calibre.carry_over:read_json', 'file',
              ('settings.prefs:LARGEST_SETTINGS_FILE', 'from_calibre.carry_over:MOST_LIBRARIES',
               'from_calibre.carry_over:MOST_ACTIONS', 'from_calibre.carry_over:LONGEST_TEXT'),
              FILE_ATTACKS + ('control_chars', 'code'),
              ('from_calibre.carry_over:read_json', 'settings.prefs:read_settings_file', READ_REGULAR,
               'from_calibre.carry_over:cover_items', 'from_calibre.carry_over:actions_item'),
              S.CalibreFile('gui.json', FILE_ATTACKS + ('control_chars', 'code'))),
        Entry('calibre/viewer-webengine.json', "calibre's E-book viewer settings: its quick actions and highlight "
              'style', 'from_calibre.carry_over:read_json', 'file', ('settings.prefs:LARGEST_SETTINGS_FILE',),
              FILE_ATTACKS + ('control_chars',), ('from_calibre.carry_over:read_json', READ_REGULAR),
              S.CalibreFile('viewer-webengine.json', FILE_ATTACKS + ('control_chars',))),
        Entry('calibre/metadata.db', "a calibre library's database (its preferences: the custom fields its AI "
              'sends)', 'from_calibre.carry_over:library_prefs', 'file',
              ('from_calibre.carry_over:SQLITE_SECONDS', 'from_calibre.carry_over:LIBRARIES_SECONDS',
               'from_calibre.carry_over:LONGEST_SQLITE_VALUE', 'from_calibre.carry_over:LONGEST_TEXT',
               'from_calibre.carry_over:MOST_LIBRARIES'),
              ('oversized', 'endless', 'deep_json', 'wrong_types', 'control_chars', 'not_a_file', 'damaged'),
              ('from_calibre.carry_over:library_prefs', 'from_calibre.carry_over:read_library',
               'from_calibre.carry_over:custom_fields_item'),
              S.LibraryDatabase(('oversized', 'endless', 'deep_json', 'wrong_types', 'control_chars', 'not_a_file',
                                 'damaged'))),
        Entry('calibre/viewer_annotations', "the E-book viewer's annotations of a book (its last-read place)",
              'grounding.reading_position:saved_position', 'file',
              ('grounding.reading_position:MAX_ANNOTATIONS_BYTES', *JSON),
              FILE_ATTACKS + ('numbers',), ('grounding.reading_position:saved_position', 'grounding.extract:parse_cfi',
                                            'grounding.reading_position:last_read_places', READ_REGULAR),
              S.ViewerAnnotations(FILE_ATTACKS + ('numbers',))),
    ]

# }}}


# calls: what is handed to a function; books; a cover put on a book {{{

BOOK_ATTACKS = ('hostile_book', 'oversized', 'not_a_file', 'damaged')


def call_entries() -> list[Entry]:
    from hostile import calls as C
    return [
        Entry('call/web_links', 'the web pages an answer names (or a History file keeps): titles and addresses',
              'core.web_links:kept_links', 'call', ('core.limits:MAX_WEB_LINKS', 'core.limits:MAX_WEB_LINK_URL_CHARS',
                                                    'core.limits:MAX_WEB_LINK_TITLE_CHARS'),
              ('urls', 'control_chars', 'oversized', 'wrong_types'),
              ('core.web_links:kept_links', 'core.web_links:site'),
              C.WebLinks(('urls', 'control_chars', 'oversized', 'wrong_types'))),
        Entry('call/tool_calls', "the tools a model asks to be run: each call's id, name and arguments, and the "
              'arguments sent back as an object', 'providers.base:arguments_object', 'call',
              ('core.messages:MAX_TOOL_CALLS', 'core.messages:MAX_TOOL_ARGUMENTS_CHARS',
               'core.messages:MAX_TOOL_NAME_CHARS', *JSON),
              ('control_chars', 'oversized', 'deep_json', 'wrong_types'),
              ('providers.base:arguments_object', 'providers.streaming:ToolCallsRead.add', 'core.limits:load_json'),
              C.ToolCalls(('control_chars', 'oversized', 'deep_json', 'wrong_types'))),
        Entry('call/lookups_shown', "what a lookup the model made says (its tool's summary, the model's arguments), "
              'shown under the answer', 'gui.lookups:lookups_html', 'call',
              ('gui.lookups:MOST_SUMMARY_CHARS', 'gui.lookups:MOST_LOOKUPS_SHOWN',
               'conversation.lookups:MOST_NUMBERS_SHOWN'),
              ('control_chars', 'oversized', 'wrong_types'),
              ('gui.lookups:lookups_html', 'gui.lookups:lookup_line', 'gui.lookups:bounded'),
              C.LookupsShown(('control_chars', 'oversized', 'wrong_types'))),
        Entry('call/book_comments', "a book's comments (HTML) sent with questions and with a cover's prompt",
              'conversation.books:comments_as_markdown', 'call', ('covers.prompt:MAX_COMMENTS_READ',
                                                                  'covers.prompt:MAX_DESCRIPTION',
                                                                  'conversation.books:MOST_COMMENTS_READ'),
              ('hostile_book', 'control_chars'),
              ('conversation.books:comments_as_markdown', 'conversation.books:html_to_text',
               'covers.prompt:description_text'),
              C.BookComments(('hostile_book', 'control_chars'))),
        Entry('call/full_text_index', "a book's text from calibre's full-text index, its matches marked (Ask my "
              'library)', 'grounding.library_passages:best_passages', 'call', (), ('hostile_book',),
              ('grounding.library_passages:marked_texts', 'grounding.library_passages:best_passages'),
              C.FullTextIndex(('hostile_book',))),
        Entry('template/cover', "the calibre templates of a cover's title, authors and series (settings, or "
              "calibre's gui.json)", 'covers.prompt:one_evaluation', 'call',
              ('covers.prompt:MAX_CALIBRE_TEMPLATE', 'covers.prompt:TEMPLATE_SECONDS',
               'covers.prompt:TEMPLATES_MOST_SECONDS', 'core.isolated:WORKER_MEMORY'),
              ('code',), ('covers.prompt:one_evaluation', 'covers.prompt:cover_texts'), C.CoverTemplates(('code',))),
        Entry('template/quick_action', "a quick action's prompt template (settings, or calibre's files)",
              'conversation.actions:fill_template', 'call', (), ('code',), ('conversation.actions:fill_template',),
              C.QuickActions(('code',))),
        Entry('call/tool_arguments', "a tool call's arguments as a model wrote them, run by the book's tools",
              'grounding.book_tools:BookTools.run', 'call',
              ('core.messages:MAX_TOOL_ARGUMENTS_CHARS', 'grounding.book_tools:MOST_QUERY_CHARS',
               'conversation.lookups:MOST_WRITTEN_CALL'),
              ('deep_json', 'many_values', 'wrong_types', 'control_chars', 'oversized'),
              ('grounding.book_tools:parsed_arguments', 'conversation.lookups:normalized',
               'conversation.lookups:written_call', 'conversation.lookups:calls_written',
               'conversation.lookups:may_be_calls'),
              C.ToolArguments(('deep_json', 'many_values', 'wrong_types', 'control_chars', 'oversized'))),
        Entry('call/viewer_highlight', 'what the E-book viewer sends with a selection: its highlight, as JSON',
              'viewer.panel:highlight_uuid', 'call', (), ('deep_json', 'many_values', 'wrong_types'),
              ('viewer.panel:highlight_uuid',), C.HighlightAnnot(('deep_json', 'many_values', 'wrong_types'))),
        Entry('call/conversion_feedback', "calibre's conversion worker's last words (ConversionUserFeedBack's JSON)",
              'grounding.formats:feedback_text', 'call', (),
              ('deep_json', 'many_values', 'wrong_types', 'control_chars'),
              ('grounding.formats:feedback_text', 'grounding.formats:job_error'),
              C.ConversionFeedback(('deep_json', 'many_values', 'wrong_types', 'control_chars'))),
        Entry('book/epub', 'an EPUB of the library, read for its text', 'grounding.extract:read_epub', 'file',
              ('grounding.extract:MAX_MEMBER_BYTES', 'grounding.extract:MAX_BOOK_BYTES',
               'grounding.extract:MAX_MEMBERS', 'grounding.extract:MAX_PARAGRAPHS', 'grounding.extract:MAX_DEPTH'),
              BOOK_ATTACKS,
              ('grounding.extract:read_epub', 'grounding.extract:EpubReader.xml', 'grounding.formats:read_book'),
              C.BookFile('EPUB', BOOK_ATTACKS)),
        Entry('book/kepub', 'a Kobo KEPUB of the library, read as an EPUB', 'grounding.formats:read_book', 'file',
              ('grounding.extract:MAX_MEMBER_BYTES', 'grounding.extract:MAX_BOOK_BYTES'), BOOK_ATTACKS,
              ('grounding.formats:read_book', 'grounding.extract:read_epub'), C.BookFile('KEPUB', BOOK_ATTACKS)),
        Entry('book/converted', "a book in any other format (HTMLZ here), converted by calibre, then read",
              'grounding.formats:read_book', 'file',
              ('grounding.formats:CONVERSION_SECONDS', 'grounding.formats:CONVERSION_MEMORY',
               'gui.book_text:CONVERSION_SECONDS', 'grounding.extract:MAX_BOOK_BYTES'), BOOK_ATTACKS,
              ('grounding.formats:read_book', 'grounding.formats:convert_to_epub',
               'grounding.formats:convert_in_worker', 'gui.book_text:ViewerBook.run_conversion'),
              C.BookFile('HTMLZ', BOOK_ATTACKS)),
        Entry('call/xray_answer', "a model's answer for the X-Ray: the entities of a chapter, as JSON",
              'conversation.xray:parse_answer', 'call',
              ('conversation.xray:MAX_ANSWER_CHARS', *JSON, 'conversation.xray:MAX_ENTITIES_PER_ANSWER',
               'conversation.xray:MAX_NAME_CHARS', 'conversation.xray:MAX_DESCRIPTION_CHARS',
               'conversation.xray:MAX_OTHER_NAMES', 'conversation.xray:MAX_CITED'),
              ('oversized', 'deep_json', 'many_values', 'wrong_types', 'control_chars', 'numbers'),
              ('conversation.xray:parse_answer', 'conversation.xray:mention_of', 'conversation.xray:objects_in',
               'core.limits:load_json', 'core.limits:json_in', 'conversation.xray:Run.ask',
               'providers.streaming:schema_answer'),
              C.XRayAnswer(('oversized', 'deep_json', 'many_values', 'wrong_types', 'control_chars', 'numbers'))),
        Entry('call/metadata_answer', "a model's answer for AI metadata: a book's tags, description, languages and "
              'custom columns, as JSON', 'metadata.asking:parsed_answer', 'call',
              ('metadata.asking:MAX_ANSWER_CHARS', *JSON, 'metadata.fields:MAX_TAGS', 'metadata.fields:MAX_TAGS_READ',
               'metadata.fields:MAX_TAG_CHARS', 'metadata.fields:MAX_DESCRIPTION_CHARS',
               'metadata.fields:MAX_TEXT_CHARS', 'metadata.fields:MAX_LANGUAGES'),
              ('oversized', 'deep_json', 'many_values', 'wrong_types', 'control_chars', 'numbers'),
              ('metadata.asking:parsed_answer', 'metadata.fields:checked', 'core.limits:load_json',
               'metadata.asking:ask_book', 'providers.streaming:whole_answer', 'core.limits:json_in',
               'providers.streaming:schema_answer'),
              C.MetadataAnswer(('oversized', 'deep_json', 'many_values', 'wrong_types', 'control_chars', 'numbers'))),
        Entry('call/summary_answer', "a model's answer to a chapter's summary request, streamed, checked before "
              'it is kept', 'conversation.summaries:ask_summary', 'call', ('conversation.summaries:MAX_SUMMARY_CHARS',),
              ('oversized', 'endless', 'control_chars'),
              ('conversation.summaries:ask_summary', 'conversation.summaries:checked_summary',
               'conversation.summaries:echoed'),
              C.SummaryAnswer(('oversized', 'endless', 'control_chars'))),
        Entry('call/library_tool_call', "a model's call of a tool of the library (Ask my library): its name and "
              'its arguments as JSON', 'grounding.library_tools:LibraryTools.run', 'call',
              ('core.messages:MAX_TOOL_ARGUMENTS_CHARS', *JSON, 'grounding.library_tools:MAX_QUERY_CHARS',
               'grounding.library_tools:MAX_K', 'grounding.library_tools:RESULT_CHARS',
               'grounding.library_tools:MAX_BOOKS_READ', 'grounding.library_tools:READ_SECONDS'),
              ('oversized', 'deep_json', 'many_values', 'wrong_types', 'control_chars', 'numbers'),
              ('grounding.library_tools:LibraryTools.run', 'grounding.library_tools:call_arguments',
               'core.limits:load_json'),
              C.LibraryToolCall(('oversized', 'deep_json', 'many_values', 'wrong_types', 'control_chars', 'numbers'))),
        Entry('call/retry_after', "a service's Retry-After header (429, 503): how long to wait before asking again",
              'core.transport:parse_retry_after', 'call',
              ('core.transport:RetryPolicy.longest_wait', 'core.transport:RetryPolicy.attempts'), ('numbers',),
              ('core.transport:parse_retry_after',), C.RetryAfter(('numbers',))),
        Entry('library/cover', "a new cover put on a book of the library (Apply, cover --apply): the image "
              'decoded and written anew, the old cover kept', 'covers.library:replace_cover', 'call',
              ('core.limits:MAX_IMAGE_BYTES', 'core.images:MAX_IMAGE_PIXELS', 'core.isolated:WORKER_MEMORY'),
              ('crafted_image', 'damaged', 'oversized'),
              ('covers.library:replace_cover', 'main_window.cover_actions:put_cover', 'main_window.cover_actions:covers_to_apply',
               'covers.making:decoded_image', 'core.images:decode_images', 'covers.library:check_new_cover',
               'covers.library:put_back', 'covers.library:undo_cover'),
              C.LibraryCover(('crafted_image', 'damaged', 'oversized'))),
    ]

# }}}


def all_entries() -> list[Entry]:
    return wire_entries() + file_entries() + call_entries()


ENTRIES = {e.name: e for e in all_entries()}


def cases() -> list[tuple[str, str, str]]:
    """(entry, attack, variant) for every attack of every entry, each variant a case."""
    out = []
    for e in ENTRIES.values():
        for attack in e.attacks:
            for variant in ATTACKS[attack][1]:
                if variant and not applies(e, attack, variant):
                    continue
                out.append((e.name, attack, variant))
    return out


def applies(e: Entry, attack: str, variant: str) -> bool:
    """Whether one variant of an attack applies to an entry (a template is code for a template
    entry, a pickle for a pickled file)."""
    only = getattr(e.surface, 'variants_of', {}).get(attack)
    return only is None or variant in only


def shown_bound(name: str) -> str:
    """A bound as the README's table says it: NAME = value (in MB when it is bytes)."""
    from hostile.surfaces import bound_value
    value = bound_value(name)
    short = name.rpartition(':')[2]
    if isinstance(value, int) and value >= 1 << 20 and ('BYTES' in short or 'MEMORY' in short or short.endswith(
            ('_FILE', '_BODY'))):
        return f'{short} {value / (1 << 20):.3g} MB'
    if isinstance(value, int) and not isinstance(value, bool):
        return f'{short} {value:,}'
    return f'{short} {value:g}' if isinstance(value, float) else short


def bounds_table() -> str:
    """The README's "Bounds on what comes from outside": a row per entry."""
    rows = ['| where outside bytes come in | taken by | bounds |', '|---|---|---|']
    for e in ENTRIES.values():
        bounds = ', '.join(shown_bound(b) for b in e.bounds) or 'none of its own'
        rows.append(f'| {e.what} | `{e.takes}` | {bounds} |')
    return '\n'.join(rows)


# how Book AI's windows decode an image they accepted (the review's thumbnails, the cover window):
# in calibre's worker process, bounded (core.images.decode_images, then gui.image_decoding)
DISPLAY_DECODER = 'core.images:decode_images'
THUMBNAIL_SIDE = 256


def decode_for_display(data: bytes, width: int, height: int) -> str:
    """data decoded as the windows decode an image Book AI accepted, in words: its size, or why not."""
    import importlib
    module, _sep, name = DISPLAY_DECODER.partition(':')
    decode = getattr(importlib.import_module(f'calibre_plugins.bookai.{module}'), name)
    (done,) = decode([data], ['The image'], cover=False, side=THUMBNAIL_SIDE)
    if done is None:
        return 'nothing'
    return done.problem or f'{done.pixels.width}x{done.pixels.height}'


# readers a scan finds that no entry feeds, each with why {{{

READERS_ELSEWHERE = {
    'core.isolated:process_memory': "reads this process's own /proc/self/status, nothing from outside",
    'core.isolated:worker_figures': "reads what the kernel writes of Book AI's own worker process in /proc (its "
                                    'memory, its limit, its CPU time), not what the work writes; what does not read '
                                    'ends the watch',
    'core.errors:secrets_in_header': "decodes the reader's own header values (the settings), to know their secrets",
    'viewer.panel:viewer_current_style': "calibre's own reader of its own viewer session file (get_session_pref); "
                                         'the style goes back to calibre unchanged',
    'providers.base:AIProviderPlugin.parse_image_answer': "the base class's declaration: each provider's is registered",
    'providers.base:AIProviderPlugin.parse_models': "the base class's declaration: each provider's is registered",
    'providers.base:AIProviderPlugin.read_stream': "the base class's declaration: each provider's is registered",
    'providers.base:with_payload': 'reads back the JSON body of a request Book AI has just made itself (structured() '
                                   'adds to it): nothing from outside',
}

# }}}
