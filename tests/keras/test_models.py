"""kiln.keras Sequential models: building, summary, compile arguments, fit / evaluate / predict
behaviour (History, progress output, last partial batch), input checks, weights, determinism
and the equivalence of channels_first and channels_last models."""

import numpy as np
import pytest

from kiln import keras
from kiln.keras import initializers
from kiln.keras.callbacks import History
from kiln.keras.layers import Activation, Conv2D, Dense, Dropout, Flatten, Input, MaxPooling2D
from kiln.keras.optimizers import SGD, Adadelta, Adam, RMSprop

pytestmark = pytest.mark.usefixtures("kiln_keras_env")

CL, CF = "channels_last", "channels_first"
EPS = 1e-7


def quadrant_data(count, data_format=CL, seed=0):
    """8x8 one-channel images; the class (0-3) is the quadrant that holds a bright blob."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, count)
    x = rng.uniform(0, 0.3, (count, 8, 8, 1)).astype(np.float32)
    for i, label in enumerate(labels):
        top, left = divmod(int(label), 2)
        x[i, top * 4 + 1:top * 4 + 3, left * 4 + 1:left * 4 + 3, 0] += 1.0
    if data_format == CF:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    return x, keras.utils.to_categorical(labels, 4)


def small_cnn(data_format=CL, dropout=0.0, seed=None, name=None):
    shape = (8, 8, 1) if data_format == CL else (1, 8, 8)
    layers = [Conv2D(4, 3, activation="relu", input_shape=shape, data_format=data_format),
              MaxPooling2D(data_format=data_format)]
    if dropout:
        layers.append(Dropout(dropout, seed=seed))
    layers += [Flatten(data_format=data_format), Dense(4, activation="softmax")]
    return keras.Sequential(layers, name=name)


def crossentropy_ref(y, p):
    p = np.asarray(p, np.float64)
    p = p / p.sum(axis=-1, keepdims=True)
    return -np.sum(y * np.log(np.clip(p, EPS, 1 - EPS)), axis=-1)


def accuracy_ref(y, p):
    return np.mean(np.argmax(y, -1) == np.argmax(p, -1))


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
    assert [layer.output_shape for layer in listed.layers] == [
        layer.output_shape for layer in added.layers] == [(None, 6, 6, 3), (None, 108), (None, 2)]
    with pytest.raises(TypeError, match="Sequential.add"):
        added.add("dense")
    with pytest.raises(RuntimeError, match="already built"):
        added.add(Dense(3))


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
    assert lines[-1] == "Total params: 1,199,882"
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
    assert model.loss == "categorical_crossentropy"


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
    (dict(loss="mse", optimizer="sgd"), r"argument loss.*'mse'"),
    (dict(loss=None, optimizer="sgd"), r"argument loss"),
    (dict(loss=keras.losses.CategoricalCrossentropy, optimizer="sgd"), r"argument loss"),
    (dict(loss="categorical_crossentropy", optimizer="adamw"), r"argument optimizer.*'adamw'"),
    (dict(loss="categorical_crossentropy", optimizer=0.1), r"argument optimizer"),
    (dict(loss="categorical_crossentropy", optimizer="sgd", metrics=["mae"]),
     r"argument metrics.*'mae'"),
    (dict(loss="categorical_crossentropy", optimizer="sgd", metrics=["accuracy", "top_k"]),
     r"argument metrics.*'top_k'"),
])
def test_compile_rejects_bad_arguments(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        small_cnn().compile(**kwargs)


def test_compile_rejects_unknown_keyword():
    with pytest.raises(TypeError, match="compile.*loss_weights"):
        small_cnn().compile(loss="categorical_crossentropy", loss_weights=[1.0])


@pytest.mark.parametrize("last", [
    lambda: [Dense(4)], lambda: [Dense(4, activation="relu")],
    lambda: [Dense(4, activation="softmax"), Dropout(0.1)],
    lambda: [Dense(4, activation="sigmoid")]])
def test_compile_needs_a_final_softmax(last):
    model = keras.Sequential([Flatten(input_shape=(8, 8, 1)), *last()])
    with pytest.raises(ValueError, match=r"categorical_crossentropy.*softmax"):
        model.compile(loss="categorical_crossentropy", optimizer="sgd")


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
def compiled_cnn(optimizer=None, data_format=CL, **kwargs):
    model = small_cnn(data_format, **kwargs)
    model.compile(loss="categorical_crossentropy", optimizer=optimizer or SGD(lr=0.1),
                  metrics=["accuracy"])
    return model


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
    with pytest.raises(ValueError, match=r"Dense 'out'.*argument y.*\(batch, 4\).*\(6,\)"):
        model.fit(x, np.argmax(y, 1), verbose=0)
    with pytest.raises(ValueError, match=r"argument y.*\(batch, 4\).*\(6, 5\)"):
        model.fit(x, np.zeros((6, 5)), verbose=0)
    with pytest.raises(ValueError, match=r"argument y.*\(batch, 4\)"):
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
    with pytest.raises(TypeError, match="sample_weight"):
        model.fit(x, y, sample_weight=np.ones(10), verbose=0)
    with pytest.raises(ValueError, match="validation_data"):
        model.fit(x, y, verbose=0, validation_data=(x, y, y))


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


# -- weights ----------------------------------------------------------------------------------
def test_get_set_weights_round_trip_and_training_changes_weights():
    model = compiled_cnn(SGD(lr=0.5))
    weights = model.get_weights()
    assert [w.shape for w in weights] == [(3, 3, 1, 4), (4,), (36, 4), (4,)]
    assert [w.name for w in model.weights] == [
        f"{model.layers[0].name}/kernel", f"{model.layers[0].name}/bias",
        f"{model.layers[-1].name}/kernel", f"{model.layers[-1].name}/bias"]
    new = [np.random.default_rng(i).uniform(-0.3, 0.3, w.shape).astype(np.float32)
           for i, w in enumerate(weights)]
    model.set_weights(new)
    for got, expected in zip(model.get_weights(), new):
        np.testing.assert_array_equal(got, expected)
    x, y = quadrant_data(32)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    trained = model.get_weights()
    for got, expected in zip(trained, new):
        assert got.shape == expected.shape and not np.allclose(got, expected)
    # set_weights after training (weights now in packed, blocked layouts) is read back exactly.
    model.set_weights(new)
    for got, expected in zip(model.get_weights(), new):
        np.testing.assert_array_equal(got, expected)
    other = compiled_cnn()
    other.set_weights(new)
    np.testing.assert_allclose(other.predict(x), model.predict(x), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="expected 4 arrays"):
        model.set_weights(new[:3])
    with pytest.raises(ValueError, match=r"expected shape \(36, 4\)"):
        model.set_weights([*new[:2], new[2].T, new[3]])


def _train_seeded(seed, dropout_seed, shuffle, steps_data=64):
    initializers.set_random_seed(seed)
    model = compiled_cnn(Adam(lr=0.01), dropout=0.5, seed=dropout_seed)
    x, y = quadrant_data(steps_data, seed=5)
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=shuffle)
    return model.get_weights(), history.history["loss"]


@pytest.mark.parametrize("shuffle", [False, True])
def test_identically_seeded_training_is_deterministic(shuffle):
    weights_a, loss_a = _train_seeded(11, 5, shuffle)
    weights_b, loss_b = _train_seeded(11, 5, shuffle)
    assert loss_a == loss_b
    for a, b in zip(weights_a, weights_b):
        np.testing.assert_array_equal(a, b)


def test_seeds_matter():
    """Different initializer or dropout seeds give different results, so the determinism test
    above cannot pass by accident (and dropout really is active in training)."""
    weights, loss = _train_seeded(11, 5, False)
    for other_weights, other_loss in [_train_seeded(12, 5, False), _train_seeded(11, 6, False)]:
        assert other_loss != loss
        assert not np.array_equal(other_weights[2], weights[2])


# -- channels_first vs channels_last -----------------------------------------------------------
def cl_to_cf_dense_rows(kernel, h, w, c):
    """Reorder dense kernel rows from Keras' channels_last flatten order (H, W, C) to the
    channels_first order (C, H, W)."""
    units = kernel.shape[1]
    return np.ascontiguousarray(kernel.reshape(h, w, c, units).transpose(2, 0, 1, 3)
                                .reshape(h * w * c, units))


def test_dense_row_permutation_helper():
    kernel = np.arange(2 * 3 * 4 * 1).reshape(24, 1)
    permuted = cl_to_cf_dense_rows(kernel, 2, 3, 4)
    # channels_first row (c=1, h=0, w=2) is channels_last row (h=0, w=2, c=1).
    assert permuted[(1 * 2 + 0) * 3 + 2, 0] == kernel[(0 * 3 + 2) * 4 + 1, 0]


def test_channels_first_and_last_models_agree():
    x_cl, y = quadrant_data(32, CL, seed=6)
    x_cf = np.ascontiguousarray(x_cl.transpose(0, 3, 1, 2))
    models = {}
    for data_format in (CL, CF):
        shape = (8, 8, 1) if data_format == CL else (1, 8, 8)
        models[data_format] = keras.Sequential([
            Conv2D(3, (3, 2), activation="relu", padding="same", input_shape=shape,
                   data_format=data_format),
            MaxPooling2D((2, 4), data_format=data_format),
            Flatten(data_format=data_format),
            Dense(6, activation="tanh"),
            Dense(4, activation="softmax")])
        models[data_format].compile(loss="categorical_crossentropy", optimizer=SGD(lr=0.5),
                                    metrics=["accuracy"])
    weights = models[CL].get_weights()
    assert weights[2].shape == (4 * 2 * 3, 6)
    cf_weights = list(weights)
    cf_weights[2] = cl_to_cf_dense_rows(weights[2], 4, 2, 3)
    models[CF].set_weights(cf_weights)
    np.testing.assert_allclose(models[CF].predict(x_cf), models[CL].predict(x_cl),
                               rtol=1e-5, atol=1e-6)
    history = {f: models[f].fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False)
               for f, x in ((CL, x_cl), (CF, x_cf))}
    assert history[CF].history["loss"] == pytest.approx(history[CL].history["loss"], rel=1e-5)
    loss_cl = models[CL].evaluate(x_cl, y, verbose=0)[0]
    loss_cf = models[CF].evaluate(x_cf, y, verbose=0)[0]
    assert loss_cf == pytest.approx(loss_cl, rel=1e-4)
    trained_cl, trained_cf = models[CL].get_weights(), models[CF].get_weights()
    np.testing.assert_allclose(trained_cf[2], cl_to_cf_dense_rows(trained_cl[2], 4, 2, 3),
                               rtol=1e-4, atol=1e-6)
    for a, b in zip(trained_cf[:2] + trained_cf[3:], trained_cl[:2] + trained_cl[3:]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_channels_first_model_trains_and_its_weights_round_trip():
    x, y = quadrant_data(256, CF, seed=8)
    model = compiled_cnn(Adam(lr=0.01), data_format=CF)
    assert [w.shape for w in model.get_weights()] == [(3, 3, 1, 4), (4,), (36, 4), (4,)]
    history = model.fit(x, y, batch_size=32, epochs=4, verbose=0, shuffle=False,
                        validation_data=(x, y))
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert history.history["val_accuracy"][-1] >= 0.9
    clone = compiled_cnn(data_format=CF)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone.predict(x), model.predict(x), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match=r"\(batch, 1, 8, 8\) for data_format 'channels_first'"):
        model.predict(x.transpose(0, 2, 3, 1))


def test_input_layer_first_model_trains():
    model = keras.Sequential([Input((8, 8, 1)), Conv2D(2, 3), Flatten(),
                              Dense(4, activation="softmax")])
    model.compile(loss="categorical_crossentropy", optimizer=Adam(lr=0.05),
                  metrics=["accuracy"])
    x, y = quadrant_data(64)
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


# -- plans whose weight-gradient layout differs from the stored weight layout ------------------
# (regressions: the deferred gradient reorder of kiln/plan/builder.py once recursed forever)


def test_two_stacked_convolutions_train():
    model = keras.Sequential([Conv2D(4, 3, input_shape=(8, 8, 1)), Conv2D(3, 2), Flatten(),
                              Dense(4, activation="softmax")])
    model.compile(loss="categorical_crossentropy", optimizer=SGD(lr=0.1))
    x, y = quadrant_data(32)
    history = model.fit(x, y, batch_size=32, epochs=3, verbose=0, shuffle=False)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_fit_after_predict_on_the_mnist_cnn():
    from kiln.bench.models import mnist_cnn
    model, shape, batch_size = mnist_cnn(CL)
    rng = np.random.default_rng(9)
    x = rng.random((batch_size, *shape), dtype=np.float32)
    y = keras.utils.to_categorical(np.arange(batch_size) % 10, 10)
    before = model.predict(x)
    model.fit(x, y, batch_size=batch_size, epochs=1, verbose=0)
    assert not np.allclose(model.predict(x), before)


@pytest.mark.parametrize("predict_first", [False, True])
@pytest.mark.parametrize("data_format", [CL, CF])
def test_stacked_convolution_gradients_match_finite_differences(data_format, predict_first):
    """One SGD step with lr=1 moves each weight by minus its gradient; compare with central
    differences of the loss computed by evaluate(). Stacked small convolutions and a predict()
    before fit() make oneDNN pick weight-gradient layouts that differ from the stored ones."""
    shape = (8, 8, 1) if data_format == CL else (1, 8, 8)
    model = keras.Sequential([
        Conv2D(4, 3, activation="tanh", input_shape=shape, data_format=data_format),
        Conv2D(3, 2, strides=2, padding="same", activation="tanh", data_format=data_format),
        Flatten(data_format=data_format), Dense(5, activation="tanh"),
        Dense(4, activation="softmax")])
    model.compile(loss="categorical_crossentropy", optimizer=SGD(lr=1.0))
    x, y = quadrant_data(16, data_format, seed=10)
    rng = np.random.default_rng(11)
    start = [rng.uniform(-0.6, 0.6, w.shape).astype(np.float32) for w in model.get_weights()]
    model.set_weights(start)
    if predict_first:
        model.predict(x)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    gradients = [before - after for before, after in zip(start, model.get_weights())]
    # Directional derivative along a random unit direction in each weight tensor in turn.
    step = 1e-2
    for index, gradient in enumerate(gradients):
        direction = rng.standard_normal(gradient.shape)
        direction /= np.linalg.norm(direction)
        losses = []
        for sign in (1, -1):
            probe = list(start)
            probe[index] = (start[index] + sign * step * direction).astype(np.float32)
            model.set_weights(probe)
            losses.append(model.evaluate(x, y, batch_size=16, verbose=0))
        numeric = (losses[0] - losses[1]) / (2 * step)
        assert np.sum(gradient * direction) == pytest.approx(numeric, abs=1e-4, rel=1e-2), (
            f"gradient of {model.weights[index].name}")
        assert np.abs(gradient).max() > 1e-3  # every weight gets a real gradient
