# License: GPLv3 Copyright: the Book AI developers
"""Book AI in calibre's E-book viewer: hook.py finds the viewer and adds the panel,
panel.py is the Ask AI panel itself (imported only when first shown)."""
