"""`kiln bench custom-layer` compares like with like: its custom model computes the classic
model's function (the same convolutions, bias as the learned per-channel offset, scale 1)."""

import numpy as np
import pytest

from kiln.bench import custom_layer
from kiln.bench.models import MODELS


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_custom_model_predicts_as_the_builtin_one_on_its_weights(data_format):
    builtin, shape, _ = MODELS["mnist_cnn"](data_format)
    custom = custom_layer.custom_model(builtin, shape, data_format)
    kinds = [type(layer).__name__ for layer in custom.layers]
    assert kinds.count("ChannelScaleBias") == 2 and kinds.count("Conv2D") == 2
    rng = np.random.default_rng(0)
    for layer in builtin.layers:  # biases start at zero: make them count
        layer.set_weights([w + rng.normal(0, 0.1, w.shape).astype(np.float32)
                           for w in layer.get_weights()])
    weights = []
    for layer in builtin.layers:
        values = layer.get_weights()
        if type(layer).__name__ == "Conv2D":
            kernel, bias = values
            channels = (bias.shape[0],) if data_format == "channels_last" else (-1, 1, 1)
            weights += [kernel, np.ones_like(bias).reshape(channels), bias.reshape(channels)]
        else:
            weights += values
    custom.set_weights(weights)
    x = rng.random((4, *shape), dtype=np.float32)
    np.testing.assert_allclose(custom.predict(x, verbose=0), builtin.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
