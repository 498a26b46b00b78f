"""`Layer.add_loss` inside call(), against real Keras 3 (JAX): the added losses are traced into
the compiled step, summed into the total loss (Keras 3 sums each added loss over all of its
elements, with no sample weights) and differentiated through the plan; fit, evaluate,
train_on_batch and test_on_batch include them, and a model compiled with `loss=None` trains on
them alone. The same model is built on both sides from one `build(K)`, kiln's initial weights
are copied into Keras, and the reported losses and the weights after each step must agree."""

import numpy as np
import pytest
from keras_oracle import ATOL, RTOL, assert_weights_close, build_pair, real_keras

from kiln import keras as kk


def kl_model(K, returns_input=False):
    """A VAE-shaped encoder: z_mean and z_log_var from Dense layers, a layer adding the KL
    term (one value for the batch) and a layer adding a penalty per sample, then a decoder."""

    class KLDivergence(K.layers.Layer):
        def call(self, inputs):
            z_mean, z_log_var = inputs
            kl = -0.5 * K.ops.mean(K.ops.sum(
                1 + z_log_var - K.ops.square(z_mean) - K.ops.exp(z_log_var), axis=1))
            self.add_loss(kl)
            return z_mean if returns_input else z_mean + 0.0

    class PerSamplePenalty(K.layers.Layer):
        """Adds 0.01 * sum(x^2) per sample: shape (batch,), which Keras 3 sums over the
        batch (not a mean). (Its call() takes `training`, which kiln calls once more to
        check: that call's loss must not count.)"""

        def call(self, x, training=None):
            self.add_loss(0.01 * K.ops.sum(K.ops.square(x), axis=-1))
            return x

    inputs = K.Input((6,))
    hidden = K.layers.Dense(8, activation="tanh", name="hidden")(inputs)
    z_mean = K.layers.Dense(2, name="z_mean")(hidden)
    z_log_var = K.layers.Dense(2, name="z_log_var")(hidden)
    z = KLDivergence(name="kl")([z_mean, z_log_var])
    z = PerSamplePenalty(name="penalty")(z)
    outputs = K.layers.Dense(6, activation="sigmoid", name="decoded")(z)
    return K.Model(inputs, outputs)


def data(count=8, seed=0):
    return np.random.default_rng(seed).random((count, 6)).astype(np.float32)


def pair(build=kl_model, **compile_args):
    kiln_model, keras_model, _ = build_pair(build)
    kiln_model.compile(optimizer=kk.optimizers.SGD(learning_rate=0.1), **compile_args)
    keras = real_keras()
    keras_model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), **compile_args)
    return kiln_model, keras_model


def close(kiln_value, keras_value, what):
    assert kiln_value == pytest.approx(float(keras_value), rel=RTOL, abs=ATOL), (
        f"{what}: kiln {kiln_value}, keras {keras_value}")


@pytest.mark.parametrize("loss", ["binary_crossentropy", None])
def test_fit_and_evaluate_include_the_added_losses(loss):
    kiln_model, keras_model = pair(loss=loss)
    x = data()
    for epoch in range(2):
        kiln_logs = kiln_model.fit(x, x, batch_size=4, epochs=1, shuffle=False, verbose=0)
        keras_logs = keras_model.fit(x, x, batch_size=4, epochs=1, shuffle=False, verbose=0)
        assert list(kiln_logs.history) == list(keras_logs.history) == ["loss"]
        close(kiln_logs.history["loss"][0], keras_logs.history["loss"][0], f"fit {epoch}")
        assert_weights_close(kiln_model, keras_model, f"after epoch {epoch + 1}")
    kiln_eval = kiln_model.evaluate(x, x, batch_size=8, verbose=0, return_dict=True)
    keras_eval = keras_model.evaluate(x, x, batch_size=8, verbose=0, return_dict=True)
    assert list(kiln_eval) == list(keras_eval) == ["loss"]
    close(kiln_eval["loss"], keras_eval["loss"], "evaluate")


def test_on_batch_methods_and_an_identity_call():
    kiln_model, keras_model = pair(lambda K: kl_model(K, returns_input=True), loss="mse")
    x = data(6, seed=3)
    for step in range(2):
        close(kiln_model.train_on_batch(x, x), keras_model.train_on_batch(x, x),
              f"train_on_batch {step}")
        assert_weights_close(kiln_model, keras_model, f"after train_on_batch {step}")
    close(kiln_model.test_on_batch(x, x), keras_model.test_on_batch(x, x), "test_on_batch")
    # without a compiled loss, y is not needed (a fresh pair: a Keras model compiled again
    # with loss=None keeps the loss it was compiled with before)
    kiln_model, keras_model = pair(lambda K: kl_model(K, returns_input=True))
    close(kiln_model.train_on_batch(x), keras_model.train_on_batch(x, x),
          "train_on_batch, no y")
    assert_weights_close(kiln_model, keras_model, "after train_on_batch without y")
    close(kiln_model.test_on_batch(x), keras_model.test_on_batch(x, x), "test_on_batch")


def test_predict_leaves_the_losses_out_and_losses_lists_as_keras():
    kiln_model, keras_model = pair(loss=None)
    x = data()
    np.testing.assert_allclose(kiln_model.predict(x, verbose=0),
                               keras_model.predict(x, verbose=0), rtol=RTOL, atol=ATOL)
    # Keras 3 keeps the losses of a call only while it runs: none outside it
    assert kiln_model.losses == [] and list(keras_model.losses) == []
    assert kiln_model.get_layer("kl").losses == []


def test_a_sequential_model_with_an_add_loss_layer():
    def build(K):
        class ActivityPenalty(K.layers.Layer):
            def call(self, inputs):
                self.add_loss(1e-2 * K.ops.sum(inputs))
                return inputs

        return K.Sequential([K.Input((5,)), K.layers.Dense(4, name="first"),
                             ActivityPenalty(name="penalty"), K.layers.Dense(2, name="last")])

    kiln_model, keras_model = pair(build, loss="mse")
    x, y = data(8)[:, :5], data(8, seed=1)[:, :2]
    for step in range(2):
        close(kiln_model.train_on_batch(x, y), keras_model.train_on_batch(x, y), step)
        assert_weights_close(kiln_model, keras_model, f"after step {step + 1}")


def test_weight_regularization_penalties_are_listed_with_their_values():
    keras = real_keras()

    def build(K):
        inputs = K.Input((3,))
        outputs = K.layers.Dense(2, kernel_regularizer=K.regularizers.L2(0.1))(inputs)
        return K.Model(inputs, outputs)

    kiln_model, keras_model, _ = build_pair(build)
    (kiln_penalty,), (keras_penalty,) = kiln_model.losses, keras_model.losses
    close(float(kiln_penalty), keras.ops.convert_to_numpy(keras_penalty), "penalty")


def test_a_loss_value_is_refused_as_a_layer_input():
    inputs = kk.Input((4,))
    per_sample = kk.ops.sum(kk.layers.Dense(3)(inputs), axis=-1)
    with pytest.raises(NotImplementedError, match=r"Dense 'late'.*one value per sample"):
        kk.layers.Dense(2, name="late")(kk.ops.expand_dims(per_sample, -1))


def test_add_loss_refuses_an_eager_value():
    with pytest.raises(TypeError, match="add_loss takes a tensor computed with keras.ops"):
        kk.layers.Dense(2, name="d").add_loss(np.float32(1.0))


def test_no_loss_at_all_is_refused_at_compile():
    inputs = kk.Input((4,))
    model = kk.Model(inputs, kk.layers.Dense(2)(inputs))
    with pytest.raises(ValueError, match="argument loss is required.*add_loss"):
        model.compile(optimizer="sgd")


def test_add_loss_with_none_axes_in_the_input_is_refused():
    class Penalty(kk.layers.Layer):
        def call(self, x):
            self.add_loss(kk.ops.mean(kk.ops.square(x)))
            return x

    inputs = kk.Input((None, 3))
    model = kk.Model(inputs, kk.layers.Dense(2)(Penalty()(inputs)))
    model.compile(optimizer="sgd", loss="mse")
    x = np.zeros((2, 5, 3), np.float32)
    with pytest.raises(NotImplementedError, match="add_loss in a model with None axes"):
        model.train_on_batch(x, np.zeros((2, 5, 2), np.float32))
    assert model.predict(x, verbose=0).shape == (2, 5, 2)  # inference has no loss


def test_a_loss_added_to_the_model_must_come_from_its_inputs_and_replans():
    inputs, other = kk.Input((4,), name="x"), kk.Input((4,), name="other")
    outputs = kk.layers.Dense(4)(inputs)
    model = kk.Model(inputs, outputs)
    with pytest.raises(ValueError, match=r"add_loss: the loss .* depends on 'other'"):
        model.add_loss(kk.ops.mean(kk.ops.square(outputs - other)))
    model.compile(optimizer="sgd", loss="mse")
    x = data(4)[:, :4]
    before = model.test_on_batch(x, x)
    model.add_loss(kk.ops.mean(kk.ops.square(outputs)))  # Keras 2's model.add_loss
    assert model.test_on_batch(x, x) == pytest.approx(
        before + float(np.mean(model.predict(x, verbose=0) ** 2)), rel=1e-5)
    assert len(model.losses) == 1  # listed, as Keras 2 lists a model's added losses
