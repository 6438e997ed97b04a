# License: GPLv3 Copyright: the Book AI developers
"""The chat's text size in the E-book viewer's Ask AI panel: as the settings say when the panel
opens, and at once when the reader changes it in the settings opened from the panel. The panel
is Book AI's real one, around a stand-in for the viewer (helpers.calibre_gui.StandInViewer)."""

import pytest

from helpers.books import quick_start_epub
from helpers.calibre_gui import StandInViewer, when_modal


def test_the_viewer_panels_chat_follows_the_text_size(qapp, prefs, artifacts):
    from calibre_plugins.bookai.viewer.panel import AskPanel
    prefs['provider'] = ''
    prefs['chat_text_size'] = 115
    panel = AskPanel(StandInViewer(quick_start_epub()))
    panel.resize(420, 600)
    panel.show()
    qapp.processEvents()
    p = panel.panel
    base = p.question.font().pointSizeF()
    assert p.chat.font().pointSizeF() == pytest.approx(base * 1.15)
    assert p.chat.document().defaultFont().pointSizeF() == pytest.approx(base * 1.15)
    errors = []

    def choose_150(d):  # the reader, in the settings the panel opened
        try:
            d.settings.show_tab('reading')
            box = d.settings.reading_tab.text_size_box
            box.setCurrentIndex(box.findData(150))
            d.accept()
        except BaseException as e:
            errors.append(e)
            d.reject()
    when_modal(choose_150)
    p.settings_button.click()
    assert not errors, errors
    assert prefs['chat_text_size'] == 150
    assert p.chat.font().pointSizeF() == pytest.approx(base * 1.5)
    assert p.question.font().pointSizeF() == base
    assert panel.grab().save(str(artifacts / 'viewer-panel-text-150.png'))
    panel.close()
