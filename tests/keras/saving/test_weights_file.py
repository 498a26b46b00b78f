"""The Keras 3 weights file (`.weights.h5`) against real Keras: kiln's file has Keras's layout,
Keras reads kiln's file and kiln reads Keras's, with the same predictions; loading refuses bad
files with clear errors and leaves the model untouched; writes are atomic."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import h5py  # noqa: E402
import keras_oracle  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def sequential_cnn(K):
    return K.Sequential([
        K.Input((8, 8, 1)),
        K.layers.Conv2D(4, 3, activation="relu"),
        K.layers.MaxPooling2D(),
        K.layers.Conv2D(3, 3, padding="same"),
        K.layers.Flatten(),
        K.layers.Dense(4, activation="softmax"),
    ])


def functional_with_batch_norm(K):
    inputs = K.Input((8, 8, 1))
    x = K.layers.Conv2D(4, 3)(inputs)
    x = K.layers.BatchNormalization()(x)
    x = K.layers.Activation("relu")(x)
    branch = K.layers.Conv2D(4, 3, padding="same")(x)
    x = K.layers.Add()([x, branch])
    x = K.layers.Flatten()(x)
    outputs = K.layers.Dense(3, activation="softmax")(x)
    return K.Model(inputs, outputs)


def nested_sequential(K):
    """A Sequential used as a layer: its layers sit under its own path."""
    inner = K.Sequential([K.Input((8, 8, 1)), K.layers.Conv2D(3, 3), K.layers.Conv2D(2, 1)],
                         name="inner")
    inputs = K.Input((8, 8, 1))
    x = K.layers.Flatten()(K.layers.BatchNormalization()(inner(inputs)))
    return K.Model(inputs, K.layers.Dense(2, activation="softmax")(x), name="outer")


def subclassed(K):
    """Layers found through attributes, sorted by name, and a list of layers."""
    class Net(K.Model):
        def __init__(self):
            super().__init__()
            self.hidden = K.layers.Dense(4, activation="relu")
            self.blocks = [K.layers.Dense(4), K.layers.Dense(4, activation="tanh")]
            self.out = K.layers.Dense(2, activation="softmax")

        def call(self, x):
            x = self.hidden(K.layers.Flatten()(x) if K is kk else K.ops.reshape(x, (-1, 64)))
            for block in self.blocks:
                x = block(x)
            return self.out(x)

    model = Net()
    if K is kk:
        model.build((None, 8, 8, 1))
    else:
        model(np.zeros((1, 8, 8, 1), np.float32))  # Keras builds sublayers on a call
    return model


def frozen_parts(K):
    """Frozen layers keep Keras's variable order (a frozen kernel still comes first)."""
    inputs = K.Input((8, 8, 1))
    conv = K.layers.Conv2D(3, 3)
    conv.trainable = False
    norm = K.layers.BatchNormalization()
    norm.trainable = False
    x = K.layers.Flatten()(norm(conv(inputs)))
    return K.Model(inputs, K.layers.Dense(2, activation="softmax")(x))


ARCHITECTURES = [sequential_cnn, functional_with_batch_norm, nested_sequential, subclassed,
                 frozen_parts]


def randomize(model, seed=0):
    """Weights far from their initial values (BatchNormalization's statistics included), so a
    weight that is not loaded shows in the predictions."""
    rng = np.random.default_rng(seed)
    values = []
    for weight in model.weights:
        value = rng.normal(0, 0.5, weight.shape).astype(np.float32)
        if "variance" in weight.path:
            value = np.abs(value) + 0.5
        values.append(value)
    model.set_weights(values)


def layout(filepath):
    """{entry: description} of every group and dataset, with attributes."""
    entries = {}

    def visit(name, item):
        if isinstance(item, h5py.Dataset):
            entries[name] = ("dataset", item.shape, str(item.dtype), dict(item.attrs))
        else:
            entries[name] = ("group", dict(item.attrs))

    with h5py.File(filepath, "r") as h5_file:
        entries["/"] = ("root", dict(h5_file.attrs))
        h5_file.visititems(visit)
    return entries


def inputs(seed=1):
    return np.random.default_rng(seed).normal(size=(6, 8, 8, 1)).astype(np.float32)


@pytest.mark.parametrize("build", ARCHITECTURES, ids=lambda b: b.__name__)
def test_keras_reads_kiln_weights_file_with_the_same_layout(build, tmp_path):
    keras = keras_oracle.real_keras()
    keras.backend.clear_session()
    kk.backend.clear_session()
    model = build(kk)
    randomize(model)
    model.save_weights(tmp_path / "kiln.weights.h5")
    reference = build(keras)
    reference.save_weights(tmp_path / "keras.weights.h5")
    # the same groups, datasets, shapes, dtypes and name attributes as Keras's own file
    assert layout(tmp_path / "kiln.weights.h5") == layout(tmp_path / "keras.weights.h5")

    reference.load_weights(tmp_path / "kiln.weights.h5")
    np.testing.assert_allclose(reference.predict(inputs(), verbose=0), model.predict(inputs()),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("build", ARCHITECTURES, ids=lambda b: b.__name__)
def test_kiln_reads_keras_weights_file(build, tmp_path):
    keras = keras_oracle.real_keras()
    reference = build(keras)
    randomize(reference, seed=3)
    reference.save_weights(tmp_path / "keras.weights.h5")
    model = build(kk)
    model.load_weights(str(tmp_path / "keras.weights.h5"))
    for mine, theirs in zip(model.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_allclose(model.predict(inputs()), reference.predict(inputs(), verbose=0),
                               rtol=1e-4, atol=1e-5)


def test_layers_are_matched_by_path_not_by_name(tmp_path):
    """Two instances of one architecture have different layer names (conv2d vs conv2d_2)."""
    first, second = sequential_cnn(kk), sequential_cnn(kk)
    assert first.layers[0].name != second.layers[0].name
    randomize(first)
    first.save_weights(tmp_path / "a.weights.h5")
    second.load_weights(tmp_path / "a.weights.h5")
    np.testing.assert_array_equal(second.predict(inputs()), first.predict(inputs()))


def test_trained_weights_round_trip(tmp_path):
    model = functional_with_batch_norm(kk)
    model.compile(optimizer=kk.optimizers.SGD(learning_rate=0.1), loss="categorical_crossentropy")
    x, y = inputs(), np.eye(3, dtype=np.float32)[[0, 1, 2, 0, 1, 2]]
    model.fit(x, y, batch_size=3, epochs=2, verbose=0, shuffle=False)
    model.save_weights(tmp_path / "trained.weights.h5")
    fresh = functional_with_batch_norm(kk)
    fresh.load_weights(tmp_path / "trained.weights.h5")
    for mine, theirs in zip(fresh.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(mine, theirs)


# -- optimizer state ----------------------------------------------------------------------------
def compiled_pair(keras, build=None, steps=2):
    """The same model in both frameworks, compiled with Adam, from the same weights, each
    trained `steps` full-batch steps on the same data."""
    build = build or sequential_cnn
    x, y = inputs(), np.eye(4, dtype=np.float32)[[0, 1, 2, 3, 0, 1]]
    model = build(kk)  # initial weights: randomize()'s would saturate the softmax, where
    # Keras's clipped cross-entropy and kiln's fused one have different gradients
    model.compile(optimizer=kk.optimizers.Adam(learning_rate=0.01),
                  loss="categorical_crossentropy")
    reference = build(keras)
    reference.set_weights(model.get_weights())
    reference.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01),
                      loss="categorical_crossentropy")
    for side in (model, reference):
        side.fit(x, y, batch_size=6, epochs=steps, verbose=0, shuffle=False)
    return model, reference, x, y


def assert_close_weights(mine, theirs):
    for a, b in zip(mine, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_keras_resumes_from_kilns_optimizer_state(tmp_path):
    keras = keras_oracle.real_keras()
    model, reference, x, y = compiled_pair(keras)
    model.save_weights(tmp_path / "kiln.weights.h5")
    fresh = sequential_cnn(keras)
    fresh.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01),
                  loss="categorical_crossentropy")
    fresh.optimizer.build(fresh.trainable_variables)  # Keras loads into built variables only
    fresh.load_weights(tmp_path / "kiln.weights.h5")
    # Keras now holds kiln's moments (and step count): variable by variable, Keras's order
    assert int(fresh.optimizer.iterations.numpy()) == 2
    for mine, theirs in zip(fresh.optimizer.variables, reference.optimizer.variables,
                            strict=True):
        np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=1e-4, atol=1e-6)
    fresh.fit(x, y, batch_size=6, epochs=1, verbose=0)
    model.fit(x, y, batch_size=6, epochs=1, verbose=0)
    assert_close_weights(fresh.get_weights(), model.get_weights())


def test_kiln_resumes_from_keras_optimizer_state(tmp_path):
    keras = keras_oracle.real_keras()
    model, reference, x, y = compiled_pair(keras)
    reference.save_weights(tmp_path / "keras.weights.h5")
    fresh = sequential_cnn(kk)
    fresh.compile(optimizer=kk.optimizers.Adam(learning_rate=0.01),
                  loss="categorical_crossentropy")
    fresh.load_weights(tmp_path / "keras.weights.h5")
    assert int(fresh.optimizer.iterations) == 2
    fresh.fit(x, y, batch_size=6, epochs=1, verbose=0)
    reference.fit(x, y, batch_size=6, epochs=1, verbose=0)
    assert_close_weights(fresh.get_weights(), reference.get_weights())
    # without the optimizer state (a fresh Adam) the step differs: the test can tell
    blank = sequential_cnn(kk)
    blank.compile(optimizer=kk.optimizers.Adam(learning_rate=0.01),
                  loss="categorical_crossentropy")
    blank.set_weights(reference.get_weights())
    blank.load_weights(tmp_path / "keras.weights.h5", skip_mismatch=True)
    blank.optimizer.set_state({"iterations": np.array(0)})
    blank.fit(x, y, batch_size=6, epochs=1, verbose=0)
    assert not np.allclose(blank.get_weights()[0], reference.get_weights()[0], rtol=1e-4)


def test_optimizer_state_round_trip_in_kiln(tmp_path):
    model, _, x, y = compiled_pair(keras_oracle.real_keras())
    model.save_weights(tmp_path / "with_optimizer.weights.h5")
    with h5py.File(tmp_path / "with_optimizer.weights.h5", "r") as h5_file:
        group = h5_file["optimizer/vars"]
        assert dict(group.attrs) == {"name": model.optimizer.name}
        # iterations, learning rate, then (momentum, velocity) per trainable weight
        assert len(group) == 2 + 2 * len(model.trainable_weights)
    resumed = sequential_cnn(kk)
    resumed.compile(optimizer=kk.optimizers.Adam(learning_rate=0.01),
                    loss="categorical_crossentropy")
    resumed.load_weights(tmp_path / "with_optimizer.weights.h5")
    model.fit(x, y, batch_size=6, epochs=1, verbose=0, shuffle=False)
    resumed.fit(x, y, batch_size=6, epochs=1, verbose=0, shuffle=False)
    for mine, theirs in zip(resumed.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=1e-7)


def test_another_optimizers_state_is_skipped_with_a_warning(tmp_path):
    model, _, _, _ = compiled_pair(keras_oracle.real_keras())
    model.save_weights(tmp_path / "adam.weights.h5")
    other = sequential_cnn(kk)
    other.compile(optimizer=kk.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                  loss="categorical_crossentropy")
    with pytest.warns(UserWarning, match="Skipping variable loading for optimizer"):
        other.load_weights(tmp_path / "adam.weights.h5")
    for mine, theirs in zip(other.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(mine, theirs)  # the layers are loaded all the same


# -- bad input --------------------------------------------------------------------------------
def test_another_architecture_is_refused_and_nothing_is_loaded(tmp_path):
    source = sequential_cnn(kk)
    source.save_weights(tmp_path / "cnn.weights.h5")
    target = functional_with_batch_norm(kk)
    before = target.get_weights()
    with pytest.raises(ValueError) as error:
        target.load_weights(tmp_path / "cnn.weights.h5")
    message = str(error.value)
    assert "cnn.weights.h5" in message
    assert "BatchNormalization 'batch_normalization" in message
    assert "expected 4 variables" in message
    for now, then in zip(target.get_weights(), before, strict=True):
        np.testing.assert_array_equal(now, then)


def test_shape_mismatch_names_layer_and_shapes_and_skip_mismatch_loads_the_rest(tmp_path):
    def build(units):
        return kk.Sequential([kk.Input((5,)), kk.layers.Dense(3), kk.layers.Dense(units)])

    source = build(2)
    randomize(source)
    source.save_weights(tmp_path / "dense.weights.h5")
    target = build(4)
    with pytest.raises(ValueError, match=r"Dense 'dense_\d+' \(group 'layers/dense_1'\): "
                                         r"variable 0 \('kernel'\) expected shape \(3, 4\), "
                                         r"the file has \(3, 2\)"):
        target.load_weights(tmp_path / "dense.weights.h5")
    last = target.layers[-1].get_weights()
    with pytest.warns(UserWarning, match="skip_mismatch=True"):
        target.load_weights(tmp_path / "dense.weights.h5", skip_mismatch=True)
    np.testing.assert_array_equal(target.layers[0].get_weights()[0],
                                  source.layers[0].get_weights()[0])
    np.testing.assert_array_equal(target.layers[-1].get_weights()[0], last[0])


def test_legacy_h5_names_the_format_and_what_is_supported(tmp_path):
    # (Keras 2 .h5 names go to the legacy weights format: test_legacy_weights.py)
    model = sequential_cnn(kk)
    with pytest.raises(ValueError, match="must end in '.weights.h5'"):
        model.save_weights(tmp_path / "model.npz")
    with pytest.raises(ValueError, match=r"invalid keyword arguments \['by_name'\]"):
        model.load_weights(tmp_path / "model.weights.h5", by_name=True)
    # a Keras 2 file renamed to .weights.h5 is recognized by its content
    with h5py.File(tmp_path / "renamed.weights.h5", "w") as h5_file:
        h5_file.attrs["layer_names"] = [b"dense"]
    with pytest.raises(ValueError, match="Keras 2 legacy HDF5 weights"):
        model.load_weights(tmp_path / "renamed.weights.h5")


def test_files_that_are_not_weights_files(tmp_path):
    model = sequential_cnn(kk)
    (tmp_path / "text.weights.h5").write_text("not hdf5")
    with pytest.raises(OSError, match="text.weights.h5 is not a readable HDF5 weights file"):
        model.load_weights(tmp_path / "text.weights.h5")
    with h5py.File(tmp_path / "other.weights.h5", "w") as h5_file:
        h5_file["data"] = np.zeros(3)
    with pytest.raises(ValueError, match="not a Keras weights file"):
        model.load_weights(tmp_path / "other.weights.h5")
    with pytest.raises(FileNotFoundError):
        model.load_weights(tmp_path / "missing.weights.h5")


def test_links_to_other_files_are_refused(tmp_path):
    model = kk.Sequential([kk.Input((5,)), kk.layers.Dense(3)])
    model.save_weights(tmp_path / "good.weights.h5")
    with h5py.File(tmp_path / "evil.weights.h5", "w") as h5_file:
        h5_file.create_group("vars").attrs["name"] = "sequential"
        h5_file["layers/dense"] = h5py.ExternalLink(str(tmp_path / "good.weights.h5"),
                                                    "layers/dense")
    with pytest.raises(ValueError, match="ExternalLink, which is not allowed"):
        model.load_weights(tmp_path / "evil.weights.h5")


def test_unbuilt_model_is_refused(tmp_path):
    class Net(kk.Model):
        def __init__(self):
            super().__init__()
            self.dense = kk.layers.Dense(2)

        def call(self, x):
            return self.dense(x)

    with pytest.raises(ValueError, match="has not been built yet"):
        Net().save_weights(tmp_path / "never_written.weights.h5")
    assert list(tmp_path.iterdir()) == []


def test_kiln_reads_the_weights_of_a_keras_model_file(tmp_path):
    keras = keras_oracle.real_keras()
    reference = functional_with_batch_norm(keras)
    randomize(reference, seed=5)
    reference.compile(optimizer="adam", loss="categorical_crossentropy")
    reference.save(tmp_path / "model.keras")
    model = functional_with_batch_norm(kk)
    model.load_weights(tmp_path / "model.keras")
    np.testing.assert_allclose(model.predict(inputs()), reference.predict(inputs(), verbose=0),
                               rtol=1e-4, atol=1e-5)
    (tmp_path / "broken.keras").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ValueError, match="broken.keras is not a Keras model file"):
        model.load_weights(tmp_path / "broken.keras")


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.9])
def test_truncated_file_is_refused_and_nothing_is_loaded(keep, tmp_path):
    source = sequential_cnn(kk)
    source.compile(optimizer=kk.optimizers.Adam(learning_rate=0.01),
                   loss="categorical_crossentropy")
    source.fit(inputs(), np.eye(4, dtype=np.float32)[[0, 1, 2, 3, 0, 1]], verbose=0)
    source.save_weights(tmp_path / "full.weights.h5")
    data = (tmp_path / "full.weights.h5").read_bytes()
    (tmp_path / "cut.weights.h5").write_bytes(data[:int(len(data) * keep)])
    target = sequential_cnn(kk)
    target.compile(optimizer=kk.optimizers.Adam(learning_rate=0.01),
                   loss="categorical_crossentropy")
    before = target.get_weights()
    with pytest.raises((OSError, ValueError), match="cut.weights.h5"):
        target.load_weights(tmp_path / "cut.weights.h5")
    for now, then in zip(target.get_weights(), before, strict=True):
        np.testing.assert_array_equal(now, then)
