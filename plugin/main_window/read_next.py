# License: GPLv3 Copyright: the Book AI developers
""""Ask for what to read next" from this library, in calibre's main window: the library's index by
meaning brought up to date (library_search/building.py: its metadata goes to a provider online only
once the reader agreed, the estimate said first), the books to offer found near the selected ones, or
near the books read lately and rated highly (library_search/read_next.py), then a discussion about
the books it starts from, asked to choose among them; each book its answer names by its number is a
link that selects the book in calibre's list.

The index is brought up to date as Search library by meaning brings it (the reader's consent for a
provider online, then calibre's job, whose Stop keeps what was embedded). Which books count as read: a field the reader chooses here (choose_read_field()),
else those opened in the E-book viewer.
"""

from typing import TYPE_CHECKING, Any

from qt.core import QInputDialog

from calibre.gui2 import error_dialog, info_dialog

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.question import Question
from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.gui.worker import run_in_thread
from calibre_plugins.bookai.library_search import building, read_next

if TYPE_CHECKING:
    from calibre_plugins.bookai.main_window.action import BookAIAction

load_translations()

TITLE = _('What to read next')


def from_library(action: 'BookAIAction', selected: list[int]) -> None:
    """What to read next after the selected books (none: those read lately and rated highly), chosen
    among the books of the library open in calibre, once its index is up to date (the same consent
    and calibre job as Search library by meaning: library_search_actions.Searcher)."""
    from calibre_plugins.bookai.main_window.calibre_window import say
    from calibre_plugins.bookai.main_window.library_search_actions import Ready, Searcher
    gui = action.gui
    library = action.library()
    db, library_id = library.db, library.library_id

    def problem(text: str) -> None:
        error_dialog(gui, TITLE, text, show=True)

    def ready(r: Ready) -> None:
        def prepare() -> Any:
            index = r.files.read(library_id, model=r.e.key)
            if index is None:
                raise building.IndexNotKept(_("The library's index by meaning could not be read back."))
            return read_next.prepare(db, library_id, index, selected, read_next.read_field_for(library_id))
        run_in_thread(prepare, prepared, gui)

    def prepared(result: Any, exc: BaseException | None) -> None:
        if exc is not None:
            return problem(exc.sentence if isinstance(exc, ProviderError) else str(exc) if isinstance(
                exc, building.IndexNotKept) else _('Something went wrong: {error}').format(error=exc))
        if not result.seeds:
            return info_dialog(gui, TITLE, _('Select the books to start from first: with none selected, the '
                                             'books read lately in the E-book viewer and those rated four stars '
                                             'or more are started from, and there are none.'), show=True)
        if not result.candidates:
            return info_dialog(gui, TITLE, _('No book of the library was found near those books. Books the '
                                             'embeddings provider would not take are not in the index yet.'),
                               show=True)
        conv = Conversation.about(library, result.seeds)
        w = action.open_window(library, conv)
        ask = getattr(w, 'ask_suggestions', None)
        if ask is not None:
            ask(Question(result.question, suggested=result.suggested))

    Searcher(gui, gui, lambda found: None, problem, lambda text: say(gui, text, 5000)).when_ready(ready)


def choose_read_field(action: 'BookAIAction') -> None:
    """Choose which field of the library says a book was read (or none: those opened in the viewer)."""
    gui = action.gui
    db = gui.current_db.new_api
    library_id = str(db.library_id)
    fields = read_next.read_field_choices(db)
    viewer = _('Those opened in the E-book viewer')
    names = [viewer] + [_('Those with {field} set').format(field=f'{name} ({key})') for key, name in fields]
    current = read_next.read_field_for(library_id)
    at = next((i + 1 for i, (key, _name) in enumerate(fields) if key == current), 0)
    name, ok = QInputDialog.getItem(gui, TITLE, _('Which books have you read? Those not read yet are offered '
                                                  'first.'), names, at, False)
    if not ok:
        return
    i = names.index(name)
    try:
        read_next.set_read_field(library_id, fields[i - 1][0] if i else '')
    except OSError as err:
        error_dialog(gui, TITLE, _('The choice could not be kept: {error}').format(error=err), show=True)
