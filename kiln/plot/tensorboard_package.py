"""The optional `tensorboard` package, loaded without TensorFlow: for the TensorBoard
callback that writes event files (keras/callbacks) and for reading them back as a History
(plot/history_files.py). Here, below both, so neither reaches up into the other."""

import sys
import types

INSTALL_HINT = "pip install 'kiln[tensorboard]'"


def import_tensorboard(owner):
    """Checks the `tensorboard` package is there, or raises an ImportError naming `owner` and
    the extra to install."""
    _without_tensorflow()
    try:
        from tensorboard.summary.writer.event_file_writer import EventFileWriter  # noqa: F401
    except ImportError as error:
        raise ImportError(f"{owner} needs the tensorboard package: {INSTALL_HINT}") from error


def _without_tensorflow():
    """Makes TensorBoard use its own file layer even where TensorFlow is installed.

    TensorBoard's file I/O goes through `tensorboard.compat.tf`, which imports TensorFlow when
    it can (seconds of start-up, and a dependency kiln must not have) and otherwise a built-in
    stub. TensorBoard's own TensorFlow-free build chooses the stub by shipping a marker module
    `tensorboard.compat.notf`; registering that marker does the same. A process that has
    already imported TensorFlow keeps it.
    """
    if "tensorflow" not in sys.modules and "tensorboard.compat.notf" not in sys.modules:
        sys.modules["tensorboard.compat.notf"] = types.ModuleType("tensorboard.compat.notf")
