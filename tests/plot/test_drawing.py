"""The plots are PNG files of the documented size that show what they were given: the train
curve's colour always, the validation curve's only when there is validation data; `kiln plot`
and `History.plot()` draw the same figure from a CSV file, a TensorBoard log_dir or a fit's
History; the layer chart has one row per layer."""

import sys

import numpy as np
import pytest
from PIL import Image

from kiln import cli
from kiln.keras.callbacks import CSVLogger, History
from kiln.plot import drawing, plot_history, plot_layer_times

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
HISTORY = {"loss": [1.5, 0.75, 0.5], "accuracy": [0.25, 0.5, 0.75],
           "val_loss": [1.75, 1.25, 1.0], "val_accuracy": [0.5, 0.5, 0.75]}


def read_png(path):
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def pixels_of(image, hex_color):
    rgb = np.array([int(hex_color[i:i + 2], 16) for i in (1, 3, 5)])
    return int(np.sum(np.all(np.abs(image.astype(int) - rgb) <= 8, axis=-1)))


def test_one_panel_per_metric_with_both_curves(tmp_path):
    image = read_png(plot_history(HISTORY, tmp_path / "curves.png"))
    assert image.shape == (360, 2 * 480, 3)  # loss and accuracy side by side
    assert pixels_of(image, drawing.TRAIN_COLOR) > 100
    assert pixels_of(image, drawing.VALIDATION_COLOR) > 100


def test_without_validation_no_validation_curve(tmp_path):
    image = read_png(plot_history({"loss": [2.0, 1.0]}, tmp_path / "curves.png"))
    assert image.shape == (360, 480, 3)
    assert pixels_of(image, drawing.TRAIN_COLOR) > 100
    assert pixels_of(image, drawing.VALIDATION_COLOR) == 0


def test_more_than_three_metrics_wrap_to_a_second_row(tmp_path):
    history = {name: [1.0, 0.5] for name in ("loss", "a", "b", "c")}
    assert read_png(plot_history(history, tmp_path / "c.png")).shape == (720, 1440, 3)
    assert drawing.history_panels({"accuracy": [1], "val_loss": [1], "loss": [1]}) == [
        "loss", "accuracy"]


def test_history_plot_after_epochs(tmp_path):
    history = History()
    history.on_train_begin()
    for epoch in range(3):
        history.on_epoch_end(epoch, {name: values[epoch] for name, values in HISTORY.items()})
    path = history.plot(tmp_path / "history.png")
    assert read_png(path).shape == (360, 960, 3)


def test_kiln_plot_command_on_a_csv_logger_file(tmp_path, capsys):
    logger = CSVLogger(tmp_path / "history.csv")
    logger.on_train_begin()
    for epoch in range(3):
        logger.on_epoch_end(epoch, {name: values[epoch] for name, values in HISTORY.items()})
    logger.on_train_end()
    assert cli.main(["plot", str(tmp_path / "history.csv"), "-o",
                     str(tmp_path / "curves.png")]) == 0
    assert "wrote" in capsys.readouterr().out
    assert read_png(tmp_path / "curves.png").shape == (360, 960, 3)
    assert cli.main(["plot", str(tmp_path / "missing.csv")]) == 1
    assert "no CSV file or TensorBoard log directory" in capsys.readouterr().err


def test_layer_times_chart(tmp_path):
    rows = [("conv2d", 1.5, 3.0), ("max_pooling2d", 0.25, 0.5), ("dense", 0.2, None)]
    image = read_png(plot_layer_times(rows, tmp_path / "layers.png"))
    assert image.shape == (120 + 26 * 3, 800, 3)
    assert pixels_of(image, drawing.FORWARD_COLOR) > 100
    assert pixels_of(image, drawing.BACKWARD_COLOR) > 100
    with pytest.raises(ValueError, match="plot_layer_times: argument rows is empty"):
        plot_layer_times([], tmp_path / "empty.png")


def test_missing_matplotlib_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"plot_history needs matplotlib: pip install "
                                          r"'kiln\[plot\]'"):
        plot_history(HISTORY, tmp_path / "curves.png")
    with pytest.raises(ValueError, match="plot_history: argument history holds no metric"):
        plot_history({}, tmp_path / "curves.png")
