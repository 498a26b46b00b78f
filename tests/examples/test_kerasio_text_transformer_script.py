"""keras-io's text_classification_with_transformer.py (the Keras 3 version) runs in kiln with only
its imports changed (read from a keras-io checkout named by KILN_KERAS_IO): a
TokenAndPositionEmbedding layer (a position Embedding called on `ops.arange(0, maxlen, 1)`
inside call(), added to the token embeddings) and a TransformerBlock layer (MultiHeadAttention,
LayerNormalization, Dropout, a Dense feed-forward Sequential), GlobalAveragePooling1D, Dense,
trained with Adam on IMDB.

The data: a small imdb.npz in Keras's format (object arrays of word-index lists, 0/1 labels)
in a temporary Keras cache, read by `keras.datasets.imdb.load_data(num_words=20000)` as the
real file would be; the reviews are learnable (40% of each review's words are cue words of
its label) and padded to the script's maxlen of 200. The script's own 2 epochs are kept (no
line is rewritten); the number of reviews comes from the file written.
"""

import math

from keras2_scripts import (
    KERAS_IO,
    epoch_logs,
    run_script,
    write_imdb,
)

NAME = "text_classification_with_transformer"
TRAIN, TEST = 320, 64



def test_text_classification_with_transformer(keras2_cache, capsys):
    write_imdb(keras2_cache, TRAIN, TEST)
    namespace = run_script(NAME, origin=KERAS_IO)
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
