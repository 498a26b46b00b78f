"""keras.ops between layers: in a subclassed model's call() and in a functional model built
from layer calls and ops, against real Keras 3 (the layer graph looks through the ops, as
Keras's `model.layers` lists only layers), called as a layer and with None axes (the ops are
applied again with the layers); what kiln cannot do with such graphs yet (saving) is refused
by name."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import build_pair, check_against_keras, check_predict  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]


def subclassed(K):
    class Net(K.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.hidden = K.layers.Dense(5)
            self.classes = K.layers.Dense(3)

        def call(self, x):
            h = K.ops.tanh(self.hidden(x)) * 2.0 + K.ops.relu(self.hidden(x))
            return K.ops.softmax(self.classes(h))

    return Net(name="net")


def test_ops_in_a_subclassed_models_call_train_as_keras():
    check_against_keras(subclassed, input_shapes=(6,), optimizers=("sgd",), steps=1,
                        training_forward=False)


def functional(K):
    inputs = K.Input((6,))
    x = K.layers.Dense(4, name="first")(inputs)
    x = K.ops.sigmoid(x) - K.ops.square(x) / 4.0
    x = K.layers.Dense(3, name="second")(x)
    return K.Model(inputs, K.ops.log_softmax(x), name="with_ops")


def test_ops_between_layers_of_a_functional_model_predict_as_keras():
    kiln_model, keras_model, x = build_pair(functional)
    assert [layer.name for layer in kiln_model.layers] == ["input_layer", "first", "second"]
    check_predict(kiln_model, keras_model, x)


def test_what_such_graphs_cannot_do_yet_is_refused_by_name(tmp_path):
    model = functional(kk)
    with pytest.raises(ValueError, match="'with_ops'.*keras.ops calls between its layers.*"
                                         "cannot be saved"):
        model.save(tmp_path / "model.keras")
    np.testing.assert_array_equal(model.predict(np.zeros((2, 6), np.float32), verbose=0).shape,
                                  (2, 3))


def nested(K):
    """The functional model with ops called as a layer (a frozen base, as in transfer
    learning): its ops are applied again with its layers."""
    base = functional(K)
    base.trainable = False
    inputs = K.Input((6,))
    return K.Model(inputs, K.layers.Dense(2, name="head")(base(inputs, training=False)))


def test_a_functional_model_with_ops_called_as_a_layer_trains_as_keras():
    kiln_model, _ = check_against_keras(nested, optimizers=("sgd",), steps=1)
    assert [layer.name for layer in kiln_model.layers] == ["input_layer_1", "with_ops", "head"]


def any_size(K):
    """None axes: the ops between the layers are traced again at each input size."""
    inputs = K.Input((None, None, 3))
    x = K.layers.Conv2D(4, 3, name="conv")(inputs)
    x = K.layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)  # MobileNetV3's hard sigmoid
    return K.Model(inputs, K.layers.GlobalAveragePooling2D()(x), name="any_size")


@pytest.mark.parametrize("size", [(5, 7), (9, 4)])
def test_ops_between_layers_with_none_axes_predict_as_keras(size):
    x = np.random.default_rng(0).normal(size=(2, *size, 3)).astype(np.float32) * 3
    kiln_model, keras_model, _ = build_pair(any_size, input_shapes=x.shape[1:], inputs=x)
    check_predict(kiln_model, keras_model, x)
