"""keras-io's text_classification_with_transformer.py (the Keras 3 version) runs in kiln with
only its imports changed (tests/examples/kerasio/): a TokenAndPositionEmbedding layer (a
position Embedding called on `ops.arange(0, maxlen, 1)` inside call(), added to the token
embeddings) and a TransformerBlock layer (MultiHeadAttention, LayerNormalization, Dropout, a
Dense feed-forward Sequential), GlobalAveragePooling1D, Dense, trained with Adam on IMDB.

The data: a small imdb.npz in Keras's format (object arrays of word-index lists, 0/1 labels)
in a temporary Keras cache, read by `keras.datasets.imdb.load_data(num_words=20000)` as the
real file would be; the reviews are learnable (40% of each review's words are cue words of
its label) and padded to the script's maxlen of 200. The script's own 2 epochs are kept (no
line is rewritten); the number of reviews comes from the file written.
"""

import math

from keras2_scripts import (
    SCRIPTS,
    epoch_logs,
    listed_changes,
    original_and_header,
    run_script,
    write_imdb,
)

NAME = "text_classification_with_transformer"
KERASIO_SCRIPTS = SCRIPTS.parent / "kerasio"
TRAIN, TEST = 320, 64


def test_fixture_differs_from_keras_io_only_in_the_import_lines():
    _, body = original_and_header(NAME, KERASIO_SCRIPTS)
    lines = body.split("\n")
    assert listed_changes(NAME, KERASIO_SCRIPTS) == {
        15: ("import keras", "from kiln import keras"),
        16: ("from keras import ops", "from kiln.keras import ops"),
        17: ("from keras import layers", "from kiln.keras import layers")}
    assert lines[14:17] == ["from kiln import keras", "from kiln.keras import ops",
                            "from kiln.keras import layers"]
    assert sum("kiln" in line for line in lines) == 3
    assert (KERASIO_SCRIPTS / "LICENSE").read_text().lstrip().startswith("Apache License")


def test_text_classification_with_transformer(keras2_cache, capsys):
    write_imdb(keras2_cache, TRAIN, TEST)
    namespace = run_script(NAME, folder=KERASIO_SCRIPTS)
    out = capsys.readouterr().out
    assert f"{TRAIN} Training sequences" in out and f"{TEST} Validation sequences" in out
    assert namespace["x_train"].shape == (TRAIN, 200) and namespace["x_val"].shape == (TEST, 200)
    model = namespace["model"]
    assert [type(layer).__name__ for layer in model.layers] == [
        "InputLayer", "TokenAndPositionEmbedding", "TransformerBlock", "GlobalAveragePooling1D",
        "Dropout", "Dense", "Dropout", "Dense"]
    history = namespace["history"].history
    assert len(history["loss"]) == 2 and all(math.isfinite(v) for v in history["loss"])
    assert history["loss"][1] < history["loss"][0]
    assert history["val_accuracy"][-1] >= 0.75, history
    assert len(epoch_logs(out)) == 2
