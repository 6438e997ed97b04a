# License: GPLv3 Copyright: the Book AI developers
"""What the fuzz tests share: hypothesis, with the cache it keeps even without an example
database (Unicode tables) in build/, and one way to damage bytes. Import this before hypothesis."""

import os

from sandbox import PROJECT

os.environ.setdefault('HYPOTHESIS_STORAGE_DIRECTORY', str(PROJECT / 'build' / 'hypothesis'))
from hypothesis import strategies as st  # noqa: E402


def mutate(draw, data: bytes, insertions, least: int = 0, most: int = 6) -> bytes:
    """data with `least` to `most` bit flips, truncations, duplications, deletions and
    insertions (drawn from the strategy insertions), drawn with draw."""
    data = bytearray(data)
    for _ in range(draw(st.integers(least, most))):
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(('flip', 'truncate', 'duplicate', 'delete', 'insert')))
        if op == 'flip':
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == 'truncate':
            del data[i:]
        elif op == 'duplicate':
            data[i:i] = data[i:i + draw(st.integers(1, 400))]
        elif op == 'delete':
            del data[i:i + draw(st.integers(1, 60))]
        else:
            data[i:i] = draw(insertions)
    return bytes(data)
