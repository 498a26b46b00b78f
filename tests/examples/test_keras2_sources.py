"""Where the example scripts come from: Keras 2.2.4's source distribution on PyPI (checked
against its sha256), and the only change kiln makes to them, their Keras imports."""

import pytest
from keras2_scripts import (
    KERAS2_SDIST,
    KERAS2_SDIST_SHA256,
    keras2_sdist,
    kiln_import,
    kiln_source,
    original_source,
    sha256,
)

KERAS2_SCRIPTS = ["imdb_lstm", "imdb_cnn", "imdb_cnn_lstm", "imdb_bidirectional_lstm",
                  "imdb_fasttext", "addition_rnn", "lstm_text_generation", "reuters_mlp",
                  "mnist_irnn", "mnist_net2net", "antirectifier", "mnist_siamese",
                  "mnist_denoising_autoencoder", "mnist_transfer_cnn", "cifar10_cnn_capsule"]


def test_the_sdist_is_pypis_file():
    path = keras2_sdist()
    assert path.name == KERAS2_SDIST and sha256(path) == KERAS2_SDIST_SHA256


@pytest.mark.parametrize("line, expected", [
    ("import keras", "from kiln import keras"),
    ("from keras import backend as K", "from kiln.keras import backend as K"),
    ("from keras.layers.convolutional import Conv2DTranspose, Conv2D",
     "from kiln.keras.layers.convolutional import Conv2DTranspose, Conv2D"),
    ("    from keras.models import Model", "    from kiln.keras.models import Model"),
    ("from tensorflow import keras", "from kiln import keras"),
    ("from tensorflow.keras import layers", "from kiln.keras import layers"),
    # not imports of Keras: unchanged
    ("import keras_tuner", "import keras_tuner"),
    ("from keras_cv import layers", "from keras_cv import layers"),
    ("model = keras.Sequential()", "model = keras.Sequential()"),
    ("# from keras import layers", "# from keras import layers"),
])
def test_kiln_import(line, expected):
    assert kiln_import(line) == expected


@pytest.mark.parametrize("name", KERAS2_SCRIPTS)
def test_only_the_keras_imports_change(name):
    original = original_source(name).split("\n")
    kiln = kiln_source(name).split("\n")
    assert len(original) == len(kiln)
    changed = [(a, b) for a, b in zip(original, kiln) if a != b]
    assert changed, f"{name}.py imports nothing from keras"
    for before, after in changed:
        assert before.lstrip().startswith(("from keras", "import keras")), before
        assert "kiln" in after
    assert not any(line.lstrip().startswith(("from keras", "import keras")) for line in kiln)
