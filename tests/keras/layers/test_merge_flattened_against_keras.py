"""A Flatten output joined with other features: the common two-branch model (an image branch
flattened, a vector branch through Dense, concatenated, a head). kiln keeps a Flatten output
in its 4D buffer for the Dense that usually follows; Concatenate must see Keras's feature
order, (h, w, c) under both data formats."""

import pytest

from tests.keras.keras_oracle import check_against_keras


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_flattened_image_branch_concatenated_with_a_vector_branch(data_format):
    def build(K):
        L = K.layers
        f = dict(data_format=data_format)
        image = K.Input((6, 6, 2) if data_format == "channels_last" else (2, 6, 6))
        vector = K.Input((5,))
        x = L.Conv2D(3, 3, activation="relu", **f)(image)
        pooled = L.Flatten(**f)(L.MaxPooling2D(2, **f)(x))
        flat = L.Flatten(**f)(x)
        y = L.Dense(4, activation="tanh")(vector)
        joined = L.Concatenate()([flat, y, pooled])
        return K.Model([image, vector], L.Dense(3, activation="softmax")(joined))

    check_against_keras(build, optimizers=["adam"])


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_flattened_image_added_to_and_multiplied_with_dense_features(data_format):
    def build(K):
        L = K.layers
        f = dict(data_format=data_format)
        image = K.Input((4, 4, 2) if data_format == "channels_last" else (2, 4, 4))
        flat = L.Flatten(**f)(L.Conv2D(2, 3, padding="same", activation="relu", **f)(image))
        dense = L.Dense(32, activation="tanh")(L.Flatten(**f)(image))
        merged = L.Add()([flat, dense])
        both = L.Multiply()([dense, L.Flatten(**f)(L.Conv2D(2, 1, **f)(image))])
        return K.Model(image, L.Dense(3, activation="softmax")(L.Concatenate()([merged, both])))

    check_against_keras(build, optimizers=["adam"])
