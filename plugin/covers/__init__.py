# License: GPLv3 Copyright: the Book AI developers
"""AI covers, without Qt: what the cover windows, the many-books job and the command line share.

- styles: the cover styles (calibre's, and the reader's own, saved by name);
- prompt: the reader's choices, and the ONE place a cover's prompt is built (for a new
  image, and for a change to the current one), as calibre 9.17 builds it;
- undo: the covers Book AI replaced, kept in its cache (not in the library) for Undo;
- making: the one pipeline of a cover, step by step: the image provider and its checks, a
  book's request, the image made, bounded and decoded, its price;
- library: a cover put into a calibre library through calibre's API, the old one kept first;
- bulk: covers for many books made a few at a time, staged in the cache for review before
  anything is written to the library.

Nothing here sends anything by itself: a provider's generate_image() is called only by
making.make_image(), when the reader asks (in the cover window, the many-books job or the
command line's cover).
"""
