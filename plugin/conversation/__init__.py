# License: GPLv3 Copyright: the Book AI developers
"""Conversations about books, without Qt: the quick actions and their templates,
the description of the books that goes with a question, a conversation with its
pinned provider and model, and the history that keeps conversations across restarts."""
