"""The shared real-Keras checker (keras_oracle.py) for losses and metrics: the same model
built in kiln and in Keras 3 from the same initial weights is compiled with the same loss,
loss_weights and metrics, fitted a few epochs of SGD on the same data (labels, sample or
class weights), and must log the same batch logs (running results), the same history (every
key: loss, per-output losses, metrics, val_*) and hold the same weights after each epoch;
then `evaluate(return_dict=True)` must give the same dict on both sides.

    check_fit_against_keras(build, compile_args=lambda K: dict(loss=..., metrics=[...]),
                            make_y=lambda rng, count: ...)
"""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import keras_oracle  # noqa: E402  (sets KERAS_BACKEND before Keras is imported)
from keras_oracle import RTOL, assert_weights_close, build_pair, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402


def _close(name, kiln_value, keras_value, what):
    assert kiln_value == pytest.approx(float(keras_value), rel=RTOL, abs=1e-5), (
        f"{what} {name}: kiln {kiln_value}, keras {float(keras_value)}")


def _batch_logger(module, into):
    return module.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: into.append(
            {name: float(value) for name, value in logs.items()}))


def check_fit_against_keras(build, compile_args, make_y, epochs=2, batch_size=None, seed=0,
                            fit_args=None, learning_rate=0.1, validation=True,
                            compare_list=True):
    """`compile_args(K)`: compile()'s arguments on either API (optimizer added: SGD);
    `make_y(rng, count)`: the labels (an array, or a list / dict for several outputs);
    `fit_args(rng, count, y)`: extra fit arguments (sample_weight, class_weight).
    `compare_list`: also compare evaluate()'s list (Keras repeats a value there when a
    metric and a weighted metric share a name; kiln lists each once).
    Returns (kiln model, Keras model)."""
    keras = real_keras()
    kiln_model, keras_model, x = build_pair(build, seed=seed)
    count = len(keras_oracle._flat_items(x)[0][1])
    rng = np.random.default_rng(seed + 10)
    y = make_y(rng, count)
    extra = fit_args(rng, count, y) if fit_args else {}
    for model, module in ((kiln_model, kk), (keras_model, keras)):
        model.compile(optimizer=module.optimizers.SGD(learning_rate=learning_rate),
                      **compile_args(module))
    batch_size = batch_size or count
    for epoch in range(epochs):
        what = f"epoch {epoch + 1}"
        common = dict(epochs=1, batch_size=batch_size, shuffle=False, verbose=0, **extra)
        if validation:
            common["validation_data"] = (x, y)
        kiln_batches, keras_batches = [], []
        kiln_history = kiln_model.fit(x, y, callbacks=[_batch_logger(kk, kiln_batches)],
                                      **common).history
        keras_history = keras_model.fit(x, y, callbacks=[_batch_logger(keras, keras_batches)],
                                        **common).history
        # batch logs are the running results since the epoch began, as in Keras 3
        assert len(kiln_batches) == len(keras_batches)
        for step, (ours, theirs) in enumerate(zip(kiln_batches, keras_batches, strict=True)):
            assert sorted(ours) == sorted(theirs), f"{what} batch {step}: log keys"
            for name in theirs:
                _close(name, ours[name], theirs[name], f"{what} batch {step}")
        assert sorted(kiln_history) == sorted(keras_history), (
            f"{what}: history keys: kiln {sorted(kiln_history)}, keras {sorted(keras_history)}")
        for name in keras_history:
            _close(name, kiln_history[name][0], keras_history[name][0], what)
        assert_weights_close(kiln_model, keras_model, f"after {what}")
    evaluate_args = {k: v for k, v in extra.items() if k == "sample_weight"}
    kiln_results = kiln_model.evaluate(x, y, batch_size=batch_size, verbose=0,
                                       return_dict=True, **evaluate_args)
    keras_results = keras_model.evaluate(x, y, batch_size=batch_size, verbose=0,
                                         return_dict=True, **evaluate_args)
    assert sorted(kiln_results) == sorted(keras_results)
    for name in keras_results:
        _close(name, kiln_results[name], keras_results[name], "evaluate")
    if not compare_list:
        return kiln_model, keras_model
    kiln_list = kiln_model.evaluate(x, y, batch_size=batch_size, verbose=0, **evaluate_args)
    keras_list = keras_model.evaluate(x, y, batch_size=batch_size, verbose=0, **evaluate_args)
    np.testing.assert_allclose(kiln_list, keras_list, rtol=RTOL, atol=1e-5,
                               err_msg="evaluate() list (order of the values)")
    return kiln_model, keras_model
