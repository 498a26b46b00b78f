"""A Sequential model builds as soon as its input shape is known, as Keras 3's does.

Keras 3 rebuilds a Sequential model whenever a layer is added (or popped) and the stack starts
with an Input or a first layer given `input_shape=`: its layers then have their weights before
compile, so get_weights / set_weights / count_params / summary / saving work on them. Without
an input shape the model stays unbuilt until fit / predict / build(input_shape). The weights
drawn at build time are the ones compile and fit then use.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras checker
import keras_oracle  # noqa: E402  (sets KERAS_BACKEND before Keras is imported)

from kiln import keras as kk  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def stack_with_input_shape(K):
    model = K.Sequential()
    model.add(K.layers.Conv2D(4, 3, input_shape=(8, 8, 1), name="conv1"))
    model.add(K.layers.Flatten())
    model.add(K.layers.Dense(2, activation="softmax"))
    return model


def stack_with_input_first(K):
    return K.Sequential([K.Input((8, 8, 1)), K.layers.Conv2D(4, 3, name="conv1"),
                         K.layers.Flatten(), K.layers.Dense(2, activation="softmax")])


def both(build):
    keras = keras_oracle.real_keras()
    kk.backend.clear_session(free_memory=False)
    ours = build(kk)
    keras.backend.clear_session(free_memory=False)
    theirs = build(keras)
    return ours, theirs


@pytest.mark.parametrize("build", [stack_with_input_shape, stack_with_input_first])
def test_layers_have_their_weights_before_compile(build):
    ours, theirs = both(build)
    assert ours.built and theirs.built
    conv = ours.get_layer("conv1")
    assert [w.shape for w in conv.get_weights()] == [(3, 3, 1, 4), (4,)]
    assert conv.count_params() == theirs.get_layer("conv1").count_params() == 40
    keras_oracle.compare_structure(ours, theirs)
    # set_weights on a layer of the uncompiled model, and the model sees it
    kernel = np.arange(36, dtype=np.float32).reshape(3, 3, 1, 4) / 36
    conv.set_weights([kernel, np.ones(4, np.float32)])
    np.testing.assert_array_equal(ours.get_weights()[0], kernel)
    lines = []
    ours.summary(print_fn=lines.append)
    assert any("conv1 (Conv2D)" in line and "(None, 6, 6, 4)" in line for line in lines)
    assert any("Total params: 330" in line for line in lines)


def test_the_weights_drawn_at_build_are_the_ones_trained():
    """No re-initialisation at compile: the weights before compile train as Keras' do."""
    ours, theirs = both(stack_with_input_shape)
    before = ours.get_weights()
    theirs.set_weights(before)
    for model in (ours, theirs):
        model.compile(optimizer=model_optimizer(model), loss="categorical_crossentropy")
    for now, then in zip(ours.get_weights(), before, strict=True):
        np.testing.assert_array_equal(now, then)
    x = keras_oracle.random_inputs((8, 8, 1))
    y = keras_oracle.random_labels(len(x), 2)
    ours.fit(x, y, batch_size=len(x), epochs=1, shuffle=False, verbose=0)
    theirs.fit(x, y, batch_size=len(x), epochs=1, shuffle=False, verbose=0)
    keras_oracle.assert_weights_close(ours, theirs, "after one step from the built weights")


def model_optimizer(model):
    return (kk if isinstance(model, kk.Model) else keras_oracle.real_keras()).optimizers.SGD(
        learning_rate=0.1)


def test_saving_before_compile(tmp_path):
    model = stack_with_input_shape(kk)
    x = keras_oracle.random_inputs((8, 8, 1))
    expected = model.predict(x, verbose=0)
    model.save_weights(tmp_path / "model.weights.h5")
    model.save(tmp_path / "model.keras")
    model.save(tmp_path / "model.h5")
    again = stack_with_input_shape(kk)
    again.load_weights(tmp_path / "model.weights.h5")
    np.testing.assert_array_equal(again.predict(x, verbose=0), expected)
    for name in ("model.keras", "model.h5"):
        loaded = kk.models.load_model(tmp_path / name)
        np.testing.assert_array_equal(loaded.predict(x, verbose=0), expected)
    # and real Keras reads the weights kiln wrote before compile
    theirs = stack_with_input_shape(keras_oracle.real_keras())
    theirs.load_weights(tmp_path / "model.weights.h5")
    np.testing.assert_allclose(theirs.predict(x, verbose=0), expected, rtol=1e-4, atol=1e-6)


def test_without_an_input_shape_the_model_waits_for_data():
    ours, theirs = both(lambda K: K.Sequential([K.layers.Dense(4), K.layers.Dense(2)]))
    for model in (ours, theirs):
        assert not model.built
        assert not model.layers[0].built
        assert model.weights == [] and model.layers[0].get_weights() == []
    ours.build((None, 3))
    theirs.build((None, 3))
    keras_oracle.compare_structure(ours, theirs)
    unbuilt = kk.Sequential([kk.layers.Dense(4), kk.layers.Dense(2)])
    assert unbuilt.predict(np.zeros((2, 5), np.float32), verbose=0).shape == (2, 2)
    assert [w.shape for w in unbuilt.layers[0].get_weights()] == [(5, 4), (4,)]


def test_add_and_pop_rebuild():
    ours, theirs = both(stack_with_input_shape)
    for model, K in ((ours, kk), (theirs, keras_oracle.real_keras())):
        model.pop()
        model.add(K.layers.Dense(3, name="head"))
        assert model.built
        assert [w.shape for w in model.get_layer("head").get_weights()] == [(144, 3), (3,)]
    keras_oracle.compare_structure(ours, theirs)
    assert ours.predict(np.zeros((2, 8, 8, 1), np.float32), verbose=0).shape == (2, 3)


def test_build_with_another_input_shape_is_refused():
    model = stack_with_input_shape(kk)
    with pytest.raises(ValueError, match="input shape"):
        model.build((None, 9, 9, 1))
