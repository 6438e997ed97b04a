# License: GPLv3 Copyright: the Book AI developers
"""The hostile battery (issue 26): every attack class of hostile/registry.py against every entry
point that can receive it.

Each case is one (entry, attack, variant): the entry's Surface makes the attack's payloads in
the shape the entry takes, puts them where they come from (the one hostile peer of this module,
a file at its path, a call's argument), and asks as Book AI's callers do, in a process of the
case's own (hostile/isolation.py: a watchdog ends a case that hangs, and fails it; memory is
measured there). hostile/verdict.py then says what is wrong: it did not end, it ended in a
traceback rather than a sentence, it took more memory than its bound, the reader was told
nothing, the key leaked in any form, a control character reached the reader, a look-alike host
or a password was shown, a number that is no number was kept or shown, code from outside ran,
the reader's file was overwritten rather than set aside.

Nothing here is marked to fail or skipped: a case whose fix has not landed is red, and says why.
"""

import pytest

from helpers.memory import peak_growth
from hostile import verdict
from hostile.isolation import Observed, run_isolated
from hostile.peer import HostilePeer
from hostile.registry import ATTACKS, ENTRIES, WATCHDOG, WATCHDOG_DEFAULT, cases
from hostile.surfaces import Context, isolate


@pytest.fixture(scope='module')
def peer():
    with HostilePeer() as p:
        yield p


@pytest.mark.parametrize('entry, attack, variant', cases(), ids=lambda v: v.replace(' ', '-') if v else '-')
def test_hostile(entry, attack, variant, peer, tmp_path):
    e = ENTRIES[entry]
    ctx = Context(peer, attack, variant, tmp_path)
    made = e.surface.variants(attack, variant, ctx)
    assert made, f'{entry} makes no payload for {attack}'
    prepared = []
    for i, payload in enumerate(made):
        where = tmp_path / f'v{i}'
        where.mkdir()
        prepared.append((payload, e.surface.prepare(payload, ctx, where), where))

    def case() -> Observed:
        isolate(tmp_path)
        seen = Observed(facts={'variants': []})
        for payload, handle, where in prepared:
            outcome, growth = peak_growth(lambda: e.surface.use(handle, ctx, where))
            one = outcome if isinstance(outcome, Observed) else raised(outcome)
            one.growth, one.ctx_attack = growth, attack
            seen.facts['variants'].append((payload.label, one))
        return seen

    try:
        seen = run_isolated(case, WATCHDOG.get(attack, WATCHDOG_DEFAULT), str(tmp_path))
    finally:
        peer.cases.clear()  # this case's answers (some of tens of MB) are not kept for the next
    failures = []
    if seen.ended != 'returned':  # the whole case: it hung, died or ran out of memory
        failures += [f'{attack} on {entry}: ' + p for p in verdict.problems(e, attack, '', seen, 0, False)]
    else:
        for (payload, handle, where), (label, one) in zip(prepared, seen.facts['variants']):
            quiet = e.surface.quiet or attack in e.surface.quiet_for
            found = verdict.problems(e, attack, label, one, payload.size, quiet)
            found += e.surface.left(payload, handle, where, one)
            failures += [f'[{label}] {p}' for p in found]
    assert not failures, (f'{ATTACKS[attack][0]} ({variant or attack}) against {e.what} ({entry}, taken by '
                          f'{e.takes}):\n' + '\n'.join(failures[:12])
                          + (f'\n... and {len(failures) - 12} more' if len(failures) > 12 else ''))


def raised(e: BaseException) -> Observed:
    """What the reader is told of an exception a caller lets through: its class and words."""
    from hostile.surfaces import error_observed
    seen = error_observed(e)
    import traceback
    seen.where = ''.join(traceback.format_exception(e))[-3000:]
    return seen
