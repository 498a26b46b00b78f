"""Keras 2.2.4's IMDB scripts (imdb_cnn.py, imdb_cnn_lstm.py, imdb_bidirectional_lstm.py,
imdb_fasttext.py, imdb_lstm.py) run in kiln with only their imports changed (from Keras 2.2.4's
source distribution on PyPI), on a small imdb.npz written in Keras's format (object arrays of
word-index lists, 0/1 labels) plus imdb_word_index.json in a temporary Keras cache
(`keras2_cache`). The reviews are learnable: 30% of each review's words are cue words of its
label, so validation accuracy must end well above chance (0.5).

Lines rewritten to keep each run to seconds (each must occur exactly once):
  imdb_cnn.py, imdb_cnn_lstm.py, imdb_fasttext.py   none (2, 2 and 5 epochs as written)
  imdb_bidirectional_lstm.py                        `epochs=4,` -> `epochs=2,`
  imdb_lstm.py                                      `epochs=15,` -> `epochs=2,`
The number of reviews comes from the file written (200 train, 100 test; 800 train for the
cheap fasttext model, whose mean of 400 embeddings learns slowly); maxlen and the vocabulary
sizes are the scripts' own.
"""

import math

import pytest
from keras2_scripts import epoch_logs, printed_number, run_script, write_imdb

TRAIN, TEST = 200, 100


def run_imdb_script(name, cache, capsys, rewrites=(), maxlen=None, train=TRAIN, test=TEST):
    write_imdb(cache, train, test)
    namespace = run_script(name, rewrites)
    out = capsys.readouterr().out
    assert f"{train} train sequences" in out and f"{test} test sequences" in out
    assert f"x_train shape: ({train}, {maxlen})" in out
    assert f"x_test shape: ({test}, {maxlen})" in out
    return namespace, out


def assert_learned(logs, epochs, bound=0.75):
    """The last epoch's validation accuracy beats chance clearly; the loss went down."""
    assert len(logs) >= epochs
    fit_logs = logs[:epochs]
    assert fit_logs[-1]["val_accuracy"] >= bound, fit_logs
    if epochs > 1:
        assert fit_logs[-1]["loss"] < fit_logs[0]["loss"], fit_logs


def assert_test_score(out, logs):
    score, accuracy = printed_number(out, "Test score:"), printed_number(out, "Test accuracy:")
    assert math.isfinite(score) and accuracy == pytest.approx(logs[-1]["accuracy"], abs=1e-4)
    assert accuracy >= 0.75


def test_imdb_cnn(keras2_cache, capsys):
    _, out = run_imdb_script("imdb_cnn", keras2_cache, capsys, maxlen=400)
    assert_learned(epoch_logs(out), epochs=2)


def test_imdb_fasttext(keras2_cache, capsys):
    # the mean of 400 embeddings learns slowly: more reviews (the model is cheap)
    _, out = run_imdb_script("imdb_fasttext", keras2_cache, capsys, maxlen=400, train=800)
    average = printed_number(out, "Average train sequence length:")
    assert 150 < average < 400  # the reviews written are 150 to 400 words
    assert_learned(epoch_logs(out), epochs=5)


def test_imdb_cnn_lstm(keras2_cache, capsys):
    _, out = run_imdb_script("imdb_cnn_lstm", keras2_cache, capsys, maxlen=100)
    logs = epoch_logs(out)
    assert_learned(logs, epochs=2)
    assert_test_score(out, logs)


def test_imdb_bidirectional_lstm(keras2_cache, capsys):
    namespace, out = run_imdb_script("imdb_bidirectional_lstm", keras2_cache, capsys,
                                     rewrites=[("          epochs=4,", "          epochs=2,")],
                                     maxlen=100)
    assert type(namespace["model"].layers[1]).__name__ == "Bidirectional"
    assert_learned(epoch_logs(out), epochs=2)


def test_imdb_lstm(keras2_cache, capsys):
    _, out = run_imdb_script("imdb_lstm", keras2_cache, capsys,
                             rewrites=[("          epochs=15,", "          epochs=2,")],
                             maxlen=80)
    logs = epoch_logs(out)
    assert_learned(logs, epochs=2)
    assert_test_score(out, logs)
