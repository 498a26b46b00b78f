"""kiln.keras Sequential models: building, summary, compile arguments, fit / evaluate / predict
behaviour (History, progress output, last partial batch) and input checks."""

import numpy as np
import pytest
from model_helpers import (
    EPS,
    accuracy_ref,
    compiled_cnn,
    crossentropy_ref,
    quadrant_data,
    small_cnn,
)

from kiln import keras
from kiln.keras.callbacks import History
from kiln.keras.layers import Activation, Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from kiln.keras.optimizers import SGD, Adadelta, Adam, RMSprop

pytestmark = pytest.mark.usefixtures("kiln_keras_env")



# -- construction and summary -----------------------------------------------------------------
def test_list_constructor_and_add_build_the_same_model():
    def layers():
        return [Conv2D(3, 3, input_shape=(8, 8, 1)), Flatten(), Dense(2, activation="softmax")]
    listed = keras.Sequential(layers())
    added = keras.Sequential()
    for layer in layers():
        added.add(layer)
    assert len(listed.layers) == len(added.layers) == 3
    added.set_weights(listed.get_weights())
    x, _ = quadrant_data(5)
    np.testing.assert_array_equal(listed.predict(x), added.predict(x))
    assert [layer.output.shape for layer in listed.layers] == [
        layer.output.shape for layer in added.layers] == [(None, 6, 6, 3), (None, 108), (None, 2)]
    with pytest.raises(TypeError, match="Sequential.add"):
        added.add("dense")
    added.add(Dense(3))  # as in Keras 3, adding to a built model rebuilds it
    assert added.output.shape == (None, 3) and len(added.layers) == 4
    assert added.predict(x).shape == (5, 3)


def test_get_layer_by_name_and_index_as_keras():
    from keras_oracle import real_keras
    real = real_keras()
    models = [K.Sequential([K.Input((4,)), K.layers.Dense(3, name="hidden"),
                            K.layers.Dense(2, name="out")]) for K in (keras, real)]
    for model in models:
        assert model.get_layer("out") is model.layers[1]
        assert model.get_layer(index=0).name == "hidden"
        assert model.get_layer(index=-1).name == "out"
    for kwargs in ({"name": "nope"}, {"index": 2}, {}, {"name": "out", "index": 1}):
        messages = []
        for model in models:
            with pytest.raises(ValueError) as error:
                model.get_layer(**kwargs)
            messages.append(str(error.value))
        assert messages[0] == messages[1], kwargs


def test_empty_model_is_an_error():
    with pytest.raises(ValueError, match="no layers"):
        keras.Sequential().build()


def test_summary_prints_layers_and_total_params():
    model = keras.Sequential([
        Conv2D(32, (3, 3), activation="relu", input_shape=(28, 28, 1), name="c1"),
        Conv2D(64, (3, 3), activation="relu", name="c2"),
        MaxPooling2D((2, 2), name="pool"), Dropout(0.25, name="drop"), Flatten(name="flat"),
        Dense(128, activation="relu", name="d1"), Dense(10, activation="softmax", name="d2")],
        name="mnist")
    lines = []
    model.summary(print_fn=lines.append)
    total = (3 * 3 * 1 * 32 + 32) + (3 * 3 * 32 * 64 + 64) + (12 * 12 * 64 * 128 + 128) + (
        128 * 10 + 10)
    assert total == 1_199_882
    assert lines[-3:] == ["Total params: 1,199,882", "Trainable params: 1,199,882",
                          "Non-trainable params: 0"]
    assert model.count_params() == total
    text = "\n".join(lines)
    assert 'Model: "mnist"' in text
    for name, shape, params in [("c1 (Conv2D)", "(None, 26, 26, 32)", "320"),
                                ("c2 (Conv2D)", "(None, 24, 24, 64)", "18,496"),
                                ("pool (MaxPooling2D)", "(None, 12, 12, 64)", "0"),
                                ("flat (Flatten)", "(None, 9216)", "0"),
                                ("d1 (Dense)", "(None, 128)", "1,179,776"),
                                ("d2 (Dense)", "(None, 10)", "1,290")]:
        row = next(line for line in lines if line.startswith(name))
        assert shape in row and row.split()[-1] == params


def test_summary_prints_to_stdout_by_default(capsys):
    keras.Sequential([Dense(3, input_shape=(4,)), Activation("softmax")]).summary()
    assert "Total params: 15" in capsys.readouterr().out


# -- compile ----------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", ["categorical_crossentropy",
                                  keras.losses.categorical_crossentropy,
                                  keras.losses.CategoricalCrossentropy()])
def test_compile_accepts_loss_names_and_functions(loss):
    model = small_cnn()
    model.compile(loss=loss, optimizer="sgd", metrics=["accuracy"])
    assert model.loss is loss  # as Keras 3: what the user gave
    assert [entry[1].name for entry in model._compile_loss.entries] == [
        "categorical_crossentropy"]


@pytest.mark.parametrize("optimizer,cls,rate", [
    ("sgd", SGD, 0.01), ("SGD", SGD, 0.01), ("rmsprop", RMSprop, 0.001),
    ("adadelta", Adadelta, 1.0), ("adam", Adam, 0.001),
    (SGD(lr=0.5, momentum=0.9), SGD, 0.5), (Adam(learning_rate=0.01), Adam, 0.01),
    (RMSprop(lr=1e-4, decay=1e-6), RMSprop, 1e-4), (Adadelta(), Adadelta, 1.0)])
def test_compile_accepts_optimizer_names_and_instances(optimizer, cls, rate):
    model = small_cnn()
    model.compile(loss="categorical_crossentropy", optimizer=optimizer)
    assert type(model.optimizer) is cls and model.optimizer.lr == pytest.approx(rate)
    if not isinstance(optimizer, str):
        assert model.optimizer is optimizer


@pytest.mark.parametrize("metrics,key", [(["accuracy"], "accuracy"), (["acc"], "acc"),
                                         (["categorical_accuracy"], "categorical_accuracy")])
def test_metric_names_are_the_log_keys(metrics, key):
    model = small_cnn()
    model.compile(loss="categorical_crossentropy", optimizer="sgd", metrics=metrics)
    x, y = quadrant_data(20)
    history = model.fit(x, y, batch_size=10, epochs=1, verbose=0, validation_data=(x, y))
    assert set(history.history) == {"loss", key, "val_loss", f"val_{key}"}
    results = model.evaluate(x, y, verbose=0, return_dict=True)
    assert set(results) == {"loss", key}


def test_no_metrics_logs_only_loss_and_evaluate_returns_a_float():
    model = small_cnn()
    model.compile(loss="categorical_crossentropy", optimizer="sgd")
    x, y = quadrant_data(20)
    history = model.fit(x, y, batch_size=10, epochs=1, verbose=0)
    assert set(history.history) == {"loss"}
    assert isinstance(model.evaluate(x, y, verbose=0), float)


@pytest.mark.parametrize("kwargs,pattern", [
    (dict(loss="no_such_loss", optimizer="sgd"), r"argument loss.*'no_such_loss'"),
    (dict(loss=None, optimizer="sgd"), r"argument loss"),
    (dict(loss=keras.losses.CategoricalCrossentropy, optimizer="sgd"), r"argument loss"),
    (dict(loss="categorical_crossentropy", optimizer="ftrl"), r"argument optimizer.*'ftrl'"),
    (dict(loss="categorical_crossentropy", optimizer=0.1), r"argument optimizer"),
    (dict(loss="categorical_crossentropy", optimizer="sgd", metrics=["no_such_metric"]),
     r"argument metrics.*'no_such_metric'"),
    (dict(loss="categorical_crossentropy", optimizer="sgd", metrics=["accuracy", "top_k"]),
     r"argument metrics.*'top_k'"),
])
def test_compile_rejects_bad_arguments(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        small_cnn().compile(**kwargs)


def test_compile_rejects_unknown_keyword():
    with pytest.raises(TypeError, match="compile.*sample_weight_mode"):
        small_cnn().compile(loss="categorical_crossentropy", sample_weight_mode="temporal")


@pytest.mark.parametrize("last", [
    lambda: [Dense(4)], lambda: [Dense(4, activation="relu")],
    lambda: [Dense(4, activation="softmax"), Dropout(0.1)],
    lambda: [Dense(4, activation="sigmoid")]])
def test_compile_no_longer_needs_a_final_softmax(last):
    """Keras computes categorical_crossentropy on whatever the output is (normalized and
    clipped): so does kiln, with the probabilities kernel when no softmax can be fused."""
    model = keras.Sequential([Flatten(input_shape=(8, 8, 1)), *last()])
    model.compile(loss="categorical_crossentropy", optimizer=SGD(lr=0.0))
    x, y = quadrant_data(8)
    expected = np.mean(keras.losses.categorical_crossentropy(y, model.predict(x, verbose=0)))
    assert model.evaluate(x, y, verbose=0) == pytest.approx(expected, rel=1e-5)
    if not any(isinstance(layer, Dropout) for layer in model.layers):  # random in training
        history = model.fit(x, y, batch_size=8, epochs=1, verbose=0)
        assert history.history["loss"][0] == pytest.approx(expected, rel=1e-5)


def test_separate_softmax_activation_layer_is_accepted():
    model = keras.Sequential([Flatten(input_shape=(8, 8, 1)), Dense(4), Activation("softmax")])
    model.compile(loss="categorical_crossentropy", optimizer=SGD(lr=0.5), metrics=["accuracy"])
    x, y = quadrant_data(64)
    history = model.fit(x, y, batch_size=16, epochs=5, verbose=0, shuffle=False)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_fit_and_evaluate_before_compile_are_errors():
    model = small_cnn()
    x, y = quadrant_data(4)
    with pytest.raises(RuntimeError, match="compile"):
        model.fit(x, y, verbose=0)
    with pytest.raises(RuntimeError, match="compile"):
        model.evaluate(x, y)
    assert model.predict(x).shape == (4, 4)  # predict needs no compile


# -- fit --------------------------------------------------------------------------------------


def test_fit_returns_history_with_per_epoch_lists_and_learns():
    model = compiled_cnn(Adam(lr=0.01))
    x, y = quadrant_data(256, seed=1)
    x_val, y_val = quadrant_data(64, seed=2)
    history = model.fit(x, y, batch_size=32, epochs=4, verbose=0, validation_data=(x_val, y_val),
                        shuffle=False)
    assert isinstance(history, History) and history is model.history
    assert history.epoch == [0, 1, 2, 3]
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    for values in history.history.values():
        assert len(values) == 4 and all(np.isfinite(float(v)) for v in values)
    logs = history.history
    assert logs["loss"][-1] < logs["loss"][0] and logs["val_loss"][-1] < logs["val_loss"][0]
    assert logs["val_accuracy"][-1] >= 0.9
    # The last validation entries are exactly what evaluate() reports afterwards.
    loss, accuracy = model.evaluate(x_val, y_val, verbose=0)
    assert logs["val_loss"][-1] == pytest.approx(loss, rel=1e-6)
    assert logs["val_accuracy"][-1] == pytest.approx(accuracy)


def test_validation_split_uses_the_last_samples():
    model = compiled_cnn(SGD(lr=0.0))
    x, y = quadrant_data(50)
    history = model.fit(x, y, batch_size=16, epochs=1, verbose=0, validation_split=0.2)
    loss, accuracy = model.evaluate(x[40:], y[40:], verbose=0)
    assert history.history["val_loss"] == [pytest.approx(loss)]
    assert history.history["val_accuracy"] == [pytest.approx(accuracy)]
    with pytest.raises(ValueError, match="validation_split"):
        model.fit(x, y, verbose=0, validation_split=1.5)


def test_verbose_0_prints_nothing(capsys):
    model = compiled_cnn()
    x, y = quadrant_data(40)
    model.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_data=(x, y))
    model.evaluate(x, y, verbose=0)
    model.predict(x)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


@pytest.mark.parametrize("verbose", [1, 2, "auto"])
def test_verbose_prints_header_and_one_line_per_epoch_when_not_a_tty(capsys, verbose):
    model = compiled_cnn()
    x, y = quadrant_data(40)
    model.fit(x, y, batch_size=16, epochs=3, verbose=verbose, validation_data=(x, y))
    out = capsys.readouterr().out
    assert "\r" not in out
    lines = out.splitlines()
    assert len(lines) == 6
    for epoch in range(3):
        assert lines[2 * epoch] == f"Epoch {epoch + 1}/3"
        line = lines[2 * epoch + 1]
        assert line.startswith("3/3 - ")
        for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
            assert f" - {key}: " in line


def test_smaller_last_batch_and_sample_weighted_epoch_logs():
    """100 samples in batches of 32: three full batches and one of 4. With a zero learning rate
    the weights stay put, so the epoch loss/accuracy must be the per-sample means over all 100,
    i.e. the last batch weighs 4 samples, not a whole batch."""
    model = compiled_cnn(SGD(lr=0.0))
    x, y = quadrant_data(100)
    before = model.get_weights()
    history = model.fit(x, y, batch_size=32, epochs=2, verbose=0)
    for got, expected in zip(model.get_weights(), before):
        np.testing.assert_array_equal(got, expected)
    probabilities = model.predict(x)
    loss = np.mean(crossentropy_ref(y, probabilities))
    assert history.history["loss"] == [pytest.approx(loss, rel=1e-5)] * 2
    assert history.history["accuracy"] == [pytest.approx(accuracy_ref(y, probabilities))] * 2
    # And a real optimizer trains through the partial batch too.
    model = compiled_cnn(SGD(lr=0.1))
    before = model.get_weights()
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    assert all(np.all(np.isfinite(w)) for w in model.get_weights())
    assert any(not np.array_equal(a, b) for a, b in zip(model.get_weights(), before))


def test_batch_larger_than_dataset_and_steps_per_epoch():
    model = compiled_cnn(SGD(lr=0.0))
    x, y = quadrant_data(10)
    history = model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    assert history.history["loss"][0] == pytest.approx(
        np.mean(crossentropy_ref(y, model.predict(x))), rel=1e-5)
    x, y = quadrant_data(64)
    history = model.fit(x, y, batch_size=16, epochs=1, verbose=0, steps_per_epoch=1,
                        shuffle=False)
    assert history.history["loss"][0] == pytest.approx(
        np.mean(crossentropy_ref(y[:16], model.predict(x[:16]))), rel=1e-5)


def test_predict_on_1_and_33_samples_and_batch_sizes():
    model = compiled_cnn()
    x, _ = quadrant_data(70)
    full = model.predict(x, batch_size=70)
    assert full.shape == (70, 4)
    np.testing.assert_allclose(full.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(model.predict(x[:1]), full[:1], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(model.predict(x[:33]), full[:33], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(model.predict(x, batch_size=32), full, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(model.predict(x.astype(np.float64)), full, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(model.predict(x.tolist()), full, rtol=1e-5, atol=1e-7)
    # The result is the caller's: predicting again does not overwrite it.
    first = model.predict(x[:5])
    keep = first.copy()
    model.predict(x[5:10])
    np.testing.assert_array_equal(first, keep)


# -- bad inputs -------------------------------------------------------------------------------
def test_wrong_input_shape_names_layer_and_expected_shape():
    model = keras.Sequential([Conv2D(4, 3, input_shape=(8, 8, 1), name="first_conv"), Flatten(),
                              Dense(4, activation="softmax")])
    model.compile(loss="categorical_crossentropy", optimizer="sgd")
    x, y = quadrant_data(6)
    pattern = r"Conv2D 'first_conv'.*argument x.*\(batch, 8, 8, 1\).*\(6, 1, 8, 8\)"
    with pytest.raises(ValueError, match=pattern):
        model.fit(x.transpose(0, 3, 1, 2), y, verbose=0)
    with pytest.raises(ValueError, match=r"Conv2D 'first_conv'.*\(batch, 8, 8, 1\)"):
        model.predict(x[:, :, :, 0])
    with pytest.raises(ValueError, match=r"Conv2D 'first_conv'.*\(batch, 8, 8, 1\)"):
        model.evaluate(x[:, :7], y)
    with pytest.raises(ValueError, match=r"argument x.*\(batch, 8, 8, 1\)"):
        model.fit(x, y, verbose=0, validation_data=(x[:, :, :7], y))


def test_labels_not_matching_output_name_y_and_expected_shape():
    model = keras.Sequential([Flatten(input_shape=(8, 8, 1)),
                              Dense(4, activation="softmax", name="out")])
    model.compile(loss="categorical_crossentropy", optimizer="sgd")
    x, y = quadrant_data(6)
    with pytest.raises(ValueError, match=r"batch 0: argument y for loss "
                                         r"'categorical_crossentropy' on output 'out' must have "
                                         r"shape \(6, 4\).*got \(6,\).*sparse"):
        model.fit(x, np.argmax(y, 1), verbose=0)
    with pytest.raises(ValueError, match=r"argument y.*shape \(6, 4\).*\(6, 5\)"):
        model.fit(x, np.zeros((6, 5)), verbose=0)
    with pytest.raises(ValueError, match=r"argument y.*shape \(6, 4\)"):
        model.evaluate(x, y[:, :3])


def test_non_numeric_arrays_are_refused():
    model = compiled_cnn()
    x, y = quadrant_data(4)
    with pytest.raises(ValueError, match=r"argument x must be a numeric array"):
        model.fit(np.full((4, 8, 8, 1), "a"), y, verbose=0)
    with pytest.raises(ValueError, match=r"argument x must be a numeric array"):
        model.predict(np.array([["a", "b"]], dtype=object))
    with pytest.raises(ValueError, match=r"argument y must be a numeric array"):
        model.fit(x, np.array([["cat"] * 4] * 4), verbose=0)


def test_x_and_y_length_mismatch():
    model = compiled_cnn()
    x, y = quadrant_data(10)
    with pytest.raises(ValueError, match=r"same number of samples.*10.*9"):
        model.fit(x, y[:9], verbose=0)
    with pytest.raises(ValueError, match=r"same number of samples"):
        model.evaluate(x[:3], y)


def test_bad_fit_arguments():
    model = compiled_cnn()
    x, y = quadrant_data(10)
    with pytest.raises(ValueError, match="batch_size"):
        model.fit(x, y, batch_size=-1, verbose=0)
    with pytest.raises(TypeError, match="sample_weights"):
        model.fit(x, y, sample_weights=np.ones(10), verbose=0)
    with pytest.raises(ValueError, match="validation_data"):
        model.fit(x, y, verbose=0, validation_data=(x, y, y, y))


# -- evaluate ---------------------------------------------------------------------------------
def test_evaluate_matches_numpy_from_predict():
    model = compiled_cnn(Adam(lr=0.01))
    x, y = quadrant_data(90, seed=3)
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    probabilities = model.predict(x)
    loss, accuracy = model.evaluate(x, y, verbose=0)
    assert loss == pytest.approx(np.mean(crossentropy_ref(y, probabilities)), rel=1e-6)
    assert accuracy == pytest.approx(accuracy_ref(y, probabilities))
    assert model.evaluate(x, y, batch_size=7, verbose=0) == pytest.approx([loss, accuracy],
                                                                           rel=1e-5)
    assert model.evaluate(x, y, verbose=0, return_dict=True) == {"loss": loss,
                                                                 "accuracy": accuracy}


def test_evaluate_clips_probabilities_like_keras():
    """A confidently wrong prediction costs -log(1e-7), not infinity."""
    model = keras.Sequential([Dense(2, input_shape=(1,)), Activation("softmax")])
    model.compile(loss="categorical_crossentropy", optimizer="sgd", metrics=["acc"])
    model.set_weights([np.array([[100.0, -100.0]], np.float32), np.zeros(2, np.float32)])
    x = np.ones((2, 1), np.float32)
    y = np.array([[0, 1], [1, 0]], np.float32)
    loss, accuracy = model.evaluate(x, y, verbose=0)
    assert loss == pytest.approx((-np.log(EPS) + -np.log(1 - EPS)) / 2, rel=1e-6)
    assert accuracy == 0.5


def test_training_loss_matches_numpy_crossentropy_of_softmax():
    """The fused softmax-crossentropy head reports the same loss as numpy on the predictions."""
    model = keras.Sequential([Dense(5, input_shape=(6,)), Activation("softmax")])
    model.compile(loss="categorical_crossentropy", optimizer=SGD(lr=0.0), metrics=["accuracy"])
    rng = np.random.default_rng(4)
    x = rng.standard_normal((24, 6)).astype(np.float32)
    y = keras.utils.to_categorical(rng.integers(0, 5, 24), 5)
    history = model.fit(x, y, batch_size=24, epochs=1, verbose=0)
    p = keras.activations.softmax(x.astype(np.float64) @ model.get_weights()[0]
                                  + model.get_weights()[1])
    assert history.history["loss"][0] == pytest.approx(np.mean(crossentropy_ref(y, p)), rel=1e-5)
    assert history.history["accuracy"][0] == pytest.approx(accuracy_ref(y, p))


def test_evaluate_verbose_prints_one_line_with_the_returned_values(capsys):
    model = compiled_cnn()
    x, y = quadrant_data(100)
    capsys.readouterr()
    loss, accuracy = model.evaluate(x, y, batch_size=32, verbose=1)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("4/4 - ")
    assert f"loss: {loss:.4f}" in lines[0] and f"accuracy: {accuracy:.4f}" in lines[0]
    model.evaluate(x, y, batch_size=32, verbose=0)
    assert capsys.readouterr().out == ""
