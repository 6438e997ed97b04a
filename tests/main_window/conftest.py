# License: GPLv3 Copyright: the Book AI developers
"""What the main window's tests share."""

import pytest


@pytest.fixture
def said(monkeypatch):
    """calibre's message boxes, recorded: 'error' and 'question' their texts, 'info' (text, details);
    a question answered as record['answer'] says (yes by default)."""
    import calibre.gui2 as gui2
    record = {'error': [], 'info': [], 'question': []}
    monkeypatch.setattr(gui2, 'error_dialog', lambda parent, title, msg, det_msg='', show=False, **k:
                        record['error'].append(msg))
    monkeypatch.setattr(gui2, 'info_dialog', lambda parent, title, msg, det_msg='', show=False, **k:
                        record['info'].append((msg, det_msg)))

    def question(parent, title, msg, *a, **k):
        record['question'].append(msg)
        return record.get('answer', True)
    monkeypatch.setattr(gui2, 'question_dialog', question)
    return record
