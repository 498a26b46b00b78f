"""keras.ops.einsum / matmul / dot / tensordot inside custom layers, against real Keras 3 on
the same weights (prediction and SGD steps): a tensor times a weight from add_weight at ranks
3 and 4, and attention-style products of two activations; patterns kiln does not plan are
refused naming the op, the layer and the subscripts."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import pytest  # noqa: E402
from keras_oracle import build_pair, check_against_keras, check_predict  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

# how a custom layer multiplies its (..., K) input by its (K, N) weight
PROJECTIONS = {
    "einsum named": lambda K, x, w: K.ops.einsum("bsi,ij->bsj", x, w),
    "einsum ellipsis": lambda K, x, w: K.ops.einsum("...i,ij->...j", x, w),
    "matmul": lambda K, x, w: K.ops.matmul(x, w),
    "operator": lambda K, x, w: x @ w,
    "dot": lambda K, x, w: K.ops.dot(x, w),
    "tensordot": lambda K, x, w: K.ops.tensordot(x, w, axes=1),
}


def layers(K, projection):
    class Project(K.layers.Layer):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                     initializer="glorot_uniform", name="w")

        def call(self, x):
            return projection(K, x, self.w)

    class SelfAttention(K.layers.Layer):
        def call(self, x):
            scores = K.ops.einsum("bqd,bkd->bqk", x, x) * 0.5
            weights = K.ops.softmax(scores, axis=-1)
            return K.ops.einsum("bqk,bkd->bqd", weights, x) + K.ops.matmul(weights, x)

    return Project, SelfAttention


def sequence_model(projection):
    def build(K):
        Project, SelfAttention = layers(K, PROJECTIONS[projection])
        inputs = K.Input((5, 6))
        h = Project(4, name="project")(inputs)
        h = SelfAttention(name="attention")(h)
        h = K.ops.mean(h, axis=1)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax", name="classes")(h))
    return build


def test_weight_and_attention_einsum_train_as_keras():
    check_against_keras(sequence_model("einsum named"), optimizers=("sgd",), steps=1)


@pytest.mark.parametrize("projection", [p for p in PROJECTIONS if p != "einsum named"])
def test_every_formulation_of_a_tensor_times_a_weight_predicts_as_keras(projection):
    kiln_model, keras_model, x = build_pair(sequence_model(projection))
    check_predict(kiln_model, keras_model, x)


def image_model(K):
    Project, _ = layers(K, lambda K, x, w: K.ops.einsum("bhwc,cd->bhwd", x, w))
    inputs = K.Input((4, 3, 5))
    h = K.layers.Conv2D(6, 3, padding="same", name="conv")(inputs)
    h = Project(4, name="project")(h)
    h = K.layers.GlobalAveragePooling2D()(h)
    return K.Model(inputs, K.layers.Dense(3, activation="softmax", name="classes")(h))


def test_einsum_over_an_images_channels_trains_as_keras():
    check_against_keras(image_model, optimizers=("sgd",), steps=1)


def refused(K, subscripts):
    class Outer(K.layers.Layer):
        def call(self, x):
            return K.ops.einsum(subscripts, x, x)

    inputs = K.Input((5, 6))
    return K.Model(inputs, Outer(name="outer")(inputs))


@pytest.mark.parametrize("subscripts", ["bij,bkj->bik j", "bij,bkl->bijkl", "bij,bij->bi"])
def test_patterns_not_planned_are_refused_by_name(subscripts):
    with pytest.raises(NotImplementedError, match=r"'outer'.*keras\.ops\.einsum.*subscripts "
                                                  + repr(subscripts).replace("\\", "")):
        refused(kk, subscripts)


def heads_model(K):
    """Multi-head attention as a user writes it with Keras's own einsums: (C, N, H) and
    (N, H, C) weights contracted over one and two axes, scores and weighted values with the
    heads axis in the middle (reordered around one batched matmul each)."""

    class Heads(K.layers.Layer):
        def build(self, input_shape):
            features = input_shape[-1]
            self.wq = self.add_weight(shape=(features, 2, 3), name="wq")
            self.wv = self.add_weight(shape=(features, 2, 3), name="wv")
            self.wo = self.add_weight(shape=(2, 3, features), name="wo")

        def call(self, x):
            q = K.ops.einsum("abc,cde->abde", x, self.wq)
            v = K.ops.einsum("abc,cde->abde", x, self.wv)
            scores = K.ops.softmax(K.ops.einsum("aecd,abcd->acbe", v, q), axis=-1)
            mixed = K.ops.einsum("acbe,aecd->abcd", scores, v)
            return K.ops.einsum("abcd,cde->abe", mixed, self.wo)

    inputs = K.Input((5, 4))
    h = Heads(name="heads")(inputs)
    h = K.ops.mean(h, axis=1)
    return K.Model(inputs, K.layers.Dense(3, activation="softmax", name="classes")(h))


def test_multi_head_einsums_with_weights_of_three_axes_train_as_keras():
    check_against_keras(heads_model, optimizers=("sgd",), steps=1)
