# License: GPLv3 Copyright: the Book AI developers
"""The plugin's preferences, in <calibre config>/plugins/bookai.json.

Opened on first use, never at import time, so that merely loading the plugin
reads and writes nothing. The file is written owner-only (0600) on every
calibre version: it names the services you use and their addresses.
"""

import os
import tempfile

_prefs = None


def private_config(rel_path):
    """A calibre JSONConfig whose file only its owner can read, written atomically."""
    from calibre.utils.config import JSONConfig

    class PrivateJSONConfig(JSONConfig):

        def commit(self):
            if self.no_commit or not getattr(self, 'file_path', None):
                return
            write_private(self.file_path, self.to_raw())

    return PrivateJSONConfig(rel_path)


def write_private(path, data):
    """Replace the file at path with data, readable and writable by its owner only, at every moment."""
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix='.' + os.path.basename(path), suffix='.tmp')  # mode 0600
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(data if isinstance(data, bytes) else data.encode('utf-8'))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def plugin_prefs():
    global _prefs
    if _prefs is None:
        _prefs = private_config('plugins/bookai')
        _prefs.defaults.update({
            'toolbar_placed': False,
            'provider': '',           # the provider answers come from ('' until the user chooses)
            'providers': {},          # provider name: {option: value}
            'reasoning_effort': 'auto',
            'library_actions': [],    # the quick actions as edited: [{name, label, template, enabled}]
            'viewer_actions': [],     # the same, for the E-book viewer's Ask AI panel
            'highlight_style': '',    # the viewer's highlight style for notes ('' for the viewer's current one)
            'book_fields': [],        # fields sent besides title and authors (standard names, #custom)
            'answer_language': 'interface',  # 'interface', 'book' (the book's, else the interface's), 'never', or
            # a language named in English
            # before sending to an online (not local) provider, show what will be sent:
            # 'first' (a conversation's first question), 'always', or 'never'
            'confirm_send': 'first',
            'save_field': 'comments',  # where "Save to book" appends: comments or a #column of comments type
            # the book's own text with questions: off (details only) until the reader turns it on,
            # here for every book or in a book's window for that book
            'book_text': False,
            'book_scopes': {},        # per book ("library id:book id", or the file in the viewer): a scope
            'book_text_budget': 1500,  # tokens of the book's text sent with one question at most
            'book_text_consent': [],  # "book|provider" where the reader said: don't ask again
            # how passages are ranked for a question: 'bm25' (by words, no network) or 'embeddings'
            # (by meaning too, with the provider's embeddings: grounding/embeddings.py)
            'retrieval': 'bm25',
        })
    return _prefs
