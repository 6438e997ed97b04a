# License: GPLv3 Copyright: the Book AI developers
"""Each test of AI covers has its own cover cache: the runs staged for review and the covers kept
for Undo, so that what one test leaves there is never another's to find. A test marked
real_cover_cache uses calibre's cache folder, as the plugin does (its own, for this test run)."""

import pytest


@pytest.fixture(autouse=True)
def own_cover_cache(request, tmp_path, monkeypatch):
    if request.node.get_closest_marker('real_cover_cache'):
        return None
    from calibre_plugins.bookai.covers import bulk, undo
    monkeypatch.setattr(bulk, 'staging_root', lambda: str(tmp_path / 'cover-cache' / 'covers-staged'))
    monkeypatch.setattr(undo, 'default_root', lambda: str(tmp_path / 'cover-cache' / 'covers-undo'))
    return tmp_path / 'cover-cache'
