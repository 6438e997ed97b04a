# License: GPLv3 Copyright: the Book AI developers
"""Installing and removing the plugin with calibre's own tools, as users and developers do."""

import json

from helpers.project import PLUGIN_NAME, build_script
from helpers.sandbox import tracebacks

VERSION_PROBE = ('import json, calibre.customize.ui, calibre_plugins.bookai as m; '
                 'print(json.dumps([m.__file__, m.BookAI.version]))')


def imported_plugin(sandbox):
    """(file, version) of calibre_plugins.bookai as a fresh calibre process imports it."""
    r = sandbox.debug(VERSION_PROBE)
    assert r.returncode == 0, r
    path, version = json.loads(r.stdout.strip().splitlines()[-1])
    return path, tuple(version)


def assert_listed(sandbox, version):
    listing = sandbox.installed_plugins()
    line = next((ln for ln in listing.splitlines() if ln.startswith(f'User interface action {PLUGIN_NAME} ')), None)
    assert line is not None, listing
    assert str(version) in line


def test_zip_installs_lists_and_imports(sandbox, plugin_zip):
    r = sandbox.install(plugin_zip)
    assert f'Plugin added: {PLUGIN_NAME}' in r.stdout
    assert_listed(sandbox, build_script().read_version())
    installed = sandbox.config / 'plugins' / f'{PLUGIN_NAME}.zip'
    assert installed.exists()
    assert imported_plugin(sandbox) == (str(installed / '__init__.py'), build_script().read_version())


def test_staged_folder_installs_with_customize_b(sandbox, staged_plugin):
    r = sandbox.customize('-b', staged_plugin)
    assert r.returncode == 0, r
    assert_listed(sandbox, build_script().read_version())
    path, version = imported_plugin(sandbox)
    assert version == build_script().read_version()
    assert path == str(sandbox.config / 'plugins' / f'{PLUGIN_NAME}.zip' / '__init__.py')


def test_removal_leaves_a_config_that_starts_clean(sandbox, plugin_zip, library):
    sandbox.install(plugin_zip)
    report, r = sandbox.probe('main_window', [library])
    assert report['book_ai'] is not None and not tracebacks(r.output), r
    r = sandbox.customize('-r', PLUGIN_NAME)
    assert r.returncode == 0, r
    assert PLUGIN_NAME not in sandbox.installed_plugins()
    assert not (sandbox.config / 'plugins' / f'{PLUGIN_NAME}.zip').exists()
    report, r = sandbox.probe('main_window', [library])
    assert report['probed'] and not report['timeout'], r
    assert PLUGIN_NAME not in report['iactions'] and report['book_ai'] is None
    assert not tracebacks(r.output), r
