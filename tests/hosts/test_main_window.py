# License: GPLv3 Copyright: the Book AI developers
"""The Book AI button in calibre's real main window, started headless."""

from sandbox import PLUGIN_NAME, tracebacks


def start(sandbox, library, screenshot=None, **env):
    if screenshot:
        env['BOOKAI_PROBE_SCREENSHOT'] = screenshot
    report, r = sandbox.probe('main_window', [library], env=env)
    assert report['probed'] and not report['timeout'], r
    assert not tracebacks(r.output), r
    return report


def test_first_run_puts_the_button_on_the_toolbar(sandbox, plugin_zip, library, artifacts):
    sandbox.install(plugin_zip)
    shot = artifacts / 'main-window.png'
    report = start(sandbox, library, screenshot=shot)
    ai = report['book_ai']
    assert PLUGIN_NAME in report['iactions'] and ai is not None
    assert ai['on_main_toolbar'] and ai['text'] == 'Book AI'
    assert ai['tooltip'] == 'Discuss your books with AI'
    assert ai['menu'] == ['About Book AI']
    assert not ai['icon_is_null'] and ai['icon_variant'] == 'light'
    toolbar = report['layout']['toolbar']
    assert toolbar.count(PLUGIN_NAME) == 1 and toolbar[toolbar.index('View') + 1] == PLUGIN_NAME
    assert report['layout']['context-menu'].count(PLUGIN_NAME) == 1
    assert shot.stat().st_size > 10_000
    # a second start changes nothing
    assert start(sandbox, library)['layout'] == report['layout']


def test_a_removed_button_stays_removed(sandbox, plugin_zip, library):
    sandbox.install(plugin_zip)
    toolbar = start(sandbox, library)['layout']['toolbar']
    sandbox.gprefs(**{'action-layout-toolbar': [n for n in toolbar if n != PLUGIN_NAME]})
    report = start(sandbox, library)
    assert PLUGIN_NAME not in report['layout']['toolbar']
    assert not report['book_ai']['on_main_toolbar']
    assert PLUGIN_NAME in report['iactions']


def test_places_chosen_when_installing_are_kept(sandbox, plugin_zip, library):
    # calibre's "Load plugin from file" asks where the button goes; say only the menubar
    sandbox.gprefs(**{'action-layout-menubar': ['Preferences', PLUGIN_NAME]})
    sandbox.install(plugin_zip)
    report = start(sandbox, library)
    assert PLUGIN_NAME not in report['layout']['toolbar'] + report['layout']['context-menu']
    assert not report['book_ai']['on_main_toolbar']


def test_dark_theme_gets_the_dark_icon(sandbox, plugin_zip, library):
    sandbox.gprefs(color_palette='dark')
    sandbox.install(plugin_zip)
    assert start(sandbox, library)['book_ai']['icon_variant'] == 'dark'


def test_a_users_icon_override_wins(sandbox, plugin_zip, library):
    from qt.core import QColor, QImage
    override = sandbox.config / 'resources' / 'images' / 'Book AI' / 'images' / 'bookai.png'
    override.parent.mkdir(parents=True)
    image = QImage(64, 64, QImage.Format.Format_ARGB32)
    image.fill(QColor('#c0392b'))
    assert image.save(str(override))
    sandbox.install(plugin_zip)
    assert start(sandbox, library)['book_ai']['icon_variant'] == 'override'


def test_german_menu(sandbox, plugin_zip, library, artifacts):
    sandbox.install(plugin_zip)
    ai = start(sandbox, library, screenshot=artifacts / 'main-window-de.png', CALIBRE_OVERRIDE_LANG='de')['book_ai']
    assert ai['tooltip'] == 'Mit einer KI über Ihre Bücher sprechen'
    assert ai['menu'] == ['Über Book AI']
