# License: GPLv3 Copyright: the Book AI developers
"""The spoiler rule in the E-book viewer's Ask AI panel: when the viewer's place does not
map to a place in the book's text, the scopes that keep to it send nothing and say so,
as the discussion window and the command line do (grounding.scopes.NoPlace). The panel
is Book AI's real one, around a stand-in for the viewer that shows no place
(tests/hosts/test_viewer_panel.py has calibre's real viewer, where the place is known)."""

import pytest

from helpers.books import quick_start_epub
from helpers.calibre_gui import StandInViewer, wait_until
from helpers.peers import use_server
from helpers.scripted_server import ScriptedServer


@pytest.mark.parametrize('scope, retrieval', [('position', 'bm25'), ('chapter', 'bm25'), ('so-far', 'bm25'),
                                              ('position', 'embeddings')])
def test_with_no_place_known_the_viewer_sends_nothing(qapp, prefs, scope, retrieval):
    """Not even to a provider on this computer to rank passages by meaning (it would get the whole book)."""
    from calibre_plugins.bookai.viewer.panel import AskPanel
    with ScriptedServer([]) as server:  # records every request: none may carry the book
        use_server(prefs, server.url)
        prefs['retrieval'] = retrieval
        panel = AskPanel(StandInViewer(quick_start_epub()))
        p = panel.panel
        p.scope_row.box.setCurrentIndex(p.scope_row.box.findData(scope))
        p.question.setPlainText('What happens next?')
        p.send_button.click()
        wait_until(lambda: not p.streaming and 'does not know where you are' in p.chat.toPlainText())
        assert not [r for r in server.received if r['path'].endswith(('/chat/completions', '/embeddings'))]
    assert not p.conv.turns and 'Nothing was sent.' in p.chat.toPlainText()
    assert p.question.toPlainText() == 'What happens next?'  # the question is not lost
    panel.close()
