# License: GPLv3 Copyright: the Book AI developers
"""What the fuzz tests share: hypothesis, with the cache it keeps even without an example
database (Unicode tables) in build/, how many inputs each host tries (fuzz()), and one
way to damage bytes. Import this before hypothesis.

The four hosts share the inputs rather than each trying the same ones: every host tries
a quarter of a test's examples, drawn from a seed of its own (reproducible: the same
host draws the same inputs every run). A full run of dev/test.py therefore tries as many
distinct inputs as one host trying them all, in a quarter of the time per host. A run on
one host alone (dev/test.py --host NAME) tries that host's quarter.
"""

import math
import os
import zlib
from collections.abc import Callable

from helpers.project import HOST, PROJECT

os.environ.setdefault('HYPOTHESIS_STORAGE_DIRECTORY', str(PROJECT / 'build' / 'hypothesis'))
from hypothesis import HealthCheck, seed, settings, strategies as st  # noqa: E402

HOSTS_SHARING = 4  # bookworm, trixie, forky, noai


def fuzz(examples: int) -> Callable:
    """The decorator (outside @given) for a fuzz test that tries `examples` inputs over all
    the hosts: this host's share, from this host's own seed."""
    share = settings(database=None, deadline=None, max_examples=math.ceil(examples / HOSTS_SHARING),
                     suppress_health_check=list(HealthCheck))

    def apply(test: Callable) -> Callable:
        return seed(zlib.crc32(HOST.encode('utf-8')))(share(test))
    return apply


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
