# License: GPLv3 Copyright: the Book AI developers
"""Answers grounded in the book's own text (no Qt here): extract.py reads a book into
chapters and passages with their positions, index.py finds the passages a question
needs, never past the reader's position when asked not to."""
