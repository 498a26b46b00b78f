"""Drawing training curves and per-layer timings to PNG files with matplotlib.

matplotlib is an optional extra (`kiln[plot]`), imported only when a figure is drawn, with its
non-interactive Agg backend: plots are written on servers and in CI, where no display exists.
Figures have a fixed size in pixels (no tight bounding box), so a file's size depends only on
what is drawn: the number of metric panels, or of layers.
"""

import math
import os

INSTALL_HINT = "pip install 'kiln[plot]'"

DPI = 100
PANEL_SIZE = (4.8, 3.6)  # inches per metric panel: 480 x 360 pixels at DPI
TRAIN_COLOR, VALIDATION_COLOR = "#1f77b4", "#ff7f0e"
FORWARD_COLOR, BACKWARD_COLOR = "#4c72b0", "#dd8452"


def pyplot(owner):
    """matplotlib.pyplot on the Agg backend, or an ImportError naming `owner` and the extra."""
    try:
        import matplotlib
    except ImportError as error:
        raise ImportError(f"{owner} needs matplotlib: {INSTALL_HINT}") from error
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def history_panels(history):
    """The metric names to draw, one panel each: the training names (`loss` first), each
    panel also showing its `val_` twin when there is one."""
    names = [name for name in history if not name.startswith("val_")]
    names += [name[len("val_"):] for name in history
              if name.startswith("val_") and name[len("val_"):] not in history]
    names = sorted(set(names), key=lambda name: (name != "loss", names.index(name)))
    return names


def plot_history(history, filename, epochs=None, title=None):
    """Draws loss and metric curves, train and validation, one panel per metric, to a PNG.

    Args:
        history: Dict of metric name to per-epoch values, as `History.history` (`loss`,
            `val_loss`, `accuracy`, ...).
        filename: Path of the PNG file to write.
        epochs: The epoch numbers (0-based) of the values; `None` means 0, 1, 2, ...
        title: Optional title over the panels.

    Returns:
        The filename written. The image is 480 pixels wide per panel (at most 3 panels a row)
        and 360 high per row of panels.
    """
    names = history_panels(history)
    if not names:
        raise ValueError("plot_history: argument history holds no metric to draw, got "
                         f"{sorted(history)!r}")
    length = max(len(values) for values in history.values())
    epochs = list(range(length)) if epochs is None else list(epochs)
    plt = pyplot("plot_history")
    columns = min(len(names), 3)
    rows = math.ceil(len(names) / columns)
    figure, axes = plt.subplots(rows, columns, squeeze=False, dpi=DPI,
                                figsize=(PANEL_SIZE[0] * columns, PANEL_SIZE[1] * rows))
    try:
        for index, axis in enumerate(axes.flat):
            if index >= len(names):
                axis.set_visible(False)
                continue
            _draw_metric(axis, names[index], history, epochs)
        if title:
            figure.suptitle(title)
        figure.tight_layout()
        figure.savefig(os.fspath(filename), format="png", dpi=DPI)
    finally:
        plt.close(figure)
    return filename


def _draw_metric(axis, name, history, epochs):
    """One panel: the training curve and, if present, the validation curve, by epoch (shown
    1-based, as the progress bar counts epochs)."""
    shown = [epoch + 1 for epoch in epochs]
    for key, label, color in ((name, "train", TRAIN_COLOR),
                              (f"val_{name}", "validation", VALIDATION_COLOR)):
        values = history.get(key)
        if values is None:
            continue
        axis.plot(shown[:len(values)], values, marker="o", markersize=3, color=color,
                  label=label)
    axis.set_title(name)
    axis.set_xlabel("epoch")
    axis.grid(True, alpha=0.3)
    axis.legend()
    from matplotlib.ticker import MaxNLocator
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))  # no epoch 1.5


def plot_layer_times(rows, filename, title="time per layer"):
    """Draws a horizontal bar chart of forward and backward milliseconds per layer to a PNG.

    Args:
        rows: Sequence of `(layer, forward_ms, backward_ms)`, drawn top to bottom in the
            given order; `backward_ms` may be None (inference, or a layer without one).
        filename: Path of the PNG file to write.
        title: Title over the chart.

    Returns:
        The filename written. The image is 800 pixels wide and 120 + 26 per layer pixels high.
    """
    rows = [(str(layer), float(forward), None if backward is None else float(backward))
            for layer, forward, backward in rows]
    if not rows:
        raise ValueError("plot_layer_times: argument rows is empty; expected (layer, "
                         "forward_ms, backward_ms) rows")
    plt = pyplot("plot_layer_times")
    height_px = 120 + 26 * len(rows)
    figure, axis = plt.subplots(dpi=DPI, figsize=(800 / DPI, height_px / DPI))
    try:
        positions = range(len(rows))
        bar = 0.4
        axis.barh([p - bar / 2 for p in positions], [row[1] for row in rows], height=bar,
                  color=FORWARD_COLOR, label="forward")
        axis.barh([p + bar / 2 for p in positions], [row[2] or 0.0 for row in rows],
                  height=bar, color=BACKWARD_COLOR, label="backward")
        axis.set_yticks(list(positions), [row[0] for row in rows])
        axis.invert_yaxis()  # the first layer on top, as a model summary reads
        axis.set_xlabel("milliseconds per step")
        axis.set_title(title)
        axis.grid(True, axis="x", alpha=0.3)
        axis.legend(loc="best")
        figure.tight_layout()
        figure.savefig(os.fspath(filename), format="png", dpi=DPI)
    finally:
        plt.close(figure)
    return filename
