# License: GPLv3 Copyright: the Book AI developers
"""What the reviews of many books' results share (the covers' and AI metadata's): Select all and
Select none, then Apply selected, Apply all, Discard and Close (which keeps them for later)."""

from typing import Protocol

from qt.core import QBoxLayout, QDialogButtonBox, QHBoxLayout, QPushButton, QWidget

load_translations()


class Review(Protocol):
    """A review window: what its buttons call."""
    all_button: QPushButton
    none_button: QPushButton
    bb: QDialogButtonBox
    apply_selected_button: QPushButton
    apply_all_button: QPushButton
    discard_button: QPushButton
    close_button: QPushButton

    def check_all(self, on: bool) -> None: ...
    def apply_selected(self) -> None: ...
    def apply_all(self) -> None: ...
    def discard(self) -> None: ...
    def reject(self) -> None: ...


def add_review_buttons(review: Review, window: QWidget, layout: QBoxLayout, keep_tip: str) -> None:
    """The review's buttons, added to layout and kept as review's attributes; keep_tip: what Close
    says it does (where the results wait for later)."""
    buttons = QHBoxLayout()
    review.all_button = QPushButton(_('Select &all'), window)
    review.all_button.clicked.connect(lambda: review.check_all(True))
    review.none_button = QPushButton(_('Select &none'), window)
    review.none_button.clicked.connect(lambda: review.check_all(False))
    buttons.addWidget(review.all_button)
    buttons.addWidget(review.none_button)
    buttons.addStretch(1)
    layout.addLayout(buttons)
    review.bb = bb = QDialogButtonBox(window)
    review.apply_selected_button = bb.addButton(_('Apply &selected'), QDialogButtonBox.ButtonRole.AcceptRole)
    review.apply_selected_button.clicked.connect(review.apply_selected)
    review.apply_all_button = bb.addButton(_('Apply a&ll'), QDialogButtonBox.ButtonRole.AcceptRole)
    review.apply_all_button.clicked.connect(review.apply_all)
    review.discard_button = bb.addButton(_('&Discard'), QDialogButtonBox.ButtonRole.DestructiveRole)
    review.discard_button.clicked.connect(review.discard)
    review.close_button = bb.addButton(QDialogButtonBox.StandardButton.Close)
    review.close_button.setToolTip(keep_tip)
    review.close_button.clicked.connect(review.reject)
    layout.addWidget(bb)
