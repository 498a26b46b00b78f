"""keras.ops.dot_product_attention, layer_normalization and rms_normalization against real
Keras 3 (JAX backend): eagerly on numpy arrays, and inside custom layers of a model from the
same weights (predictions, SGD and Adam steps; the gamma / beta / scale weights of the calling
layer train); bad input names the op and the argument."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import check_against_keras, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

RNG = np.random.default_rng(0)


def _arrays(*shapes):
    return [RNG.standard_normal(shape).astype(np.float32) for shape in shapes]


# -- eager ------------------------------------------------------------------------------------
@pytest.mark.parametrize("arguments", [
    {}, {"is_causal": True}, {"scale": 0.3, "bias": "bias"}, {"mask": "mask"},
    {"mask": "mask", "is_causal": True, "bias": "bias", "flash_attention": False}])
def test_dot_product_attention_eager_as_keras(arguments):
    keras = real_keras()
    query, key, value, bias = _arrays((2, 3, 4, 5), (2, 6, 2, 5), (2, 6, 2, 5), (2, 4, 3, 6))
    mask = RNG.random((2, 1, 3, 6)) > 0.3
    arguments = {k: {"bias": bias, "mask": mask}.get(v, v) if isinstance(v, str) else v
                 for k, v in arguments.items()}
    np.testing.assert_allclose(
        kk.ops.nn.dot_product_attention(query, key, value, **arguments),
        keras.ops.dot_product_attention(query, key, value, **arguments), rtol=1e-5, atol=1e-6)


def test_normalizations_eager_as_keras():
    keras = real_keras()
    x, gamma, beta, gamma2 = _arrays((2, 3, 4), (4,), (4,), (3, 4))
    for arguments in ({}, {"gamma": gamma, "beta": beta}, {"gamma": gamma2, "axis": [1, 2]},
                      {"gamma": gamma2[:, 0], "beta": beta[:3], "axis": 1, "epsilon": 1e-3}):
        np.testing.assert_allclose(kk.ops.layer_normalization(x, **arguments),
                                   keras.ops.layer_normalization(x, **arguments),
                                   rtol=1e-5, atol=1e-6)
    for arguments in ({}, {"scale": gamma}, {"scale": gamma2, "axis": (1, 2)}):
        np.testing.assert_allclose(kk.ops.nn.rms_normalization(x, **arguments),
                                   keras.ops.rms_normalization(x, **arguments),
                                   rtol=1e-5, atol=1e-6)


# -- inside a model ---------------------------------------------------------------------------
def attention_model(kv_heads, mode):
    """Projections by EinsumDense, then a custom layer calling dot_product_attention on
    (B, T, N, H) tensors: grouped heads, query and key of different lengths, masks."""
    def build(K):
        class Attend(K.layers.Layer):
            def build(self, input_shapes):
                if mode == "causal, constant mask, bias":
                    self.bias = self.add_weight(shape=(1, 4, 4, 6), name="bias",
                                                initializer="random_normal")

            def call(self, inputs):
                query, key, value = inputs[:3]
                if mode == "tensor mask":
                    mask = K.ops.greater(inputs[3], 0.5)
                    return K.ops.dot_product_attention(query, key, value, mask=mask)
                # a constant mask with the causal one, a trainable bias
                constant = np.tril(np.ones((4, 6), dtype=bool), 1)
                return K.ops.nn.dot_product_attention(query, key, value, mask=constant,
                                                      bias=self.bias, scale=0.4,
                                                      is_causal=True)

        query_in, memory = K.Input((4, 6)), K.Input((6, 5))
        inputs = [query_in, memory]
        # the steps given (not None): Keras's symbolic causal mask needs them
        q = K.layers.EinsumDense("abc,cde->abde", (4, 4, 3), name="q")(query_in)
        k = K.layers.EinsumDense("abc,cde->abde", (6, kv_heads, 3), name="k")(memory)
        v = K.layers.EinsumDense("abc,cde->abde", (6, kv_heads, 3), name="v")(memory)
        attend_inputs = [q, k, v]
        if mode == "tensor mask":
            inputs.append(K.Input((1, 4, 6)))
            attend_inputs.append(inputs[-1])
        x = Attend(name="attend")(attend_inputs)
        x = K.layers.EinsumDense("abcd,cde->abe", (4, 6), name="out")(x)
        x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax", name="classes")(x))

    return build


@pytest.mark.parametrize("kv_heads, mode", [(2, "causal, constant mask, bias"),
                                            (1, "tensor mask")])
def test_dot_product_attention_in_a_model_predicts_and_trains_as_keras(kv_heads, mode):
    inputs = _arrays((6, 4, 6), (6, 6, 5))
    if mode == "tensor mask":
        mask = RNG.random((6, 1, 4, 6)).astype(np.float32)
        mask[0, 0, 1] = 0.0  # a row masked everywhere: uniform, as Keras's fused attention
        inputs.append(mask)
    optimizers = ("sgd",) if mode == "tensor mask" else ("adam",)
    check_against_keras(attention_model(kv_heads, mode), inputs=inputs, optimizers=optimizers,
                        steps=1)


def normalization_model(kinds):
    """A custom layer per kind, each calling a normalization op on its own weights."""
    def build(K):
        class Normalize(K.layers.Layer):
            def __init__(self, kind, **kwargs):
                super().__init__(**kwargs)
                self.kind = kind

            def build(self, input_shape):
                axes = (input_shape[1],) if self.kind == "layer axis 1" else (input_shape[-1],)
                self.g = self.add_weight(shape=axes, initializer="random_normal", name="g")
                self.b = self.add_weight(shape=axes, initializer="random_normal", name="b")

            def call(self, x):
                if self.kind == "layer":
                    return K.ops.layer_normalization(x, self.g, self.b, epsilon=1e-5)
                if self.kind == "layer axis 1":
                    return K.ops.layer_normalization(x, gamma=self.g, beta=self.b, axis=1)
                if self.kind == "layer constant gamma":
                    return K.ops.layer_normalization(x, np.linspace(0.5, 2, 8), self.b)
                if self.kind == "layer rms_scaling":  # Keras's deprecated flag: no beta
                    return K.ops.layer_normalization(x, self.g, rms_scaling=True) + self.b
                return K.ops.rms_normalization(x, scale=self.g) + self.b

        inputs = K.Input((5, 8))
        x = K.layers.Dense(8, name="dense")(inputs)
        for index, kind in enumerate(kinds):
            x = Normalize(kind, name=f"normalize_{index}")(x)
        x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax", name="classes")(x))

    return build


@pytest.mark.filterwarnings("ignore:You passed `rms_scaling=True`")
@pytest.mark.parametrize("kinds, optimizer", [
    (("layer", "layer rms_scaling", "rms"), "adam"),
    (("layer axis 1", "layer constant gamma"), "sgd")])
def test_normalizations_in_a_model_train_their_weights_as_keras(kinds, optimizer):
    kiln_model, _ = check_against_keras(normalization_model(kinds), optimizers=(optimizer,),
                                        steps=1)
    for index in range(len(kinds)):
        assert [w.path for w in kiln_model.get_layer(f"normalize_{index}").trainable_weights] \
            == [f"normalize_{index}/g", f"normalize_{index}/b"]


# -- bad input --------------------------------------------------------------------------------
def test_bad_input_names_the_op_and_the_argument():
    query, key, value = _arrays((2, 3, 4, 5), (2, 6, 3, 5), (2, 6, 3, 5))
    with pytest.raises(ValueError, match="dot_product_attention argument query must be a 4D"):
        kk.ops.dot_product_attention(query[0], key, value)
    with pytest.raises(ValueError, match="4 heads of argument query must be a multiple of "
                                         "the 3 heads of key"):
        kk.ops.dot_product_attention(query, key, value)
    with pytest.raises(ValueError, match=r"argument mask must broadcast to the scores' shape "
                                         r"\(B, N, T, S\) = \(2, 4, 3, 6\), got shape \(3, 3\)"):
        kk.ops.dot_product_attention(query, key[:, :, :2], value[:, :, :2],
                                     mask=np.ones((3, 3), bool))
    with pytest.raises(ValueError, match="arguments key and value must be"):
        kk.ops.dot_product_attention(query, key[:, :, :2], value[:, :4, :2])

    class Attend(kk.layers.Layer):
        def call(self, inputs):
            return kk.ops.dot_product_attention(*inputs[:3], mask=inputs[3])

    q, kv = kk.Input((3, 4, 5)), kk.Input((6, 2, 5))
    with pytest.raises(ValueError, match=r"Attend 'attend'.*argument mask must be a tensor "
                                         r"of shape \(batch, 1 or heads, T, S\)"):
        Attend(name="attend")([q, kv, kv, kk.Input((3, 6))])
    with pytest.raises(ValueError, match="argument axis must list consecutive axes"):
        kk.ops.layer_normalization(kk.Input((3, 4, 5)), axis=[1, 3])
