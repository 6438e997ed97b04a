# License: GPLv3 Copyright: the Book AI developers
""""Ask for what to read next" from this library, in calibre's main window: the library's index by
meaning brought up to date (library_search/building.py: its metadata goes to a provider online only
once the reader agreed, the estimate said first), the books to offer found near the selected ones, or
near the books read lately and rated highly (library_search/read_next.py), then a discussion about
the books it starts from, asked to choose among them; each book its answer names by its number is a
link that selects the book in calibre's list.

The index is brought up to date in a thread, with a progress dialog whose Cancel stops it (what was
embedded is kept). Which books count as read: a field the reader chooses here (choose_read_field()),
else those opened in the E-book viewer.
"""

from typing import TYPE_CHECKING, Any

from qt.core import QInputDialog, QProgressDialog, Qt, QTimer

from calibre.gui2 import error_dialog, info_dialog, question_dialog

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.question import Question
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.gui.worker import run_in_thread
from calibre_plugins.bookai.library_search import building, read_next
from calibre_plugins.bookai.providers.pricing import sending_estimate

if TYPE_CHECKING:
    from calibre_plugins.bookai.main_window.action import BookAIAction

load_translations()

TITLE = _('What to read next')


def from_library(action: 'BookAIAction', selected: list[int]) -> None:
    """What to read next after the selected books (none: those read lately and rated highly), chosen
    among the books of the library open in calibre."""
    gui = action.gui
    chosen = building.embeddings_provider()
    if chosen is None:
        error_dialog(gui, TITLE, _('Suggestions from this library need a provider that makes embeddings (a '
                                   'local server such as llama.cpp, Ollama or LM Studio): choose one in Book AI\'s '
                                   'settings.'), show=True)
        return
    provider = chosen  # not None, in the closures too
    if problem := provider.config.missing_setup():
        error_dialog(gui, TITLE, problem, show=True)
        return
    library = action.library()
    db, library_id = library.db, library.library_id
    files = building.VectorFiles()
    cancel = CancelToken()
    progress = QProgressDialog(_("Bringing the library's index by meaning up to date…"), _('Stop'), 0, 0, gui)
    progress.setWindowTitle(TITLE)
    progress.setWindowModality(Qt.WindowModality.WindowModal)
    progress.setMinimumDuration(500)
    progress.canceled.connect(cancel.cancel)
    counts = [0, 0]  # done, total: written by the thread, shown by the timer (no Qt in the thread)

    def show_counts() -> None:
        if counts[1]:
            progress.setRange(0, counts[1])
            progress.setValue(counts[0])
    timer = QTimer(progress)
    timer.timeout.connect(show_counts)
    timer.start(200)

    def over() -> None:
        timer.stop()
        progress.reset()
        progress.deleteLater()

    def planned() -> tuple[building.Embedder, building.Plan, tuple[int, int] | None]:
        e = building.embedder(provider, '', cancel)
        p = building.plan(db, library_id, e, files)
        ask = building.estimate(db, library_id, p) if p.todo and not building.agreed(library_id, e) else None
        return e, p, ask

    def told(done: int, total: int) -> None:
        counts[0], counts[1] = done, total

    def update_and_prepare(e: building.Embedder, p: building.Plan) -> tuple[building.Built, Any]:
        built = building.update_index(db, library_id, e, files, cancel, told, the_plan=p)
        if built.stopped:
            return built, None
        index = files.read(library_id, model=e.key)
        if index is None:
            raise building.IndexNotKept(_("The library's index by meaning could not be read back."))
        return built, read_next.prepare(db, library_id, index, selected, read_next.read_field_for(library_id))

    def after_plan(result: Any, exc: Exception | None) -> None:
        if exc is not None:
            over()
            return failed(exc)
        e, p, ask = result
        if ask is not None:
            books, tokens = ask
            progress.hide()
            if not question_dialog(gui, TITLE, ngettext(
                    'The details of {n} book go to {provider}, online, to be embedded for the library\'s '
                    'search by meaning.', 'The details of {n} books go to {provider}, online, to be embedded for '
                    'the library\'s search by meaning.', books).format(n=books, provider=provider.display_name)
                    + ' ' + sending_estimate(provider.name, e.model, tokens, False) + ' ' + _('Send them?')):
                return over()
            try:
                building.agree(library_id, e)
            except OSError:
                pass  # asked again next time
        run_in_thread(lambda: update_and_prepare(e, p), after_update, progress)

    def after_update(result: Any, exc: Exception | None) -> None:
        over()
        if exc is not None:
            return failed(exc)
        built, prepared = result
        if prepared is None:
            return  # stopped: what was embedded is kept
        if not prepared.seeds:
            return info_dialog(gui, TITLE, _('Select the books to start from first: with none selected, the '
                                             'books read lately in the E-book viewer and those rated four stars '
                                             'or more are started from, and there are none.'), show=True)
        if not prepared.candidates:
            return info_dialog(gui, TITLE, _('No book of the library was found near those books. Books the '
                                             'embeddings provider would not take are not in the index yet.'),
                               show=True)
        conv = Conversation.about(library, prepared.seeds)
        w = action.open_window(library, conv)
        ask = getattr(w, 'ask_suggestions', None)
        if ask is not None:
            ask(Question(prepared.question, suggested=prepared.suggested))

    def failed(exc: Exception) -> None:
        if isinstance(exc, ProviderError):
            message = exc.sentence
        elif isinstance(exc, building.IndexNotKept):
            message = str(exc)
        else:
            message = _('Something went wrong: {error}').format(error=exc)
        error_dialog(gui, TITLE, message, show=True)

    progress.show()
    run_in_thread(planned, after_plan, progress)


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
