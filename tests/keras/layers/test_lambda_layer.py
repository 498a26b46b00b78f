"""keras.layers.Lambda's files against real Keras 3 (JAX backend): a Python lambda is saved as
Keras writes it and loads, in both directions, only outside safe mode. (A Lambda training
as in Keras is in test_custom_layers.py's hand-written layers model.)"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import keras_oracle  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]


def _lambda_model(K):
    inputs = K.Input((3,))
    outputs = K.layers.Lambda(lambda t: t * 3.0 + 1.0, name="affine")(inputs)
    return K.Model(inputs, outputs)


def test_lambda_files_load_across_only_outside_safe_mode(tmp_path):
    keras = keras_oracle.real_keras()
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    expected = x * 3.0 + 1.0
    _lambda_model(keras).save(tmp_path / "theirs.keras")
    with pytest.raises(ValueError, match=r"'affine' \(class Lambda\).*safe_mode=False"):
        kk.models.load_model(tmp_path / "theirs.keras")
    ours = kk.models.load_model(tmp_path / "theirs.keras", safe_mode=False)
    np.testing.assert_allclose(ours.predict(x, verbose=0), expected, rtol=1e-6)

    _lambda_model(kk).save(tmp_path / "ours.keras")
    with pytest.raises(ValueError, match="Lambda"):
        keras.models.load_model(tmp_path / "ours.keras")
    theirs = keras.models.load_model(tmp_path / "ours.keras", safe_mode=False)
    np.testing.assert_allclose(np.asarray(theirs(x)), expected, rtol=1e-6)
    with pytest.raises(ValueError, match="Lambda 'affine'.*safe_mode=False"):
        kk.layers.Lambda.from_config(ours.layers[1].get_config())
