"""keras.layers.Embedding against real Keras 3 (JAX backend): predictions and training steps
from the same weights (int32, int64 and float ids), the weight's name, shape and config, a
regularizer and a constraint on the table, saving and loading, and ids out of range (an error
naming the layer, raised before any weight changes)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import check_against_keras, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

VOCABULARY, STEPS = 12, 5


def token_ids(dtype="int32", count=6, seed=0):
    return np.random.default_rng(seed).integers(0, VOCABULARY, (count, STEPS)).astype(dtype)


def embedding_flatten_dense(dtype="int32", **embedding):
    def build(K):
        inputs = K.Input((STEPS,), dtype=dtype)
        x = K.layers.Embedding(VOCABULARY, 4, **embedding)(inputs)
        x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    return build


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
def test_embedding_flatten_dense_predicts_and_trains_as_keras(dtype):
    check_against_keras(embedding_flatten_dense(dtype), inputs=token_ids(dtype))


def test_a_sequential_embedding_takes_its_input_shape_from_input_length():
    def build(K):
        if K is kk:
            first = K.layers.Embedding(VOCABULARY, 3, input_length=STEPS)
        else:
            first = K.layers.Embedding(VOCABULARY, 3)
        layers = [first, K.layers.Flatten(), K.layers.Dense(2, activation="softmax")]
        if K is not kk:
            layers.insert(0, K.Input((STEPS,)))
        return K.Sequential(layers)

    with pytest.warns(UserWarning, match="input_length is deprecated"):
        check_against_keras(build, inputs=token_ids("float32"), optimizers=("adam",))


def test_regularizer_and_constraint_on_the_table_as_keras():
    build = embedding_flatten_dense(embeddings_regularizer=kk.regularizers.L2(0.05),
                                    embeddings_constraint="non_neg")

    def both(K):
        if K is kk:
            return build(K)
        return embedding_flatten_dense(embeddings_regularizer=K.regularizers.L2(0.05),
                                       embeddings_constraint="non_neg")(K)

    # the loss includes the penalty: not the plain crossentropy of the forward
    check_against_keras(both, inputs=token_ids(), optimizers=("sgd", "adam"),
                        training_forward=False)


def test_weight_and_config_as_keras():
    keras = real_keras()
    kiln_layer = kk.layers.Embedding(VOCABULARY, 4, mask_zero=True, name="emb")
    keras_layer = keras.layers.Embedding(VOCABULARY, 4, mask_zero=True, name="emb")
    assert kiln_layer.get_config() == keras_layer.get_config()
    clone = kk.layers.Embedding.from_config(kiln_layer.get_config())
    assert clone.get_config() == kiln_layer.get_config()
    model = embedding_flatten_dense()(kk)
    embedding = model.layers[1]
    assert [(w.name, w.shape) for w in embedding.weights] == [("embeddings", (VOCABULARY, 4))]
    assert embedding.compute_output_shape((None, STEPS)) == (None, STEPS, 4)
    assert model.layers[2].output.shape == (None, STEPS * 4)


def test_initial_weights_argument():
    table = np.arange(VOCABULARY * 2, dtype=np.float32).reshape(VOCABULARY, 2)
    inputs = kk.Input((3,), dtype="int32")
    model = kk.Model(inputs, kk.layers.Embedding(VOCABULARY, 2, weights=[table])(inputs))
    np.testing.assert_array_equal(model.predict(np.array([[0, 5, 11]])), table[[[0, 5, 11]]])


@pytest.mark.parametrize("argument, value", [("input_dim", 0), ("output_dim", 2.5),
                                             ("mask_zero", "yes")])
def test_bad_arguments_name_the_layer_and_the_argument(argument, value):
    arguments = {"input_dim": 4, "output_dim": 2, argument: value}
    with pytest.raises(ValueError, match=f"Embedding 'bad': argument {argument}"):
        kk.layers.Embedding(name="bad", **arguments)


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_saved_and_loaded_in_both_directions(tmp_path, suffix):
    keras = real_keras()
    model = embedding_flatten_dense()(kk)
    ids = token_ids()
    expected = model.predict(ids)
    model.save(tmp_path / f"kiln{suffix}")
    loaded = kk.models.load_model(tmp_path / f"kiln{suffix}")
    np.testing.assert_array_equal(loaded.predict(ids), expected)
    by_keras = keras.models.load_model(tmp_path / f"kiln{suffix}")
    np.testing.assert_allclose(by_keras.predict(ids, verbose=0), expected, rtol=1e-5,
                               atol=1e-6)
    by_keras.save(tmp_path / f"keras{suffix}")
    from_keras = kk.models.load_model(tmp_path / f"keras{suffix}")
    np.testing.assert_allclose(from_keras.predict(ids), expected, rtol=1e-5, atol=1e-6)
    assert from_keras.inputs[0].dtype == "int32"


def generator(ids, labels):
    while True:
        yield ids, labels


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
@pytest.mark.parametrize("call", ["fit", "evaluate", "predict", "train_on_batch",
                                  "fit_generator"])
def test_an_id_out_of_range_is_an_error_before_any_weight_changes(call, dtype):
    model = embedding_flatten_dense(dtype)(kk)
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    ids = token_ids(dtype)
    bad = VOCABULARY if call != "predict" else -1
    ids[3, 2] = bad
    labels = np.eye(3, dtype=np.float32)[np.arange(6) % 3]
    before = model.get_weights()
    runs = {"fit": lambda: model.fit(ids, labels, verbose=0),
            "evaluate": lambda: model.evaluate(ids, labels, verbose=0),
            "predict": lambda: model.predict(ids),
            "train_on_batch": lambda: model.train_on_batch(ids, labels),
            "fit_generator": lambda: model.fit(generator(ids, labels), steps_per_epoch=2,
                                               verbose=0)}
    with pytest.raises(ValueError, match=rf"holds {bad}(\.0)? at index \(3, 2\).*Embedding "
                                         rf"'embedding(_\d+)?'.*\[0, {VOCABULARY}\)"):
        runs[call]()
    for after, value in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(after, value)


def test_float_ids_just_below_zero_truncate_to_id_zero_as_keras():
    model = embedding_flatten_dense("float32")(kk)
    ids = token_ids("float32")
    shifted = ids.copy()
    shifted[ids == 0] = -0.5
    np.testing.assert_array_equal(model.predict(shifted), model.predict(ids))
