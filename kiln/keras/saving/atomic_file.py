"""Atomic file writes: a file appears under its final name complete, or not at all.

Checkpoints are written while training runs, and training processes get killed (a time limit,
an out-of-memory kill, Ctrl-C). Writing straight to the final name would leave a truncated file
there, and the next `load_weights` or `BackupAndRestore` would read garbage or fail. So every
file is written to a temporary name in the same folder (same file system, so the rename is
atomic), flushed and fsynced, then renamed over the final name with `os.replace`; the folder is
fsynced too so the rename itself survives a power cut. A crash at any point leaves either the
previous file or the new one under the final name, and at worst a stray temporary file.
"""

import contextlib
import os
import tempfile


@contextlib.contextmanager
def atomic_path(filepath):
    """Yields a temporary path next to `filepath`; on success it replaces `filepath`.

    The caller writes the whole file to the yielded path (and closes it). If the block raises,
    the temporary file is removed and `filepath` is untouched.
    """
    filepath = os.fspath(filepath)
    folder = os.path.dirname(os.path.abspath(filepath))
    # Hidden, and ending like the final name: a writer that checks the suffix (".keras",
    # ".weights.h5") accepts the temporary path too.
    descriptor, temporary = tempfile.mkstemp(
        dir=folder, prefix=".tmp-", suffix=f"-{os.path.basename(filepath)}")
    os.close(descriptor)
    try:
        yield temporary
        _fsync_file(temporary)
        os.replace(temporary, filepath)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        raise
    _fsync_folder(folder)


def write_text_atomically(filepath, text):
    """Writes `text` (UTF-8) to `filepath` through `atomic_path`."""
    with atomic_path(filepath) as temporary:
        with open(temporary, "w", encoding="utf-8") as file:
            file.write(text)


def _fsync_file(path):
    with open(path, "rb+") as file:
        os.fsync(file.fileno())


def _fsync_folder(folder):
    # Not every platform can open a folder (Windows cannot); the rename is still atomic there.
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
