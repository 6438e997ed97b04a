# License: GPLv3 Copyright: the Book AI developers
"""What the tests share, one concept a module, imported as `helpers.NAME`.

pytest.ini puts tests/ on sys.path (`pythonpath = tests`), so `helpers` is importable from
every test folder, from conftest.py and from scripts that add tests/ to sys.path themselves
(dev/demo.py, bench/). A test module never imports another test module: what two of them
need goes here, or, when it is a fixture, into tests/conftest.py.

    project         where the project is, which host the suite runs on, build.py
    sandbox         a calibre config of the test's own, and calibre's programs run in it
    books           calibre's Quick Start Guide, EPUBs made by a test
    images          a real PNG written by hand, an answer of OpenAI's images API carrying one
    library         a real calibre library of made-up books, indexed by calibre (Ask my library)
    calibre_gui     what Book AI's windows need of calibre's main window; waiting on Qt's events
    peers           llama-server and aimock (dev/peers.py makes them), started by a test
    scripted_server a loopback HTTP server that replies as scripted, for what no peer does on demand
    keyring_bus     a private D-Bus session bus and GNOME Keyring (fixtures, through conftest.py)
    secret_forms    the forms a service may echo a secret in
    fuzzing         hypothesis set up for the fuzz tests, and one way to damage bytes
    memory          this process's resident memory
"""
