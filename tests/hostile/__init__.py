# License: GPLv3 Copyright: the Book AI developers
"""Where outside bytes enter Book AI, and the hostile battery over all of it (issue 26).

    registry    every entry point where outside bytes come in: the function that takes them,
                how the battery feeds it, its bounds, the attack classes that apply; and the
                readers a scan of plugin/ finds, each accounted for
    scan        the grep-like scan of plugin/ for functions that read outside bytes
    payloads    the attacks' bytes: nesting, tiny values, wrong types, escapes, the key in
                every encoding, crafted images, hostile books, templates that are code
    peer        a loopback server the battery scripts per case (one per test module)
    isolation   each case in a process of its own: a watchdog, bounded memory, what came out
    surfaces    how each kind of entry is fed and what a reader would be shown
    test_registry   the registry is whole: a new reader of outside bytes is red until registered
    test_battery    every attack class against every entry that can receive it, each case in
                a process of its own; on every host. Alone:
                python3 dev/test.py --host forky -- tests/hostile/test_battery.py

Imported as `hostile.NAME` (tests/ is on sys.path).
"""
