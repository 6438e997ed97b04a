# License: GPLv3 Copyright: the Book AI developers
"""Book AI's own files: written privately, whole or not at all; a damaged one set aside.

Every file Book AI writes (settings, keys kept in a file, the History, the text cache,
the model lists) goes through write_private(): readable by its owner only at every
moment, and replaced in one step, so that a crash never leaves half a file. A file
that cannot be read back is never overwritten: set_aside() renames it out of the way
first, never over one set aside before.
"""

import os
import tempfile


def write_private(path: str, data: bytes | str) -> None:
    """Replace the file at path with data, readable and writable by its owner only, at every moment."""
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
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
