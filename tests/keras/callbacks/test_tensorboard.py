"""TensorBoard writes event files TensorBoard's own reader (EventAccumulator) reads back: the
epoch scalars of a real kiln fit in train/ and validation/, batch scalars at Keras's steps,
the learning rate, weight histograms under the tags real Keras gives its weights, and the
model JSON for the graph plugin."""

import json
import sys

import callback_drivers
import numpy as np
import pytest
from callback_drivers import FakeModel, drive_epochs

# the test extra installs tensorboard: a missing reader fails here rather than skipping
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.util import tensor_util

from kiln import keras as kk
from kiln.keras import backend, initializers
from kiln.keras.callbacks import TensorBoard


def read_run(directory):
    """{tag: [(step, value array), ...]} of every tensor summary in a run directory."""
    accumulator = EventAccumulator(str(directory), size_guidance={"tensors": 0})
    accumulator.Reload()
    return {tag: [(event.step, tensor_util.make_ndarray(event.tensor_proto))
                  for event in accumulator.Tensors(tag)]
            for tag in accumulator.Tags()["tensors"]}


def scalars(run, tag):
    return [(step, float(value)) for step, value in run[tag]]


def build(K):
    # Functional, named layers: Keras's weight paths are then "hidden/kernel" (a Sequential's
    # would carry a "sequential/" scope kiln's paths do not have, as keras_oracle notes)
    inputs = K.Input((4,))
    hidden = K.layers.Dense(5, activation="relu", name="hidden")(inputs)
    model = K.Model(inputs, K.layers.Dense(3, activation="softmax", name="probs")(hidden))
    model.compile(K.optimizers.SGD(learning_rate=0.05), "categorical_crossentropy",
                  metrics=["accuracy"])
    return model


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """3 epochs on 20 samples (3 training batches of 5, 1 validation batch), all options on;
    one fit for the module, in the settings conftest's kiln_keras_env gives a test."""
    tmp_path = tmp_path_factory.mktemp("tensorboard")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
        backend._reset_for_tests()
        initializers.set_random_seed(1234)
        try:
            yield fit_with_tensorboard(tmp_path)
        finally:
            backend._reset_for_tests()


def fit_with_tensorboard(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.random((20, 4), dtype=np.float32)
    y = kk.utils.to_categorical(rng.integers(0, 3, 20), 3)
    model = build(kk)
    callback = TensorBoard(tmp_path / "logs", update_freq=2, histogram_freq=2,
                           write_images=True, write_steps_per_second=True)
    history = model.fit(x, y, batch_size=5, epochs=3, validation_split=0.25, verbose=0,
                        callbacks=[callback])
    return model, history.history, tmp_path / "logs"


def test_epoch_scalars_match_the_history(fitted):
    model, history, logs = fitted
    train, validation = read_run(logs / "train"), read_run(logs / "validation")
    assert sorted(p.name for p in logs.iterdir()) == ["train", "validation"]
    for name in ("loss", "accuracy"):
        np.testing.assert_allclose(scalars(train, f"epoch_{name}"),
                                   list(enumerate(history[name])), rtol=1e-6)
        np.testing.assert_allclose(scalars(validation, f"epoch_{name}"),
                                   list(enumerate(history[f"val_{name}"])), rtol=1e-6)
    assert scalars(train, "epoch_learning_rate") == [(0, pytest.approx(0.05)),
                                                     (1, pytest.approx(0.05)),
                                                     (2, pytest.approx(0.05))]
    assert not any(tag.startswith("epoch_val_") for tag in train | validation)
    # after each validation: the val metrics at the optimizer's iterations (3 steps an epoch)
    np.testing.assert_allclose(scalars(validation, "evaluation_loss_vs_iterations"),
                               [(3, history["val_loss"][0]), (6, history["val_loss"][1]),
                                (9, history["val_loss"][2])], rtol=1e-6)


def test_batch_scalars_every_update_freq_batches(fitted):
    _, history, logs = fitted
    train = read_run(logs / "train")
    # 9 training batches over the fit, counted from 1: written at 2, 4, 6, 8
    assert [step for step, _ in train["batch_loss"]] == [2, 4, 6, 8]
    assert [step for step, _ in train["batch_accuracy"]] == [2, 4, 6, 8]
    assert [step for step, _ in train["batch_steps_per_second"]] == [2, 4, 6, 8]
    assert all(rate > 0 for _, rate in scalars(train, "epoch_steps_per_second"))
    assert len(train["epoch_steps_per_second"]) == 3
    # batch 6 is the last of epoch 2: its running mean is that epoch's loss
    assert dict(scalars(train, "batch_loss"))[6] == pytest.approx(history["loss"][1], rel=1e-6)


def test_weight_histograms_named_as_keras_names_them(fitted):
    model, _, logs = fitted
    train = read_run(logs / "train")
    keras = callback_drivers.keras_oracle.real_keras()
    keras_model = build(keras)
    expected = [f"{w.path.replace(':', '_')}/histogram" for layer in keras_model.layers
                for w in layer.weights]
    assert sorted(tag for tag in train if tag.endswith("/histogram")) == sorted(expected)
    # histogram_freq=2 over 3 epochs: epochs 0 and 2; the last one holds the final weights
    kernel = model.layers[1].weights[0]  # layers[0] is the InputLayer
    (first, _), (last, buckets) = train[f"{kernel.path}/histogram"]
    assert (first, last) == (0, 2)
    values = np.asarray(kernel)
    assert buckets.shape == (30, 3) and buckets[:, 2].sum() == values.size
    assert buckets[0, 0] == pytest.approx(values.min()) and buckets[-1, 1] == pytest.approx(
        values.max())
    # write_images: the (5, 4) kernel laid wide as one 1-channel PNG of width 5, height 4
    image = train[f"{kernel.path}/image"][0][1]
    assert image[0] == b"5" and image[1] == b"4" and image[2].startswith(b"\x89PNG")


def test_conv_kernel_images_as_keras_shapes_them(tmp_path):
    from kiln.keras.callbacks.summary_writer import SummaryWriter
    from kiln.keras.callbacks.tensorboard import _weight_as_image

    kernel = np.linspace(-1, 2, 3 * 3 * 1 * 8).reshape(3, 3, 1, 8)  # channels_last, 8 filters
    images = _weight_as_image(kernel)
    assert images.shape == (8, 3, 3, 1)
    np.testing.assert_array_equal(images[5, :, :, 0], kernel[:, :, 0, 5])
    assert _weight_as_image(np.zeros((3, 3, 2, 8))) is None  # Keras draws no 4D picture
    writer = SummaryWriter(tmp_path)
    writer.image("conv/kernel/image", images, 0)
    writer.close()
    (_, written), = read_run(tmp_path)["conv/kernel/image"]
    assert len(written) == 2 + 3  # width, height, then tf.summary.image's max_outputs=3 PNGs


def test_write_graph_writes_the_model_json(fitted):
    model, _, logs = fitted
    accumulator = EventAccumulator(str(logs / "train"), size_guidance={"tensors": 0})
    accumulator.Reload()
    (event,) = accumulator.Tensors("keras")
    assert accumulator.SummaryMetadata("keras").plugin_data.plugin_name == "graph_keras_model"
    config = json.loads(tensor_util.make_ndarray(event.tensor_proto).item())
    assert config["class_name"] == "Functional"
    assert [layer["config"]["name"] for layer in config["config"]["layers"]][-2:] == [
        "hidden", "probs"]


def test_epoch_only_and_no_graph_writes_no_batch_scalars(tmp_path):
    callback = TensorBoard(tmp_path, write_graph=False)
    drive_epochs(callback, FakeModel(learning_rate=0.5),
                 [{"loss": 1.5}, {"loss": 0.5, "val_loss": 0.75}], batches=3)
    callback.on_train_end()
    train, validation = read_run(tmp_path / "train"), read_run(tmp_path / "validation")
    assert sorted(train) == ["epoch_learning_rate", "epoch_loss"]
    assert scalars(train, "epoch_loss") == [(0, 1.5), (1, 0.5)]
    assert scalars(validation, "epoch_loss") == [(1, 0.75)]


def test_profile_batch_is_accepted_and_bad_arguments_are_named(tmp_path):
    assert TensorBoard(tmp_path, profile_batch=(2, 4)).profile_batch == (2, 4)
    assert TensorBoard(tmp_path, update_freq="batch").update_freq == 1
    with pytest.raises(ValueError, match="TensorBoard: argument update_freq must be"):
        TensorBoard(tmp_path, update_freq="step")
    with pytest.raises(ValueError, match="argument histogram_freq must be a non-negative"):
        TensorBoard(tmp_path, histogram_freq=-1)


def test_keras_2_arguments_are_ignored_with_a_warning(tmp_path):
    with pytest.warns(UserWarning) as warned:
        TensorBoard(tmp_path, histogram_freq=1, batch_size=32, write_grads=True)
    assert [str(w.message) for w in warned] == [
        "TensorBoard: argument batch_size (Keras 2) is ignored",
        "TensorBoard: argument write_grads (Keras 2) is ignored"]
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['log_freq'\]"):
        TensorBoard(tmp_path, log_freq=2)


def test_missing_tensorboard_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard.summary.writer.event_file_writer", None)
    with pytest.raises(ImportError, match=r"pip install 'kiln\[tensorboard\]'"):
        TensorBoard(tmp_path)
