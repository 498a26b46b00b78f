"""CSVLogger: one CSV row of epoch results per epoch, as Keras writes it."""

import collections
import csv
import os

import numpy as np

from .callback import Callback


class CSVLogger(Callback):
    """Streams epoch results to a CSV file.

    Args:
        filename: Path of the CSV file.
        separator: Column separator (",").
        append: True appends to an existing file (without repeating its header), e.g. when
            training resumes; False overwrites it.

    Columns are `epoch` and the sorted names of the first epoch's logs; if those hold no
    validation metric, `val_<name>` columns are added too (filled with "NA"), as Keras does.
    The file is flushed after every row, so a killed run keeps every finished epoch.
    """

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.sep = separator
        self.filename = os.fspath(filename)
        self.append = append
        self.writer = None
        self.keys = None
        self.append_header = True
        self.csv_file = None

    def on_train_begin(self, logs=None):
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename, encoding="utf-8") as existing:
                    self.append_header = not bool(len(existing.readline()))
            mode = "a"
        else:
            mode = "w"
        if self.csv_file and not self.csv_file.closed:
            self.csv_file.close()
        self.csv_file = open(self.filename, mode, newline="", encoding="utf-8")  # noqa: SIM115
        self.writer = None
        self.keys = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            if self.keys and not any(key.startswith("val_") for key in self.keys):
                self.keys.extend([f"val_{key}" for key in self.keys])
        if not self.writer:
            separator = self.sep

            class Dialect(csv.excel):
                delimiter = separator

            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch", *self.keys],
                                         dialect=Dialect)
            if self.append_header:
                self.writer.writeheader()
        row = collections.OrderedDict({"epoch": epoch})
        row.update((key, _cell(logs.get(key, "NA"))) for key in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file and not self.csv_file.closed:
            self.csv_file.close()
        self.writer = None


def _cell(value):
    """A log value as Keras writes it: sequences as "[a, b]", the rest as given."""
    if isinstance(value, str):
        return value
    if isinstance(value, collections.abc.Iterable) and not (
            isinstance(value, np.ndarray) and value.ndim == 0):
        return f'"[{", ".join(map(str, value))}]"'
    return value
