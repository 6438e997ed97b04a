# License: GPLv3 Copyright: the Book AI developers
"""A library searched by meaning, without Qt: what the search box, "More like this" and the
command line will share.

- entries: the text embedded for one book, from its metadata, and the digest that says it changed;
- vectors: the books' vectors in memory, searched in a fraction of a second over 50,000 books in
  pure Python, and their file in Book AI's cache.
"""
