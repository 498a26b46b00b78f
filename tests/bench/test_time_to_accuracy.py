"""`kiln bench time-to-accuracy`: the report from made-up epochs, and one tiny end-to-end run of
kiln's worker on a synthetic MNIST (IDX files in a temporary KILN_DATASETS) that must stop at
the first epoch reaching the target."""

import gzip
import json
import struct

import numpy as np

from kiln.bench import time_to_accuracy
from kiln.bench.__main__ import main


def result(framework, accuracies, precision="f32", epoch_seconds=10.0, eval_seconds=1.0):
    epochs = [{"accuracy": a, "seconds": (i + 1) * epoch_seconds,
               "eval_seconds": (i + 1) * eval_seconds} for i, a in enumerate(accuracies)]
    return {"framework": framework, "precision": precision, "epochs": epochs}


def test_the_table_counts_epochs_to_the_first_one_reaching_the_target_and_ratios_to_peers():
    results = [result("kiln", [0.98, 0.991, 0.995], epoch_seconds=4.0),
               result("torch", [0.97, 0.985, 0.9905]),
               result("keras-jax", [0.97, 0.99], epoch_seconds=20.0),
               result("keras-tensorflow", [0.95, 0.96]),
               {"framework": "keras-tensorflow", "precision": "bf16", "error": "exit 1: boom"}]
    lines = time_to_accuracy.table(results, 0.99, 300.0)
    rows = {tuple(line.split()[:2]): line.split() for line in lines[1:-1]}
    kiln = rows[("kiln", "f32")]
    assert kiln[2:6] == ["2", "8.0", "6.0", "0.27x"]  # the best peer: torch, 30 s at epoch 3
    assert rows[("torch", "f32")][2:6] == ["3", "30.0", "27.0", "1.00x"]
    assert rows[("keras-jax", "f32")][2:6] == ["2", "40.0", "38.0", "1.33x"]
    assert rows[("keras-tensorflow", "f32")][2:5] == ["not", "in", "2"]
    assert rows[("keras-tensorflow", "f32")][-2:] == ["-", "0.9600"]
    assert "error: exit 1: boom" in lines[-2]
    assert "sgemm peak: 300.0 GFLOP/s" in lines[-1]


def _idx(path, array, magic):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">I", magic) + b"".join(struct.pack(">I", n) for n in array.shape))
        f.write(array.astype(np.uint8).tobytes())


def test_a_kiln_run_on_a_small_mnist_stops_at_the_first_epoch_reaching_the_target(
        tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(0)
    folder = tmp_path / "data" / "mnist"
    folder.mkdir(parents=True)
    for prefix, count in (("train", 256), ("t10k", 128)):
        labels = rng.integers(0, 10, count)
        images = rng.integers(0, 40, (count, 28, 28))
        images[np.arange(count), 2 * labels + 3, 4:24] = 255  # a class's bright row
        _idx(folder / f"{prefix}-images-idx3-ubyte.gz", images, 0x803)
        _idx(folder / f"{prefix}-labels-idx1-ubyte.gz", labels, 0x801)
    monkeypatch.setenv("KILN_DATASETS", str(tmp_path / "data"))
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))  # no cached mnist.npz
    monkeypatch.setattr(time_to_accuracy, "sgemm_gflops", lambda: 123.0)  # keeps the test fast
    report = tmp_path / "tta.json"
    assert main(["time-to-accuracy", "--frameworks", "kiln", "--max-epochs", "3",
                 "--target", "0.05", "--train-limit", "200", "--json", str(report)]) == 0
    out, err = capsys.readouterr()
    assert "kiln f32: test accuracy by epoch" in err  # each worker logged as it finishes
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["framework", "precision", "epochs"]
    row = lines[1].split()
    assert row[:3] == ["kiln", "f32", "1"] and row[5] == "-"  # no peer ran: no ratio
    assert float(row[3]) >= float(row[4]) > 0  # to target includes the evaluation
    assert "same-run sgemm peak: 123.0 GFLOP/s" in lines[-1]
    epochs = json.loads(report.read_text())["results"][0]["epochs"]
    assert len(epochs) == 1 and epochs[0]["accuracy"] >= 0.05  # stopped after epoch 1 of 3
