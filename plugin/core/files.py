# License: GPLv3 Copyright: the Book AI developers
"""Book AI's own files: written privately, whole or not at all; a damaged one set aside.

Every file Book AI writes (settings, keys kept in a file, the History, the text cache,
the model lists) goes through write_private(): readable by its owner only at every
moment, and replaced in one step, so that a crash never leaves half a file. A file
that cannot be read back is never overwritten: set_aside() renames it out of the way
first, never over one set aside before.

Every folder of Book AI's own (private_roots(): calibre's cache/bookai, which holds the model
lists, the text cache, the covers' Undo and staging, and the History) is 0700, so that not even
the names in it (books, libraries, conversations) can be listed by another user:
private_folder() makes each one so, and narrows one an older version made 0755 when it meets it.
"""

import os
import stat
import tempfile
from collections.abc import Callable


def write_private(path: str, data: bytes | str) -> None:
    """Replace the file at path with data, readable and writable by its owner only, at every
    moment, in a folder made by private_folder()."""
    folder = os.path.dirname(path)
    private_folder(folder)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix='.' + os.path.basename(path), suffix='.tmp')  # mode 0600
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(data if isinstance(data, bytes) else data.encode('utf-8'))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def set_aside(path: str) -> str:
    """Rename a damaged file (or whatever is in its place) out of the way, to path.damaged,
    else path.2.damaged and so on: never over one set aside before. Returns the new name;
    OSError if it could not be renamed."""
    kept, n = path + '.damaged', 1
    while os.path.lexists(kept):
        n += 1
        kept = f'{path}.{n}.damaged'
    os.rename(path, kept)
    return kept


def set_aside_if_can(path: str) -> str | None:
    """set_aside(path), for a reader that goes on without the file either way: the new name, or
    None when it could not be renamed (it is then left as it is, and never written over)."""
    try:
        return set_aside(path)
    except OSError:
        return None


def remove_where(folder: str, condition: Callable[[str], bool]) -> int:
    """Remove the files in folder whose names meet condition, passing over those that cannot be
    removed; how many went (none when the folder cannot be listed)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    removed = 0
    for name in names:
        if condition(name):
            try:
                os.remove(os.path.join(folder, name))
                removed += 1
            except OSError:
                pass
    return removed


class NotRegular(OSError):
    """What is at a path is not a regular file (a FIFO, a device, a socket, a folder), whatever a
    symbolic link on the way says: not opened, never waited on."""


class TooBig(OSError):
    """A file larger than the most its reader takes: not read."""


def read_kept(path: str, most: int, kind: str, version: int) -> dict:
    """Book AI's own kept JSON file at path (read_regular, at most `most` bytes, limits.load_json) as
    its object, when it says it is of that kind and version. Raises FileNotFoundError when there is
    none; OSError, ValueError, RecursionError or UnicodeError for one that cannot be read or is not
    of them, which its caller sets aside."""
    from calibre_plugins.bookai.core.limits import load_json
    data = load_json(read_regular(path, most))
    if type(data) is not dict or data.get('kind') != kind or data.get('version') != version:
        raise ValueError(f'not a Book AI {kind} file of version {version}')
    return data


def read_regular(path: str, most: int) -> bytes:
    """The bytes of the regular file at path, at most `most` of them. It is opened without blocking
    (a FIFO put in a file's place cannot make Book AI wait for a writer) and checked to be a regular
    file on the descriptor opened, so a link swapped in between cannot lie. Raises NotRegular,
    TooBig (larger than most, nothing read past it) or the OSError of opening or reading."""
    flags = os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_NOCTTY', 0) | getattr(os, 'O_BINARY', 0)
    fd = os.open(path, flags)
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        raise NotRegular(f'not a regular file: {path}')
    with os.fdopen(fd, 'rb') as f:
        data = f.read(most + 1)
    if len(data) > most:
        raise TooBig(f'larger than {most} bytes: {path}')
    return data


def is_regular(path: str) -> bool:
    """Whether path is a regular file (following links), asked without opening it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


PRIVATE_FOLDER_MODE = 0o700
narrowed_roots: set[str] = set()  # the roots whose whole tree was narrowed in this process


def private_roots() -> tuple[str, ...]:
    """The folders that are Book AI's own, with all that is in them: calibre's cache/bookai (the
    model lists, the text cache, the covers' Undo and staging) and the History
    (config/plugins/bookai-history, as conversation.history keeps it)."""
    from calibre.constants import cache_dir, config_dir  # late: only when a folder is made
    return (os.path.join(cache_dir(), 'bookai'), os.path.join(config_dir, 'plugins', 'bookai-history'))


def within(path: str, root: str) -> bool:
    """Whether path is root or inside it."""
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # one relative, one absolute; another drive
        return False


def narrow(folder: str) -> None:
    """Take away what others may do in folder (0755 becomes 0700), when it is a folder of this
    user's; nothing is ever widened. Best effort: a folder that cannot be changed is left."""
    try:
        st = os.stat(folder)
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISDIR(st.st_mode) and mode & 0o077 and st.st_uid == getattr(os, 'geteuid', lambda: st.st_uid)():
            os.chmod(folder, mode & PRIVATE_FOLDER_MODE)
    except OSError:
        pass


def private_folder(folder: str, top: str | None = None) -> str:
    """Make folder, readable by its owner only. Within one of private_roots() (else below top, a
    folder of Book AI's given by its caller, such as a text cache's), every folder from the root
    down to folder is made 0700 whatever the umask, and one found wider is narrowed (narrow()); the
    first time a root is met in a process, every folder under it is narrowed too. Folders above
    the root are calibre's and left as they are; a folder outside any root and top is made 0700
    as os.makedirs() makes it (calibre's plugins folder, for the settings, is never changed).
    Returns folder; OSError when it cannot be made."""
    folder = os.path.abspath(folder)
    roots = [r for r in (os.path.abspath(p) for p in private_roots()) if within(folder, r)]
    root = roots[0] if roots else os.path.abspath(top) if top is not None and within(
        folder, os.path.abspath(top)) else None
    if root is None:
        os.makedirs(folder, mode=PRIVATE_FOLDER_MODE, exist_ok=True)
        return folder
    os.makedirs(os.path.dirname(root), exist_ok=True)  # calibre's: as calibre would make it
    path = root
    for part in [''] + os.path.relpath(folder, root).split(os.sep):
        path = os.path.join(path, part) if part and part != '.' else path
        try:
            os.mkdir(path, PRIVATE_FOLDER_MODE)
        except FileExistsError:
            pass
        narrow(path)
    if root not in narrowed_roots:
        narrowed_roots.add(root)
        for where, folders, _files in os.walk(root):  # links are not followed, nor narrowed
            for name in folders:
                if not os.path.islink(os.path.join(where, name)):
                    narrow(os.path.join(where, name))
    return folder
