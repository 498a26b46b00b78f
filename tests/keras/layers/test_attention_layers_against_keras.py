"""Attention, AdditiveAttention and Dot against real Keras 3 (JAX backend): weights, predictions
and training steps from the same weights (dot and concat scores, use_scale, the value's
padding mask, use_causal_mask, return_attention_scores), dropout only while training, configs,
a .keras round trip and the errors for bad arguments and inputs."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import build_pair, check_against_keras, check_predict, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

PADDED = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0], [1, 1, 1, 1, 1], [2, 0, 0, 0, 0],
                   [9, 8, 7, 6, 0], [3, 0, 0, 0, 0]], dtype=np.int32)


def attention_model(layer, causal=False):
    def build(K):
        query, value, key = K.Input((5, 4)), K.Input((7, 3)), K.Input((7, 4))
        x = layer(K)([query, value, key], use_causal_mask=causal)
        x = K.layers.Flatten()(x)
        return K.Model([query, value, key], K.layers.Dense(3, activation="softmax")(x))

    return build


LAYERS = {
    "dot": lambda K: K.layers.Attention(),
    "dot_scaled": lambda K: K.layers.Attention(use_scale=True),
    "concat_scaled": lambda K: K.layers.Attention(use_scale=True, score_mode="concat"),
    "additive": lambda K: K.layers.AdditiveAttention(),
    "additive_unscaled": lambda K: K.layers.AdditiveAttention(use_scale=False),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_scores_predict_and_train_as_keras(name):
    optimizers = ("sgd", "adam") if name in ("concat_scaled", "additive") else ("sgd",)
    check_against_keras(attention_model(LAYERS[name], causal=name == "dot_scaled"),
                        optimizers=optimizers, steps=1)


def padded_self_attention(layer):
    def build(K):
        tokens = K.Input((5,), dtype="int32")
        x = K.layers.Embedding(10, 4, mask_zero=True)(tokens)
        x = layer(K)([x, x])
        x = K.layers.GlobalAveragePooling1D()(x)
        return K.Model(tokens, K.layers.Dense(3, activation="softmax")(x))

    return build


@pytest.mark.parametrize("name", ["dot_scaled", "additive"])
def test_embedding_padding_masks_values_and_queries_as_keras(name):
    check_against_keras(padded_self_attention(LAYERS[name]), inputs=PADDED,
                        optimizers=("sgd",), steps=1)


def test_return_attention_scores_with_a_causal_padded_mask_as_keras():
    def build(K):
        tokens = K.Input((5,), dtype="int32")
        x = K.layers.Embedding(10, 4, mask_zero=True)(tokens)
        output, scores = K.layers.Attention(name="attention")(
            [x, x], return_attention_scores=True, use_causal_mask=True)
        return K.Model(tokens, [output, scores])

    kiln_model, _ = check_against_keras(build, inputs=PADDED, train=False)
    output, scores = kiln_model.predict(PADDED, verbose=0)
    assert scores.shape == (6, 5, 5)
    np.testing.assert_allclose(np.triu(scores[2], 1), 0.0, atol=1e-7)  # causal
    np.testing.assert_allclose(scores[1, :, 2:], 0.0, atol=1e-7)        # padded values
    np.testing.assert_array_equal(output[1, 2:], 0.0)                   # padded queries


def test_dropout_changes_training_not_inference():
    def model(rate):
        def build(K):
            query, value = K.Input((5, 4)), K.Input((7, 4))
            x = K.layers.Attention(dropout=rate, seed=3)([query, value])
            x = K.layers.Flatten()(x)
            return K.Model([query, value], K.layers.Dense(3, activation="softmax")(x))
        return build

    kiln_model, keras_model, x = build_pair(model(0.5))
    check_predict(kiln_model, keras_model, x)
    without = model(0.0)(kk)
    without.set_weights(kiln_model.get_weights())
    y = np.eye(3, dtype=np.float32)[[0, 1, 2, 0, 1, 2]]
    losses = []
    for m in (kiln_model, without):
        m.compile(optimizer=kk.optimizers.SGD(0.1), loss="categorical_crossentropy")
        losses.append(m.fit(x, y, epochs=1, batch_size=6, verbose=0).history["loss"][0])
    assert losses[0] != pytest.approx(losses[1], rel=1e-4)


def dot_model(axes, normalize, shapes):
    def build(K):
        a, b = K.Input(shapes[0]), K.Input(shapes[1])
        x = K.layers.Dot(axes=axes, normalize=normalize)([a, b])
        x = K.layers.Flatten()(x) if len(x.shape) > 2 else x
        return K.Model([a, b], K.layers.Dense(3, activation="softmax")(x))

    return build


@pytest.mark.parametrize("axes, normalize, shapes", [
    (-1, True, ((6,), (6,))),
    ((2, 2), False, ((4, 5), (3, 5))),
    ((1, 1), True, ((4, 5), (4, 3))),
    ((1, 2), False, ((4, 5), (3, 4)))])
def test_dot_as_keras(axes, normalize, shapes):
    check_against_keras(dot_model(axes, normalize, shapes), optimizers=("sgd",), steps=1)


def test_the_dot_function_and_configs_as_keras(tmp_path):
    keras = real_keras()
    a, b = kk.Input((6,)), kk.Input((6,))
    assert tuple(kk.layers.dot([a, b], axes=1).shape) == (None, 1)
    for make in (lambda K: K.layers.Attention(use_scale=True, score_mode="concat",
                                              dropout=0.1, name="a"),
                 lambda K: K.layers.AdditiveAttention(use_scale=False, name="a"),
                 lambda K: K.layers.Dot(axes=(1, 2), normalize=True, name="a")):
        config, expected = make(kk).get_config(), make(keras).get_config()
        assert sorted(config) == sorted(expected)
        assert {k: v for k, v in config.items() if k != "dtype"} == {
            k: v for k, v in expected.items() if k != "dtype"}
        assert type(make(kk)).from_config(config).get_config() == config

    model = attention_model(LAYERS["concat_scaled"])(kk)
    x = [np.random.default_rng(0).standard_normal((3, *s)).astype(np.float32)
         for s in ((5, 4), (7, 3), (7, 4))]
    path = str(tmp_path / "attention.keras")
    model.save(path)
    loaded = kk.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)


def test_bad_arguments_and_inputs_name_the_layer_and_the_argument():
    with pytest.raises(ValueError, match="Attention 'a': argument score_mode.*'add'"):
        kk.layers.Attention(score_mode="add", name="a")
    with pytest.raises(ValueError, match="Attention 'a': argument dropout"):
        kk.layers.Attention(dropout=2.0, name="a")
    q = kk.Input((5, 4))
    with pytest.raises(ValueError, match="Attention 'a': must be called on a list"):
        kk.layers.Attention(name="a")(q)
    with pytest.raises(ValueError, match="Attention 'a': query must be a 3D tensor"):
        kk.layers.Attention(name="a")([kk.Input((4,)), q])
    with pytest.raises(ValueError, match="AdditiveAttention 'a'.*same feature size"):
        kk.layers.AdditiveAttention(name="a")([q, kk.Input((5, 3))])
    with pytest.raises(TypeError, match="Dot 'd': argument axes"):
        kk.layers.Dot(axes="1", name="d")
    with pytest.raises(ValueError, match="Dot 'd': argument axes must hold two ints"):
        kk.layers.Dot(axes=(1, 2, 3), name="d")
    with pytest.raises(ValueError, match=r"Dot 'd': incompatible.*5 \(at axis 2\) != 4"):
        kk.layers.Dot(axes=2, name="d")([kk.Input((3, 5)), kk.Input((3, 4))])
    with pytest.raises(ValueError, match="Dot 'd'.*batch axis"):
        kk.layers.Dot(axes=0, name="d")([kk.Input((3,)), kk.Input((3,))])
