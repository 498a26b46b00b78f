"""The transformer_encoder bench model (kiln/bench/architectures.py): its FLOP counts, and its
copies in every runner. kiln's and Keras 3's copies come from the same code: the same
parameters and GFLOP counts; the PyTorch copy (nn.TransformerEncoderLayer) computes Keras 3's
outputs from the same weights. No timing here."""

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from kiln.bench.models import built, forward_flops_per_layer, inference_flops, training_flops
from kiln.bench.peers import synthetic

BATCH, STEPS, WIDTH, HEADS, FEED_FORWARD, BLOCKS = 32, 128, 256, 4, 1024, 4
PARAMETERS = (20000 * WIDTH  # the Embedding
              + BLOCKS * (4 * (WIDTH * WIDTH + WIDTH)  # query, key, value, output projections
                          + 2 * 2 * WIDTH  # two LayerNormalizations
                          + WIDTH * FEED_FORWARD + FEED_FORWARD + FEED_FORWARD * WIDTH + WIDTH)
              + WIDTH * 2 + 2)
# per block, 2 x multiply-adds: the projections, the scores and weighted sum, the feed-forward
PROJECTIONS = 2.0 * BATCH * STEPS * WIDTH * 4 * WIDTH
ATTENTION = 2.0 * BATCH * HEADS * STEPS * STEPS * 2 * (WIDTH // HEADS)
FEED = 2.0 * BATCH * STEPS * 2 * WIDTH * FEED_FORWARD
HEAD = 2.0 * BATCH * WIDTH * 2


def test_flop_counts_by_hand():
    model, batch = built("transformer_encoder")
    assert batch == BATCH and model.count_params() == PARAMETERS == 8_279_554
    forward = BLOCKS * (PROJECTIONS + ATTENTION + FEED) + HEAD
    assert inference_flops(model, batch) == pytest.approx(forward, rel=1e-12)
    # an Embedding comes first: every product also passes its input's gradient back
    assert training_flops(model, batch) == pytest.approx(3 * forward, rel=1e-12)
    assert training_flops(model, batch) / 1e9 == pytest.approx(83.752, abs=5e-4)
    assert inference_flops(model, batch) / 1e9 == pytest.approx(27.917, abs=5e-4)
    assert forward_flops_per_layer(model, batch)[:3] == [PROJECTIONS, ATTENTION, FEED / 2]


def test_attention_without_a_weighted_layer_before_counts_its_products_three_times():
    from kiln import keras
    keras.backend.clear_session()
    inputs = keras.Input((8, 4))
    outputs = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=5)(inputs,
                                                                                    inputs)
    model = keras.Model(inputs, outputs)
    projections = 2.0 * 2 * 8 * 4 * 2 * (2 * 3 + 2 * 5)
    attention = 2.0 * 2 * 2 * 8 * 8 * (3 + 5)
    assert forward_flops_per_layer(model, 2) == [projections, attention]
    assert training_flops(model, 2) == 2 * projections + 3 * attention


def test_synthetic_batch_is_tokens_and_one_hot_labels():
    x, y = synthetic.batch("transformer_encoder", "channels_last")
    assert x.dtype == np.int32 and x.shape == (BATCH, STEPS) and 1 <= x.min()
    assert x.max() < 20000
    assert y.shape == (BATCH, 2) and np.array_equal(y.sum(1), np.ones(BATCH))


KERAS_AND_TORCH = """
import json, sys
import numpy as np, keras
from kiln.bench.models import inference_flops, training_flops
from kiln.bench.peers import keras3_runner, synthetic
net = keras3_runner._model(keras, "transformer_encoder", "channels_last")
x, y = synthetic.batch("transformer_encoder", "channels_last")
loss = float(net.train_on_batch(x, y)[0])
result = {"keras": [net.count_params(), training_flops(net, 32), inference_flops(net, 32),
                    loss]}
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    from kiln.bench.peers import torch_models, torch_runner
    torch_net = torch_models.transformer_encoder(torch).eval()
    layers = {}
    for layer in net.layers:
        layers.setdefault(type(layer).__name__, []).append(layer)
    as_tensor = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
    with torch.no_grad():
        torch_net.embedding.weight.copy_(as_tensor(layers["Embedding"][0].get_weights()[0]))
        dense = layers["Dense"]
        norms = layers["LayerNormalization"]
        for index, block in enumerate(torch_net.blocks):
            q, qb, k, kb, v, vb, o, ob = layers["MultiHeadAttention"][index].get_weights()
            matrix = lambda w: w.reshape(w.shape[0], -1).T
            block.self_attn.in_proj_weight.copy_(as_tensor(np.concatenate(
                [matrix(q), matrix(k), matrix(v)])))
            block.self_attn.in_proj_bias.copy_(as_tensor(np.concatenate(
                [qb.ravel(), kb.ravel(), vb.ravel()])))
            block.self_attn.out_proj.weight.copy_(as_tensor(o.reshape(-1, o.shape[-1]).T))
            block.self_attn.out_proj.bias.copy_(as_tensor(ob))
            for linear, layer in ((block.linear1, dense[2 * index]),
                                  (block.linear2, dense[2 * index + 1])):
                kernel, bias = layer.get_weights()
                linear.weight.copy_(as_tensor(kernel.T)); linear.bias.copy_(as_tensor(bias))
            for norm, layer in ((block.norm1, norms[2 * index]),
                                (block.norm2, norms[2 * index + 1])):
                gamma, beta = layer.get_weights()
                norm.weight.copy_(as_tensor(gamma)); norm.bias.copy_(as_tensor(beta))
        kernel, bias = dense[-1].get_weights()
        torch_net.head.weight.copy_(as_tensor(kernel.T))
        torch_net.head.bias.copy_(as_tensor(bias))
        tokens = torch.from_numpy(x[:4]).long()
        pooled = torch_net.blocks(torch_net.embedding(tokens)).mean(dim=1).numpy()
        probabilities = torch.softmax(torch_net.head(torch.from_numpy(pooled)), 1).numpy()
    # the pooled features (the probabilities may be near 0 and 1, where any error vanishes)
    features = keras.Model(net.inputs, net.layers[-2].output).predict_on_batch(x[:4])
    difference = [float(np.abs(np.asarray(features) - pooled).max()),
                  float(np.abs(np.asarray(features)).mean()),
                  float(np.abs(np.asarray(net.predict_on_batch(x[:4])) - probabilities).max())]
    step = torch_runner.prepare("transformer_encoder", "channels_last", "train", "fp32")
    step()
    result["torch"] = [sum(p.numel() for p in torch_net.parameters()), difference]
print(json.dumps(result))
"""


@pytest.mark.skipif(importlib.util.find_spec("jax") is None
                    or importlib.util.find_spec("keras") is None, reason="needs keras + jax")
def test_keras3_and_torch_copies_count_and_compute_like_kiln():
    """Keras 3 (JAX backend, own process): kiln's parameters and GFLOP counts, one training
    step on the synthetic batch; PyTorch (where installed: the bench environment): the same
    parameters, Keras 3's outputs from Keras 3's weights, and a training step of its runner."""
    result = subprocess.run([sys.executable, "-c", KERAS_AND_TORCH], capture_output=True,
                            text=True, timeout=300, env={**os.environ, "KERAS_BACKEND": "jax"})
    assert result.returncode == 0, result.stderr
    counts = json.loads(result.stdout.strip().splitlines()[-1])
    model, batch = built("transformer_encoder")
    params, train, infer, loss = counts["keras"]
    assert params == model.count_params()
    assert train == pytest.approx(training_flops(model, batch), rel=1e-12)
    assert infer == pytest.approx(inference_flops(model, batch), rel=1e-12)
    assert 0.3 < loss < 2.0  # cross-entropy of random labels over two classes, near log 2
    if "torch" in counts:
        torch_params, (difference, size, probability_difference) = counts["torch"]
        assert torch_params == model.count_params()
        assert size > 0.1 and difference < 1e-4 * size and probability_difference < 1e-5
