"""Plots of training runs: loss and metric curves from a History, a CSVLogger file or a
TensorBoard log directory (`kiln plot`, `History.plot()`), and per-layer timing bar charts.
Needs matplotlib (`pip install 'kiln[plot]'`), imported only when drawing."""

from .drawing import plot_history, plot_layer_times
from .history_files import read_csv_history, read_history, read_tensorboard_history

__all__ = ["plot_history", "plot_layer_times", "read_csv_history", "read_history",
           "read_tensorboard_history"]
