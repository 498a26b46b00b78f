"""Reading training curves back from the files a fit leaves: a `CSVLogger` file or a
`TensorBoard` log directory. Both come back as a History-like dict, `{"loss": [...],
"val_loss": [...], ...}`, one value per epoch, so one drawing function serves all three
sources (those two and `History.history` itself)."""

import csv
import math
import os


def read_history(path):
    """The per-epoch metrics in `path`: a TensorBoard log directory (the `log_dir` given to
    the callback, holding `train/` and `validation/`) or a CSVLogger file.

    Returns:
        (epochs, history): the epoch numbers (0-based, as the logs have them) and a dict of
        metric name to a list of floats aligned with them (NaN where an epoch has no value).
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        return read_tensorboard_history(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"read_history: no CSV file or TensorBoard log directory at "
                                f"{path!r}")
    return read_csv_history(path)


def read_csv_history(path):
    """A CSVLogger file (any of its separators) as (epochs, history)."""
    with open(path, newline="", encoding="utf-8") as file:
        sample = file.read(4096)
        file.seek(0)
        try:
            dialect = csv.Sniffer().sniff(sample.splitlines()[0], delimiters=",;\t|")
        except (csv.Error, IndexError):
            dialect = csv.excel
        rows = list(csv.DictReader(file, dialect=dialect))
    if not rows or "epoch" not in rows[0]:
        raise ValueError(f"read_csv_history: {path!r} is not a CSVLogger file (expected a "
                         "header line starting with 'epoch')")
    epochs = [int(row["epoch"]) for row in rows]
    history = {}
    for name in rows[0]:
        if name == "epoch":
            continue
        values = [_number(row[name]) for row in rows]
        if any(value is not None for value in values):  # a list-valued column is not a curve
            history[name] = [math.nan if value is None else value for value in values]
    return epochs, history


def read_tensorboard_history(log_dir):
    """The `epoch_<name>` scalars of a TensorBoard callback's log directory as (epochs,
    history): `train/` gives `<name>`, `validation/` gives `val_<name>`, as Keras's logs."""
    from .tensorboard_package import import_tensorboard

    import_tensorboard("read_tensorboard_history")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    by_name = {}
    for run, prefix in (("train", ""), ("validation", "val_")):
        directory = os.path.join(log_dir, run)
        if not os.path.isdir(directory):
            continue
        accumulator = EventAccumulator(directory, size_guidance={"tensors": 0, "scalars": 0})
        accumulator.Reload()
        tags = accumulator.Tags()
        for tag in tags["tensors"]:
            if tag.startswith("epoch_"):
                by_name[prefix + tag[len("epoch_"):]] = {
                    event.step: float(tensor_util.make_ndarray(event.tensor_proto))
                    for event in accumulator.Tensors(tag)}
        for tag in tags["scalars"]:  # files from older writers (tensorboardX, TF 1)
            if tag.startswith("epoch_"):
                by_name[prefix + tag[len("epoch_"):]] = {
                    event.step: event.value for event in accumulator.Scalars(tag)}
    if not by_name:
        raise ValueError(f"read_tensorboard_history: no epoch_<metric> scalars under "
                         f"{log_dir!r}/train or /validation (is it a TensorBoard callback's "
                         "log_dir?)")
    epochs = sorted({step for values in by_name.values() for step in values})
    history = {name: [values.get(epoch, math.nan) for epoch in epochs]
               for name, values in by_name.items()}
    return epochs, history


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None
