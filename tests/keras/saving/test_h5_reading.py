"""Hostile HDF5 content in every file kiln reads weights from (Keras 3 `.weights.h5`, the weights
inside a `.keras` zip, Keras 2 `.h5` weights and model files): a soft or external link anywhere
on a weight's path is refused before it is followed, whether or not what it points to exists,
and a string or compound array of the right shape is refused before any weight is assigned, so
a refused file leaves the model exactly as it was (kiln.keras.saving.h5_reading)."""

import io
import zipfile

import h5py
import numpy as np
import pytest

from kiln import keras as kk
from kiln.keras.saving.legacy_weights import save_legacy_weights

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def two_dense():
    model = kk.Sequential([kk.Input((4,)), kk.layers.Dense(3, name="first"),
                           kk.layers.Dense(2, name="last")])
    model.build()
    return model


def saved(tmp_path, kind, name="model"):
    """A file of `kind` holding two_dense()'s weights, all set to 5."""
    source = two_dense()
    source.set_weights([np.full(w.shape, 5.0, np.float32) for w in source.weights])
    if kind == "weights.h5":
        path = tmp_path / f"{name}.weights.h5"
        source.save_weights(path)
    elif kind == "keras2 weights":
        path = tmp_path / f"{name}.h5"
        save_legacy_weights(source, path)
    else:
        path = tmp_path / f"{name}.{'keras' if kind == 'keras' else 'h5'}"
        source.save(path)
    return path


# where the last layer's kernel is, in each kind of file (Keras 2 names are paths)
KERNEL = {"weights.h5": ("layers/dense_1/vars", "0"),
          "keras": ("layers/dense_1/vars", "0"),
          "keras2 weights": ("last", "last/kernel:0"),
          "keras2 model": ("model_weights/last", "last/kernel:0")}
KINDS = list(KERNEL)


def edit_h5(path, kind, change):
    """Calls change(h5_file) on the file's HDF5 content (the zip member for a .keras file)."""
    if kind != "keras":
        with h5py.File(path, "r+") as h5_file:
            change(h5_file)
        return
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    buffer = io.BytesIO(members["model.weights.h5"])
    with h5py.File(buffer, "r+") as h5_file:
        change(h5_file)
    members["model.weights.h5"] = buffer.getvalue()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("target_exists", [True, False])
def test_an_external_link_on_a_weights_path_is_refused_unfollowed(tmp_path, kind, target_exists):
    path = saved(tmp_path, kind)
    secret = tmp_path / "secret.h5"
    if target_exists:
        with h5py.File(secret, "w") as h5_file:
            h5_file["kernel:0"] = np.full((3, 2), 7.0, np.float32)
            h5_file["0"] = np.full((3, 2), 7.0, np.float32)
    group, key = KERNEL[kind]
    folder, _, name = key.rpartition("/")

    def link_out(h5_file):
        parent = h5_file[group]
        if folder:  # Keras 2: the "last" of "last/kernel:0" leads to another file
            del parent[folder]
            parent[folder] = h5py.ExternalLink(str(secret), "/")
        else:  # Keras 3: the vars group itself
            del h5_file[group]
            h5_file[group] = h5py.ExternalLink(str(secret), "/")

    edit_h5(path, kind, link_out)
    model = two_dense()
    before = model.get_weights()
    # the same refusal whether the other file exists or not: nothing about it leaks
    with pytest.raises(ValueError, match=rf"{path.name}.*'/{group}.*' is an HDF5 ExternalLink"):
        model.load_weights(path)
    for now, then in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(now, then)
    if kind in ("keras", "keras2 model"):
        with pytest.raises(ValueError, match="is an HDF5 ExternalLink"):
            kk.models.load_model(path)


@pytest.mark.parametrize("kind", ["weights.h5", "keras2 model"])
def test_a_link_at_the_top_of_the_file_is_refused_unfollowed(tmp_path, kind):
    path = saved(tmp_path, kind)
    top = "layers" if kind == "weights.h5" else "model_weights"

    def link_out(h5_file):
        del h5_file[top]
        h5_file[top] = h5py.ExternalLink(str(tmp_path / "missing.h5"), "/")

    edit_h5(path, kind, link_out)
    with pytest.raises(ValueError, match=rf"'/{top}' is an HDF5 ExternalLink"):
        two_dense().load_weights(path)


@pytest.mark.parametrize("kind", KINDS)
def test_a_soft_link_out_of_the_layers_tree_is_refused(tmp_path, kind):
    path = saved(tmp_path, kind)
    group, key = KERNEL[kind]

    def soft_link(h5_file):
        h5_file["elsewhere"] = np.full((3, 2), 7.0, np.float32)
        del h5_file[group][key]
        h5_file[group][key] = h5py.SoftLink("/elsewhere")

    edit_h5(path, kind, soft_link)
    model = two_dense()
    before = model.get_weights()
    with pytest.raises(ValueError, match=rf"{path.name}.*is an HDF5 SoftLink"):
        model.load_weights(path)
    for now, then in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(now, then)


BAD_ARRAYS = {
    "strings": lambda: np.full((3, 2), b"1.0"),  # np.asarray(..., float32) would accept these
    "compound": lambda: np.zeros((3, 2), dtype=[("a", "f4"), ("b", "i4")]),
    "variable-length strings": lambda: np.array([["x"] * 2] * 3, dtype=h5py.string_dtype()),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bad", list(BAD_ARRAYS))
def test_a_non_numeric_weight_of_the_right_shape_is_refused_before_any_is_assigned(
        tmp_path, kind, bad):
    path = saved(tmp_path, kind)
    group, key = KERNEL[kind]

    def replace_kernel(h5_file):
        del h5_file[group][key]
        h5_file[group].create_dataset(key, data=BAD_ARRAYS[bad]())

    edit_h5(path, kind, replace_kernel)
    model = two_dense()
    before = model.get_weights()
    # the last layer's kernel is wrong; the first layer (read and checked first) must not load
    with pytest.raises(ValueError, match=rf"{path.name}.*'last'.*kernel.*expected numbers"):
        model.load_weights(path)
    for now, then in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(now, then)
    if kind in ("keras", "keras2 model"):
        with pytest.raises(ValueError, match="expected numbers"):
            kk.models.load_model(path)


def test_numeric_weights_of_other_dtypes_still_load(tmp_path):
    path = saved(tmp_path, "keras2 weights")

    def as_float64_and_int(h5_file):
        del h5_file["last/last/kernel:0"]
        h5_file["last/last/kernel:0"] = np.full((3, 2), 2.0)
        del h5_file["last/last/bias:0"]
        h5_file["last/last/bias:0"] = np.full((2,), 3, np.int64)

    edit_h5(path, "keras2 weights", as_float64_and_int)
    model = two_dense()
    model.load_weights(path)
    np.testing.assert_array_equal(model.layers[1].get_weights()[0], 2.0)
    np.testing.assert_array_equal(model.layers[1].get_weights()[1], 3.0)
    np.testing.assert_array_equal(model.layers[0].get_weights()[0], 5.0)


def test_a_weight_name_outside_the_layer_group_is_refused(tmp_path):
    path = saved(tmp_path, "keras2 weights")

    def absolute_name(h5_file):
        h5_file["last"].attrs["weight_names"] = [b"/first/first/kernel:0", b"last/bias:0"]

    edit_h5(path, "keras2 weights", absolute_name)
    with pytest.raises(ValueError, match=r"model.h5: invalid group path"):
        two_dense().load_weights(path)
