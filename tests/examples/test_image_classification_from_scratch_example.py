"""Image classification from scratch in the style of keras.io's example of that name (our own
script, not a copy of it): a folder of JPEGs read by `image_dataset_from_directory` with
`validation_split` and `subset="both"`, a `data_augmentation` Sequential (RandomFlip,
RandomRotation) inside the model, Rescaling, an entry Conv2D / BatchNormalization block, then
residual blocks of SeparableConv2D / BatchNormalization / MaxPooling2D with a strided 1x1
Conv2D on the shortcut, a last SeparableConv2D, GlobalAveragePooling2D, Dropout and a
one-unit logit; Adam, BinaryCrossentropy(from_logits=True), a ModelCheckpoint per epoch;
`model.predict` on one image loaded with load_img / img_to_array.

The images: 2 classes of 20 JPEGs, 32x32 (class "top" brighter in its upper half, "bottom" in
its lower half, so a horizontal flip keeps the class); the widths are small (8 to 24 filters
instead of 128 to 1024) so it trains in seconds.

Real Keras 3 builds the same model from the same function: the same layers and parameter
count, and with kiln's trained weights the same predictions (the augmentation layers are the
identity in predict on both sides).
"""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "keras"))  # the shared real-Keras helper
from keras_oracle import real_keras  # noqa: E402

from kiln import keras  # noqa: E402

PIL = pytest.importorskip("PIL.Image")

IMAGE_SIZE = (32, 32)
BATCH_SIZE = 8
PER_CLASS = 20


def write_images(folder, seed=0):
    rng = np.random.default_rng(seed)
    for name, bright_top in (("top", True), ("bottom", False)):
        (folder / name).mkdir(parents=True)
        for i in range(PER_CLASS):
            pixels = rng.integers(0, 120, (*IMAGE_SIZE, 3))
            half = slice(0, 16) if bright_top else slice(16, 32)
            pixels[half] += 120
            PIL.fromarray(pixels.astype(np.uint8)).save(folder / name / f"{i}.jpg", quality=90)


def make_model(keras, input_shape, num_classes, sizes=(8, 16, 24)):
    layers = keras.layers
    data_augmentation = keras.Sequential(
        [layers.RandomFlip("horizontal"), layers.RandomRotation(0.1)], name="augmentation")
    inputs = keras.Input(shape=input_shape)
    x = data_augmentation(inputs)
    x = layers.Rescaling(1.0 / 255)(x)
    x = layers.Conv2D(sizes[0], 3, strides=2, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    previous_block_activation = x
    for size in sizes[1:]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
        residual = layers.Conv2D(size, 1, strides=2, padding="same")(previous_block_activation)
        x = layers.add([x, residual])
        previous_block_activation = x
    x = layers.SeparableConv2D(32, 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    units = 1 if num_classes == 2 else num_classes
    x = layers.Dropout(0.25)(x)
    outputs = layers.Dense(units, activation=None)(x)
    return keras.Model(inputs, outputs)


def test_image_classification_from_scratch(tmp_path, monkeypatch):
    write_images(tmp_path / "images")
    monkeypatch.chdir(tmp_path)  # the checkpoints go to the working folder
    keras.utils.set_random_seed(1337)
    train_ds, val_ds = keras.utils.image_dataset_from_directory(
        "images", validation_split=0.2, subset="both", seed=1337, image_size=IMAGE_SIZE,
        batch_size=BATCH_SIZE, verbose=False)
    assert train_ds.class_names == ["bottom", "top"]
    assert len(train_ds.file_paths) == 32 and len(val_ds.file_paths) == 8

    model = make_model(keras, input_shape=IMAGE_SIZE + (3,), num_classes=2)
    augmentation = model.layers[1]
    assert [type(layer).__name__ for layer in augmentation.layers] == [
        "RandomFlip", "RandomRotation"]
    epochs = 2
    callbacks = [keras.callbacks.ModelCheckpoint("save_at_{epoch}.keras")]
    model.compile(optimizer=keras.optimizers.Adam(3e-4),
                  loss=keras.losses.BinaryCrossentropy(from_logits=True),
                  metrics=[keras.metrics.BinaryAccuracy(name="acc")])
    history = model.fit(train_ds, epochs=epochs, callbacks=callbacks,
                        validation_data=val_ds, verbose=0).history
    assert set(history) == {"loss", "acc", "val_loss", "val_acc"}
    assert all(len(values) == epochs and np.all(np.isfinite(values))
               for values in history.values())
    assert sorted(os.listdir(tmp_path)) == ["images", "save_at_1.keras", "save_at_2.keras"]

    # inference on one image, as the example ends
    img = keras.utils.load_img("images/top/3.jpg", target_size=IMAGE_SIZE)
    img_array = keras.utils.img_to_array(img)
    img_array = keras.ops.expand_dims(img_array, 0)  # a batch of one
    predictions = model.predict(img_array, verbose=0)
    score = float(keras.ops.sigmoid(predictions[0][0]))
    assert predictions.shape == (1, 1) and 0.0 < score < 1.0
    # the last checkpoint is the trained model
    loaded = keras.models.load_model("save_at_2.keras")
    np.testing.assert_allclose(loaded.predict(img_array, verbose=0), predictions, rtol=1e-5)

    # real Keras 3: the same model from the same function, predicting what kiln predicts
    real = real_keras()
    real.backend.clear_session()
    theirs = make_model(real, input_shape=IMAGE_SIZE + (3,), num_classes=2)
    assert [type(layer).__name__ for layer in theirs.layers] == [
        type(layer).__name__ for layer in model.layers]
    assert theirs.count_params() == model.count_params()
    theirs.set_weights(model.get_weights())
    images = np.concatenate([val_ds[i][0] for i in range(len(val_ds))])
    np.testing.assert_allclose(model.predict(images, verbose=0),
                               theirs.predict(images, verbose=0), rtol=1e-4, atol=1e-5)
