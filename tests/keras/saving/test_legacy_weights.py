"""Keras 2 `.h5` weights files (kiln.keras.saving.legacy_weights): written as Keras 2 wrote
them, read by real Keras 3's `load_weights` (which still reads Keras 2 files), Keras 2 files
read by layer order or by name, with skip_mismatch; the weights of a Keras 2 model file too."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper
sys.path.insert(0, str(Path(__file__).parent))

import h5py  # noqa: E402
import keras_oracle  # noqa: E402
import models_for_saving  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402
from kiln.keras.saving.legacy_weights import (  # noqa: E402
    load_legacy_weights,
    save_legacy_weights,
)

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


@pytest.mark.parametrize("name", ["sequential_cnn", "resnet_block"])
def test_keras_reads_kiln_weights_file(tmp_path, name):
    keras = keras_oracle.real_keras()
    ours = models_for_saving.BUILDERS[name](kk)
    save_legacy_weights(ours, tmp_path / "w.h5")
    with h5py.File(tmp_path / "w.h5") as h5:
        assert [getattr(n, "decode", lambda: n)() for n in h5.attrs["layer_names"]] == [
            layer.name for layer in ours.layers]
    theirs = models_for_saving.BUILDERS[name](keras)
    theirs.load_weights(tmp_path / "w.h5")
    x, _ = models_for_saving.data()
    np.testing.assert_allclose(theirs.predict(x, verbose=0), ours.predict(x, verbose=0),
                               rtol=keras_oracle.RTOL, atol=keras_oracle.ATOL)


def test_by_order_by_name_and_skip_mismatch(tmp_path):
    source = models_for_saving.sequential_cnn(kk)
    save_legacy_weights(source, tmp_path / "w.h5")
    # by order: other names, same architecture
    target = models_for_saving.sequential_cnn(kk)
    load_legacy_weights(target, tmp_path / "w.h5")
    for a, b in zip(target.get_weights(), source.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    # by name: only the layers whose names are in the file
    L = kk.layers
    first = source.layers[0].name
    partial = kk.Sequential([kk.Input((8, 8, 3)), L.Conv2D(4, 3, padding="same", name=first),
                             L.Flatten(), L.Dense(2, name="new_head")])
    partial.build()
    head_before = partial.layers[-1].get_weights()
    load_legacy_weights(partial, tmp_path / "w.h5", by_name=True)
    np.testing.assert_array_equal(partial.layers[0].get_weights()[0],
                                  source.layers[0].get_weights()[0])
    np.testing.assert_array_equal(partial.layers[-1].get_weights()[0], head_before[0])
    # a shape mismatch: an error naming the weight, or skipped with a warning
    wrong = kk.Sequential([kk.Input((8, 8, 3)), L.Conv2D(5, 3, name=first)])
    with pytest.raises(ValueError, match=rf"{first}/kernel:0.*\(3, 3, 3, 4\)"):
        load_legacy_weights(wrong, tmp_path / "w.h5", by_name=True)
    with pytest.warns(UserWarning, match="skipping"):
        load_legacy_weights(wrong, tmp_path / "w.h5", by_name=True, skip_mismatch=True)
    with pytest.raises(ValueError, match="holds weights for 4 layers"):
        load_legacy_weights(wrong, tmp_path / "w.h5", skip_mismatch=True)  # Keras 3 too
    with pytest.raises(ValueError, match="holds weights for 4 layers"):
        load_legacy_weights(wrong, tmp_path / "w.h5")


def test_weights_of_a_keras2_model_file(tmp_path):
    source = models_for_saving.resnet_block(kk)
    source.save(tmp_path / "m.h5")
    target = models_for_saving.resnet_block(kk)
    load_legacy_weights(target, tmp_path / "m.h5")
    for a, b in zip(target.get_weights(), source.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    with h5py.File(tmp_path / "other.h5", "w") as h5:
        h5["x"] = np.zeros(2)
    with pytest.raises(ValueError, match="other.h5.*not a Keras 2 weights file"):
        load_legacy_weights(target, tmp_path / "other.h5")


def test_model_save_weights_refuses_h5_names_as_keras3(tmp_path):
    keras = keras_oracle.real_keras()
    ours = models_for_saving.sequential_cnn(kk)
    theirs = models_for_saving.sequential_cnn(keras)
    with pytest.raises(ValueError, match="weights.h5"):
        theirs.save_weights(tmp_path / "w.h5")
    for name in ("w.h5", "w.hdf5", "w.npz"):
        with pytest.raises(ValueError, match=r"save_weights: .*'\.weights\.h5'") as error:
            ours.save_weights(tmp_path / name)
        assert name in str(error.value)
        assert not (tmp_path / name).exists()


def keras_h5_with_a_changed_head(tmp_path):
    """A Keras 3 .h5 model file of sequential_cnn, and kiln's model with the last Dense
    (named 'head') widened from 3 to 4 units and the first Dense renamed."""
    keras = keras_oracle.real_keras()
    theirs = models_for_saving.sequential_cnn(keras)
    theirs.layers[-2].name = "head"  # Keras names the layer before the model is built
    theirs.save(tmp_path / "theirs.h5")
    L = kk.layers
    ours = kk.Sequential([
        kk.Input((8, 8, 3)),
        L.Conv2D(4, 3, padding="same", activation="relu", name=theirs.layers[0].name),
        L.Conv2D(4, 3, activation="relu", name=theirs.layers[1].name),
        L.MaxPooling2D(), L.Flatten(), L.Dense(8, activation="relu", name="renamed"),
        L.Dense(4, name="head"), L.Activation("softmax")])
    ours.build()
    return theirs, ours


def test_keras_h5_by_name_with_skip_mismatch(tmp_path):
    theirs, ours = keras_h5_with_a_changed_head(tmp_path)
    before = ours.get_weights()
    with pytest.raises(ValueError, match=r"'head/.*kernel' has shape \(8, 3\)"):
        ours.load_weights(tmp_path / "theirs.h5", by_name=True)
    for a, b in zip(ours.get_weights(), before, strict=True):
        np.testing.assert_array_equal(a, b)  # nothing assigned
    with pytest.warns(UserWarning, match="head"):
        ours.load_weights(tmp_path / "theirs.h5", by_name=True, skip_mismatch=True)
    got, kept, want = ours.get_weights(), before, theirs.get_weights()
    for index in (0, 1, 2, 3):  # the two convolutions: by name, Keras's values
        np.testing.assert_array_equal(got[index], np.asarray(want[index]))
    for index in (4, 5, 6, 7):  # 'renamed' is not in the file, 'head' has other shapes
        np.testing.assert_array_equal(got[index], kept[index])
    # what Keras 3 itself loads into the same changed model
    keras = keras_oracle.real_keras()
    oracle = keras.Sequential([
        keras.Input((8, 8, 3)),
        keras.layers.Conv2D(4, 3, padding="same", name=theirs.layers[0].name),
        keras.layers.Conv2D(4, 3, name=theirs.layers[1].name), keras.layers.MaxPooling2D(),
        keras.layers.Flatten(), keras.layers.Dense(8, name="renamed"),
        keras.layers.Dense(4, name="head")])
    oracle_before = [np.asarray(w) for w in oracle.get_weights()]
    with pytest.warns(UserWarning):
        oracle.load_weights(tmp_path / "theirs.h5", by_name=True, skip_mismatch=True)
    for index, value in enumerate(oracle.get_weights()):
        expected = np.asarray(want[index]) if index < 4 else oracle_before[index]
        np.testing.assert_array_equal(np.asarray(value), expected)


def test_keras_h5_by_order_with_skip_mismatch_loads_matching_shapes(tmp_path):
    """By order (Keras 3 allows skip_mismatch there): 'renamed' gets the first Dense's
    weights; 'head' keeps its kernel and bias, whose shapes differ."""
    theirs, ours = keras_h5_with_a_changed_head(tmp_path)
    kept = ours.get_weights()
    with pytest.warns(UserWarning, match="head"):
        ours.load_weights(tmp_path / "theirs.h5", skip_mismatch=True)
    got, want = ours.get_weights(), theirs.get_weights()
    for index in range(6):
        np.testing.assert_array_equal(got[index], np.asarray(want[index]))
    for index in (6, 7):
        np.testing.assert_array_equal(got[index], kept[index])
    x, _ = models_for_saving.data()
    assert ours.predict(x, verbose=0).shape == (16, 4)


def test_model_load_weights_takes_keras2_h5_names(tmp_path):
    """load_weights of an .h5 name reads Keras 2's layout, by order or by_name, as Keras 3's
    load_weights does; other keyword arguments are refused."""
    kk.backend.clear_session()  # the same automatic layer names for `again` below (by_name)
    ours = models_for_saving.BUILDERS["sequential_cnn"](kk)
    save_legacy_weights(ours, tmp_path / "w.h5")
    x, _ = models_for_saving.data()
    kk.backend.clear_session()
    again = models_for_saving.BUILDERS["sequential_cnn"](kk)
    again.load_weights(tmp_path / "w.h5", by_name=True)
    np.testing.assert_allclose(again.predict(x, verbose=0), ours.predict(x, verbose=0),
                               rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="invalid keyword arguments"):
        again.load_weights(tmp_path / "w.h5", by_layer=True)
