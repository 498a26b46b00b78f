"""Runs examples/imdb_lstm.py (Keras 2.2.4's script, imports changed to kiln) unchanged except
`epochs=15,` -> `epochs=2,`, on a small learnable imdb.npz written in Keras's format into a
temporary Keras cache (300 training and 100 test reviews; see keras2_scripts.write_imdb): the
script reads the cache exactly as it reads the real imdb.npz Keras downloads.
"""

import ast
import math
from pathlib import Path

from keras2_scripts import epoch_logs, printed_number, write_imdb

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "imdb_lstm.py"


def example_source():
    source = EXAMPLE.read_text(encoding="utf-8")
    assert source.count("          epochs=15,\n") == 1, "the example no longer trains 15 epochs"
    return source.replace("          epochs=15,\n", "          epochs=2,\n")


def test_example_imports_only_kiln():
    tree = ast.parse(EXAMPLE.read_text(encoding="utf-8"))
    modules = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert not any(isinstance(node, ast.Import) for node in ast.walk(tree))
    assert modules == ["__future__", "kiln.keras.preprocessing", "kiln.keras.models",
                       "kiln.keras.layers", "kiln.keras.layers", "kiln.keras.datasets"]


def test_imdb_lstm_example_learns(keras2_cache, capsys):
    write_imdb(keras2_cache, 300, 100)
    namespace = {"__name__": "__main__", "__file__": str(EXAMPLE)}
    exec(compile(example_source(), str(EXAMPLE), "exec"), namespace)
    out = capsys.readouterr().out

    assert "300 train sequences" in out and "x_train shape: (300, 80)" in out
    logs = epoch_logs(out)
    assert len(logs) == 2 + 1 and logs[1]["loss"] < logs[0]["loss"]
    accuracy = printed_number(out, "Test accuracy:")
    assert math.isfinite(printed_number(out, "Test score:")) and accuracy >= 0.75
