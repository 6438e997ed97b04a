# License: GPLv3 Copyright: the Book AI developers
"""Conversations about books, without Qt: how a question is built (question.py) and
every word the model reads (prompts.py); a conversation with its turns and its pinned
provider and model (conversation.py); the books and the library it is about (books.py,
library.py); quick actions; the History that keeps conversations across restarts;
notes saved to books; a model's Markdown as safe HTML; forgetting it all."""
