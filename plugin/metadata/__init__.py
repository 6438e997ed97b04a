# License: GPLv3 Copyright: the Book AI developers
"""AI metadata, without Qt: a book's tags, description, languages and custom columns filled by a
model and reviewed before anything is written.

- fields: the fields AI metadata fills, how each is asked for (its JSON Schema) and its answer
  checked, whatever the model sent;
- asking: one book's fields asked of a model by their schema, the answer read bounded and checked,
  only what differs from the book proposed; many books a few requests at once, and Stop;
- reading: what is read from the library before asking: the fields it can fill, the books as they
  are when the job begins, the library's own tags;
- changes: what the reader ticked written into the library, never over a value changed since the
  job read it nor into another library, the values replaced kept first for Undo, and Undo.
"""
