"""Monitor aliasing (acc / accuracy, lr / learning_rate), the direction of "auto", the
missing-monitor warning, and EarlyStopping decisions against real Keras on the same logs."""

import warnings

import callback_drivers
import numpy as np
import pytest
from callback_drivers import FakeModel, drive_epochs

from kiln import keras as kk
from kiln.keras.callbacks import EarlyStopping, ModelCheckpoint, ReduceLROnPlateau
from kiln.keras.callbacks.monitor_callback import alias, known_direction


def test_aliases_cover_both_keras_spellings():
    assert alias("val_acc") == "val_accuracy"
    assert alias("val_accuracy") == "val_acc"
    assert alias("acc") == "accuracy" and alias("accuracy") == "acc"
    assert alias("lr") == "learning_rate" and alias("learning_rate") == "lr"
    assert alias("val_loss") is None and alias("val_top_k_categorical_accuracy") is None


@pytest.mark.parametrize("monitor, logged", [("val_acc", "val_accuracy"),
                                             ("val_accuracy", "val_acc"),
                                             ("acc", "accuracy")])
def test_early_stopping_finds_the_other_spelling(monitor, logged):
    callback = EarlyStopping(monitor=monitor, patience=1)
    model = FakeModel()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # found: no "not available" warning
        drive_epochs(callback, model, [{logged: v} for v in (0.5, 0.7, 0.6, 0.65, 0.9)])
    assert callback.best == 0.7
    assert callback.stopped_epoch == 2


def test_missing_monitor_warns_once_per_fit_and_names_what_is_available():
    callback = ReduceLROnPlateau(monitor="val_f1", mode="max", patience=1)
    model = FakeModel()
    with pytest.warns(UserWarning) as caught:
        drive_epochs(callback, model, [{"loss": 1.0, "val_loss": 2.0}] * 3)
    messages = [str(w.message) for w in caught]
    assert messages == ["Learning rate reduction is conditioned on metric `val_f1` which is not "
                        "available. Available metrics are: loss,val_loss,learning_rate."]
    assert model.optimizer.learning_rate == 0.1


def test_auto_mode_directions_and_unknown_metric_error():
    assert known_direction("loss") == "min" and known_direction("dense_1_loss") == "min"
    assert known_direction("accuracy") == "max" and known_direction("acc") == "max"
    assert known_direction("sparse_top_k_categorical_accuracy") == "max"
    assert known_direction("auc") == "max" and known_direction("precision") == "max"
    assert known_direction("mean_absolute_error") == "min" and known_direction("mse") == "min"
    callback = EarlyStopping(monitor="val_my_score")
    with pytest.raises(ValueError, match="monitor=val_my_score, but Keras isn't able to "
                                         "automatically determine"):
        drive_epochs(callback, FakeModel(), [{"val_my_score": 1.0}])
    # a metric object that states its direction decides, as in Keras 3
    class Score:
        name, _direction = "my_score", "up"

    model = FakeModel()
    model.metrics = [Score()]
    callback = EarlyStopping(monitor="val_my_score", patience=1)
    drive_epochs(callback, model, [{"val_my_score": v} for v in (1.0, 2.0, 1.5, 1.7)])
    assert callback.best == 2.0 and callback.stopped_epoch == 2


# (values, arguments) sequences chosen to exercise min_delta, baseline, patience and
# start_from_epoch
EARLY_STOPPING_CASES = [
    ([1.0, 0.95, 0.5, 0.49, 0.48, 0.47], dict(min_delta=0.02, patience=1)),
    ([0.9, 0.95, 0.97, 0.3, 0.2], dict(patience=2, baseline=0.5)),
    ([3.0, 2.0, 2.5, 2.6, 1.0, 1.5], dict(patience=2, restore_best_weights=True)),
    ([1.0, 2.0, 3.0, 0.5, 0.6, 0.7, 0.8], dict(patience=1, start_from_epoch=2,
                                               restore_best_weights=True)),
    ([0.1, 0.2, 0.3, 0.25, 0.2], dict(mode="max", patience=1, min_delta=0.05)),
]


@pytest.mark.parametrize("values, arguments", EARLY_STOPPING_CASES)
def test_early_stopping_decides_as_keras(values, arguments):
    keras = callback_drivers.keras_oracle.real_keras()
    outcomes = []
    for module in (kk, keras):
        callback = module.callbacks.EarlyStopping(monitor="val_loss", **arguments)
        model = FakeModel()
        epochs = drive_epochs(callback, model, [{"val_loss": v} for v in values])
        outcomes.append((len(epochs), callback.stopped_epoch, callback.best,
                         callback.best_epoch, callback.wait, model.weights_value))
    assert outcomes[0] == outcomes[1]


def test_model_checkpoint_monitor_alias_in_a_real_fit(tmp_path):
    """A Keras 2 script monitors val_acc while the model logs val_accuracy (and back)."""
    from model_helpers import compiled_cnn, quadrant_data

    x, y = quadrant_data(32)
    model = compiled_cnn()
    checkpoint = ModelCheckpoint(str(tmp_path / "best-{epoch:02d}-{val_acc:.3f}.weights.h5"),
                                 monitor="val_acc", save_best_only=True, save_weights_only=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        history = model.fit(x, y, batch_size=8, epochs=3, validation_split=0.25, verbose=0,
                            shuffle=False, callbacks=[checkpoint])
    accuracies = history.history["val_accuracy"]
    best = [i for i, a in enumerate(accuracies) if a > max(accuracies[:i], default=-np.inf)]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"best-{i + 1:02d}-{accuracies[i]:.3f}.weights.h5" for i in best]


def test_early_stopping_in_a_real_fit_restores_the_best_epochs_weights():
    from model_helpers import compiled_cnn, quadrant_data

    x, y = quadrant_data(32)
    model = compiled_cnn()
    per_epoch = []
    record = kk.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: per_epoch.append(model.get_weights()))
    # min_delta 1: nothing after the first monitored epoch improves, so training stops
    # `patience` epochs after it and the weights of epoch 1 (start_from_epoch) come back
    stopping = EarlyStopping(monitor="val_acc", min_delta=1.0, patience=2, start_from_epoch=1,
                             restore_best_weights=True)
    history = model.fit(x, y, batch_size=8, epochs=10, validation_split=0.25, verbose=0,
                        shuffle=False, callbacks=[record, stopping])
    assert history.epoch == [0, 1, 2, 3]
    assert stopping.stopped_epoch == 3 and stopping.best_epoch == 1
    assert stopping.best == history.history["val_accuracy"][1]
    for value, best in zip(model.get_weights(), per_epoch[1], strict=True):
        np.testing.assert_array_equal(value, best)
    assert any(np.any(a != b) for a, b in zip(per_epoch[3], per_epoch[1], strict=True))


def test_auto_direction_from_the_compiled_metrics():
    """A metric logged under a name of the user's still has its class's direction."""
    model = kk.Sequential([kk.Input((3,)), kk.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="categorical_crossentropy",
                  metrics=[kk.metrics.Precision(name="p"), kk.metrics.MeanAbsoluteError("e")])
    for monitor, increasing in (("val_p", True), ("e", False)):
        callback = EarlyStopping(monitor=monitor)
        callback.set_model(model)
        callback._set_monitor_op()
        assert callback._is_improvement(0.6, 0.5) is increasing
