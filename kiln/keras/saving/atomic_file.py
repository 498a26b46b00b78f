"""Atomic file writes: a file appears under its final name complete, or not at all.

Checkpoints are written while training runs, and training processes get killed (a time limit,
an out-of-memory kill, Ctrl-C). Writing straight to the final name would leave a truncated file
there, and the next `load_weights` or `BackupAndRestore` would read garbage or fail. So every
file is written to a temporary name in the same folder (same file system, so the rename is
atomic), flushed and fsynced, then renamed over the final name with `os.replace`; the folder is
fsynced too so the rename itself survives a power cut. A crash at any point leaves either the
previous file or the new one under the final name, and at worst a stray temporary file.

Otherwise the result is what Keras's plain `open(filepath, "w")` gives:
- a symbolic link is written through: the temporary file goes beside the link's target and
  replaces the target, so the link stays (renaming over the link would replace it by a file);
- a new file gets the usual mode, 0666 less the umask (the temporary file is created with that
  mode, so the kernel applies the umask, and a folder's default ACL, as for any new file);
  replacing a file keeps that file's permission bits, and a read-only file is not replaced
  (a PermissionError, as open() gives);
- a failed write (a full disk, which h5py reports as a RuntimeError carrying the errno when it
  closes the file) is an OSError with the same errno naming the final file, and the temporary
  file is removed.
"""

import contextlib
import errno
import os
import re
import secrets
import stat

_NEW_FILE_MODE = 0o666  # before the umask, as open() creates files
_H5_ERRNO = re.compile(r"errno = (\d+)")  # in h5py's messages for a failed write or close


@contextlib.contextmanager
def atomic_path(filepath, caller=None):
    """Yields a temporary path beside `filepath` (beside its target, if it is a symbolic
    link); on success it replaces that file.

    The caller writes the whole file to the yielded path (and closes it). If the block raises,
    the temporary file is removed and `filepath` is untouched; an I/O failure is raised as an
    OSError naming `filepath` (and `caller`, e.g. "save_weights")."""
    filepath = os.fspath(filepath)
    target = os.path.realpath(filepath)
    if os.path.exists(target) and not os.access(target, os.W_OK):
        # open(filepath, "w") fails there: a read-only file is not replaced behind its back
        prefix = f"{caller}: " if caller else ""
        raise PermissionError(errno.EACCES, f"{prefix}cannot write {filepath}: the file is "
                              "read-only")
    temporary = None
    try:
        temporary, mode = _create_beside(target)
        yield temporary
        _fsync_file(temporary)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException as error:
        if temporary is not None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(temporary)
        failure = _write_failure(error, filepath, caller)
        if failure is None:
            raise
        raise failure from error
    _fsync_folder(os.path.dirname(target))


def write_text_atomically(filepath, text, caller=None):
    """Writes `text` (UTF-8) to `filepath` through `atomic_path`."""
    with atomic_path(filepath, caller) as temporary:
        with open(temporary, "w", encoding="utf-8") as file:
            file.write(text)


def _create_beside(target):
    """(path, mode): an empty temporary file next to `target` that only its owner can read
    while it is written, and the mode to give it before it replaces `target`."""
    folder, name = os.path.split(target)
    try:
        kept_mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        kept_mode = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        # Hidden, and ending like the final name: a writer that checks the suffix (".keras",
        # ".weights.h5") accepts the temporary path too.
        temporary = os.path.join(folder, f".tmp-{secrets.token_hex(4)}-{name}")
        try:
            descriptor = os.open(temporary, flags, _NEW_FILE_MODE)
        except FileExistsError:
            continue
        try:
            # the mode the kernel gave a new file: 0666 less the umask (or the folder's default
            # ACL), read back rather than by setting the process-wide umask to look at it
            mode = kept_mode if kept_mode is not None else stat.S_IMODE(
                os.fstat(descriptor).st_mode)
        finally:
            os.close(descriptor)
        os.chmod(temporary, stat.S_IRUSR | stat.S_IWUSR)  # writable by the writers that reopen it
        return temporary, mode
    raise FileExistsError(errno.EEXIST, f"no free temporary name beside {target}")


def _write_failure(error, filepath, caller):
    """The OSError to raise for `error` (naming `filepath`), or None to raise `error` as it is.

    The OS's message, not the library's: h5py's and zipfile's name the temporary file."""
    if isinstance(error, OSError):
        number = error.errno
    elif isinstance(error, RuntimeError):  # h5py's failed close; other RuntimeErrors are bugs
        found = _H5_ERRNO.search(str(error))
        if found is None:
            return None
        number = int(found.group(1))
    else:
        return None
    prefix = f"{caller}: " if caller else ""
    if not number:
        return OSError(f"{prefix}cannot write {filepath}: {error}")
    # OSError(errno, message) is the errno's subclass (PermissionError, FileNotFoundError...)
    return OSError(number, f"{prefix}cannot write {filepath}: {os.strerror(number)}")


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
