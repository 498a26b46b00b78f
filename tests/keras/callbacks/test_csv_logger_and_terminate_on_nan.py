"""CSVLogger writes the same bytes as Keras for the same logs (append included);
TerminateOnNaN stops or raises at the first non-finite batch loss, in a real kiln fit too."""

import callback_drivers
import numpy as np
import pytest
from callback_drivers import FakeModel, drive_epochs

from kiln import keras as kk
from kiln.keras.callbacks import CSVLogger, TerminateOnNaN

RUN_1 = [{"loss": 0.5, "accuracy": 0.25}, {"loss": 0.25, "accuracy": np.float32(0.75)}]
RUN_2 = [{"loss": 0.125, "accuracy": 0.875, "val_loss": 0.3}]
RUN_3 = [{"loss": 1.0, "val_loss": 2.0, "items": [1, 2], "note": "text",
          "zero_dim": np.array(3.5)}]


@pytest.mark.parametrize("separator", [",", ";"])
def test_csv_logger_writes_what_keras_writes(separator, tmp_path):
    keras = callback_drivers.keras_oracle.real_keras()
    contents = []
    for module in (kk, keras):
        path = tmp_path / f"{module.__name__}.csv"
        for runs, append in ((RUN_1, False), (RUN_2, True), (RUN_3, True)):
            logger = module.callbacks.CSVLogger(str(path), separator=separator, append=append)
            drive_epochs(logger, FakeModel(), runs)
        contents.append(path.read_bytes())
    assert contents[0] == contents[1]
    assert contents[0].startswith(f"epoch{separator}accuracy{separator}loss{separator}"
                                  f"val_accuracy{separator}val_loss\r\n".encode())


def test_csv_logger_without_append_starts_over(tmp_path):
    path = tmp_path / "log.csv"
    drive_epochs(CSVLogger(path), FakeModel(), RUN_1)
    drive_epochs(CSVLogger(path), FakeModel(), RUN_2)
    assert path.read_text().splitlines() == ["epoch,accuracy,loss,val_loss", "0,0.875,0.125,0.3"]


def test_csv_logger_in_a_real_fit(tmp_path):
    from model_helpers import compiled_cnn, quadrant_data

    x, y = quadrant_data(16)
    model = compiled_cnn()
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0, validation_split=0.25,
                        callbacks=[CSVLogger(tmp_path / "fit.csv")])
    lines = (tmp_path / "fit.csv").read_text().splitlines()
    assert lines[0] == "epoch,accuracy,loss,val_accuracy,val_loss"
    for epoch, line in enumerate(lines[1:]):
        values = [float(v) for v in line.split(",")]
        assert values[0] == epoch
        assert values[2] == history.history["loss"][epoch]
        assert values[4] == history.history["val_loss"][epoch]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -np.inf])
def test_terminate_on_nan_as_keras(bad, capsys):
    keras = callback_drivers.keras_oracle.real_keras()
    outcomes = []
    for module in (kk, keras):
        model = FakeModel()
        callback = module.callbacks.TerminateOnNaN()
        callback.set_model(model)
        callback.on_train_batch_end(0, {"loss": 1.0})
        stopped_early = model.stop_training
        callback.on_train_batch_end(1, {"loss": bad})
        outcomes.append((stopped_early, model.stop_training, capsys.readouterr().out))
        with pytest.raises(RuntimeError, match="NaN or Inf loss encountered at batch 3"):
            module.callbacks.TerminateOnNaN(raise_error=True).on_train_batch_end(3, {"loss": bad})
    assert outcomes[0] == outcomes[1] == (False, True,
                                          "Batch 1: Invalid loss, terminating training\n")


def nan_fit(callback):
    from model_helpers import quadrant_data, small_cnn

    x, y = quadrant_data(32)
    model = small_cnn()
    model.compile(optimizer=kk.optimizers.SGD(learning_rate=0.1),
                  loss="categorical_crossentropy")
    weights = model.get_weights()
    weights[-1][:] = np.nan  # a NaN bias: every logit, hence every loss, is NaN
    model.set_weights(weights)
    return model.fit(x, y, batch_size=4, epochs=3, verbose=0, shuffle=False,
                     callbacks=[callback])


def test_terminate_on_nan_in_a_real_fit(capsys):
    history = nan_fit(TerminateOnNaN())
    assert "Invalid loss, terminating training" in capsys.readouterr().out
    assert len(history.epoch) == 1  # no epoch starts after the bad batch
    with pytest.raises(RuntimeError, match="NaN or Inf loss encountered at batch 0"):
        nan_fit(TerminateOnNaN(raise_error=True))


def float32_overflow_fit(K):
    """MSE of predictions 1e20: 1e40 per sample, finite in float64, inf in float32. The
    gradients are still finite, so the first step leaves finite weights; the second would
    overflow them."""
    inputs = K.Input((1,))
    model = K.Model(inputs, K.layers.Dense(1)(inputs))
    model.compile(optimizer=K.optimizers.SGD(learning_rate=0.01), loss="mse")
    model.set_weights([np.full((1, 1), 1e10, np.float32), np.zeros(1, np.float32)])
    losses = []
    record = K.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: losses.append(logs["loss"]))
    model.fit(np.full((32, 1), 1e10, np.float32), np.zeros((32, 1), np.float32),
              batch_size=8, epochs=2, shuffle=False, verbose=0,
              callbacks=[record, K.callbacks.TerminateOnNaN()])
    return losses, model.get_weights()


def test_terminate_on_nan_sees_a_loss_beyond_float32_as_keras(capsys):
    keras = callback_drivers.keras_oracle.real_keras()
    (losses, weights), (keras_losses, keras_weights) = (float32_overflow_fit(kk),
                                                        float32_overflow_fit(keras))
    assert losses == keras_losses == [np.inf]  # stopped after the first batch
    assert capsys.readouterr().out.count("Batch 0: Invalid loss, terminating training") == 2
    for got, expected in zip(weights, keras_weights, strict=True):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, expected, rtol=1e-6)
