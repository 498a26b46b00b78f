"""Keras 2.2.4's reuters_mlp.py, addition_rnn.py and lstm_text_generation.py run in kiln with
only their imports changed (from Keras 2.2.4's source distribution, see keras2_scripts.py; checked
here for all ten scripts there), on small data in the real file formats written to a temporary
Keras cache (`keras2_cache`).

Lines rewritten to keep each run to seconds (each must occur exactly once):
  reuters_mlp.py           none: the size comes from the reuters.npz written (500 newswires,
                           8 topics whose cue words make them learnable), 5 epochs as written.
  addition_rnn.py          `TRAINING_SIZE = 50000` -> 2000 questions, and
                           `for iteration in range(1, 200):` -> 2 iterations (of one epoch).
  lstm_text_generation.py  `epochs=60,` -> `epochs=2,`, and the generated text per diversity
                           `for i in range(400):` -> 10 characters: each character is one
                           predict() call of batch 1, 1,600 per epoch as written.
addition_rnn.py also imports `six.moves.range` (Python 2 compatibility); `six` is not a kiln
dependency, so the test puts a module holding the builtin range in sys.modules.
"""

import math
import re

import numpy as np
import pytest
from keras2_scripts import (
    epoch_logs,
    printed_number,
    run_script,
    six_moves_shim,
    write_reuters,
)


def test_reuters_mlp(keras2_cache, capsys):
    write_reuters(keras2_cache, count=500, classes=8)
    namespace = run_script("reuters_mlp")
    out = capsys.readouterr().out

    assert "400 train sequences" in out and "100 test sequences" in out  # test_split=0.2
    assert "8 classes" in out
    assert "x_train shape: (400, 1000)" in out and "y_train shape: (400, 8)" in out
    x_train = namespace["x_train"]  # Tokenizer(num_words=1000).sequences_to_matrix, binary
    assert set(np.unique(x_train)) <= {0.0, 1.0} and x_train[:, 0].sum() == 0
    logs = epoch_logs(out)
    assert len(logs) == 5 + 1  # five epochs, then evaluate's line
    assert logs[4]["loss"] < logs[0]["loss"]
    accuracy = printed_number(out, "Test accuracy:")
    assert accuracy > 0.6, f"test accuracy {accuracy} (chance 1/8)"
    assert math.isfinite(printed_number(out, "Test score:"))


def test_addition_rnn(keras2_cache, capsys, monkeypatch):
    six_moves_shim(monkeypatch)
    namespace = run_script("addition_rnn", [
        ("TRAINING_SIZE = 50000", "TRAINING_SIZE = 2000"),
        ("for iteration in range(1, 200):", "for iteration in range(1, 3):")])
    out = capsys.readouterr().out

    assert "Total addition questions: 2000" in out
    assert "(1800, 7, 12)\n(1800, 4, 12)" in out and "(200, 7, 12)\n(200, 4, 12)" in out
    assert "Iteration 2" in out and "Iteration 3" not in out
    assert namespace["model"].predict(namespace["x_val"][:3], verbose=0).shape == (3, 4, 12)
    logs = epoch_logs(out)
    assert len(logs) == 2
    assert logs[1]["val_loss"] < logs[0]["val_loss"] < math.log(12)
    # accuracy is per character (mean over the batch and the 4 answer steps); two epochs of
    # 1,800 questions reach the frequent characters (about 0.29), not yet the sums
    assert logs[1]["val_accuracy"] > 2 / 12, logs
    answers = re.findall(r"^Q (.{7}) T (.{4}) (\S+) (.{4})$", out, re.M)
    assert len(answers) == 20  # 10 samples shown per iteration, via predict_classes
    for question, correct, mark, guess in answers:
        assert re.fullmatch(r"[0-9+ ]{7}", question) and re.fullmatch(r"[0-9+ ]{4}", guess)
        assert ("\u2611" in mark) == (guess == correct)


def test_lstm_text_generation(keras2_cache, capsys):
    sentence = "the will to power is the strength of life, said the spirit of man. "
    corpus = (sentence * 40)[:2500]
    (keras2_cache / "nietzsche.txt").write_text(corpus.title(), encoding="utf-8")
    namespace = run_script("lstm_text_generation", [
        ("          epochs=60,", "          epochs=2,"),
        ("        for i in range(400):", "        for i in range(10):")])
    out = capsys.readouterr().out

    chars = sorted(set(corpus))  # the script lowercases the text
    assert f"corpus length: {len(corpus)}" in out and f"total chars: {len(chars)}" in out
    assert f"nb sequences: {len(range(0, len(corpus) - 40, 3))}" in out
    assert namespace["optimizer"].learning_rate == pytest.approx(0.01)  # RMSprop(lr=0.01)
    generated = re.findall(r'^----- Generating with seed: "(.{40})"\n(.*)$', out, re.M)
    assert len(generated) == 2 * 4  # every epoch end, four diversities
    for seed, text in generated:
        assert text.startswith(seed) and len(text) == 40 + 10
        assert set(text) <= set(chars)
    losses = [log["loss"] for log in epoch_logs(out)]
    # RMSprop at 0.01 overshoots in the first steps; the second epoch beats a uniform guess
    assert len(losses) == 2 and losses[1] < losses[0] and losses[1] < math.log(len(chars))
