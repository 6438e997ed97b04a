# License: GPLv3 Copyright: the Book AI developers
"""The plugin's preferences, in <calibre config>/plugins/bookai.json.

Opened on first use, never at import time, so that merely loading the plugin
reads and writes nothing.
"""

_prefs = None


def plugin_prefs():
    global _prefs
    if _prefs is None:
        from calibre.utils.config import JSONConfig
        _prefs = JSONConfig('plugins/bookai')
        _prefs.defaults['toolbar_placed'] = False
    return _prefs
