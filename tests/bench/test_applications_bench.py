"""The keras.applications bench models (resnet50, efficientnet_b0 and the frozen-base
resnet50_finetune, 224x224x3, batch 16): FLOP counts by hand, frozen layers in the counts, and
their copies in every runner (Keras 3 from the same code, PyTorch written layer by layer) with
the same parameters. No timing here."""

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from kiln import keras
from kiln.bench.architectures import EFFICIENTNET_B0_STAGES
from kiln.bench.models import built, inference_flops, layer_passes, training_flops
from kiln.bench.peers import synthetic

BATCH = 16


def conv(size, kernel, channels_in, channels_out):
    """2 x multiply-adds of a convolution with a size x size output."""
    return 2.0 * BATCH * size * size * kernel * kernel * channels_in * channels_out


def resnet50_convs():
    """ResNet50 v1 as Keras builds it: the stem, then per stack its first block's 1x1
    shortcut and every block's 1x1 (strided in the first block), 3x3 and 1x1 convs."""
    convs, size, channels = [conv(112, 7, 3, 64)], 56, 64
    for filters, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        size //= stride
        convs.append(conv(size, 1, channels, 4 * filters))  # the projection shortcut
        for _ in range(blocks):
            convs += [conv(size, 1, channels, filters), conv(size, 3, filters, filters),
                      conv(size, 1, filters, 4 * filters)]
            channels = 4 * filters
    return convs


def efficientnet_b0_convs():
    """EfficientNet-B0: the stem, per block the 1x1 expansion (not in the first stage), the
    depthwise kxk (k * k multiply-adds per output channel), squeeze-and-excitation's two 1x1
    convs on a 1x1 map, the 1x1 projection; the 1280-filter top conv."""
    convs, size = [conv(112, 3, 3, 32)], 112
    for kernel, repeats, filters_in, filters_out, stride, expansion in EFFICIENTNET_B0_STAGES:
        for j in range(repeats):
            channels_in = filters_in if j == 0 else filters_out
            hidden = channels_in * expansion
            if expansion != 1:
                convs.append(conv(size, 1, channels_in, hidden))
            if j == 0:
                size //= stride
            squeezed = max(1, int(channels_in * 0.25))
            convs += [conv(size, kernel, 1, hidden), conv(1, 1, hidden, squeezed),
                      conv(1, 1, squeezed, hidden), conv(size, 1, hidden, filters_out)]
    return convs + [conv(7, 1, 320, 1280)]


def test_resnet50_flop_counts_by_hand():
    model, batch = built("resnet50")
    assert batch == BATCH and model.count_params() == 25_636_712
    convs, head = resnet50_convs(), 2.0 * BATCH * 2048 * 1000
    assert inference_flops(model, batch) == pytest.approx(sum(convs) + head, rel=1e-12)
    # the stem has nothing trainable before it: no input gradient
    assert training_flops(model, batch) == pytest.approx(
        2 * convs[0] + 3 * (sum(convs[1:]) + head), rel=1e-12)
    assert inference_flops(model, batch) / 1e9 == pytest.approx(123.455, abs=5e-4)
    assert training_flops(model, batch) / 1e9 == pytest.approx(366.589, abs=5e-4)


def test_efficientnet_b0_flop_counts_by_hand():
    model, batch = built("efficientnet_b0")
    assert batch == BATCH and model.count_params() == 5_330_571
    convs, head = efficientnet_b0_convs(), 2.0 * BATCH * 1280 * 1000
    assert len(convs) == 1 + 16 * 4 + 15 + 1  # the first block has no expansion
    assert inference_flops(model, batch) == pytest.approx(sum(convs) + head, rel=1e-12)
    # the Rescaling and the Normalization before the stem have no kernel to train
    assert training_flops(model, batch) == pytest.approx(
        2 * convs[0] + 3 * (sum(convs[1:]) + head), rel=1e-12)
    assert inference_flops(model, batch) / 1e9 == pytest.approx(12.346, abs=5e-4)
    assert training_flops(model, batch) / 1e9 == pytest.approx(36.691, abs=5e-4)


def test_finetune_trains_the_head_only():
    """The frozen base (inside the model, as one nested layer) costs its forward; the head
    its forward and its weights' gradient, not its input's (nothing trainable before it)."""
    model, batch = built("resnet50_finetune")
    base, head = sum(resnet50_convs()), 2.0 * BATCH * 2048 * 10
    assert [type(layer).__name__ for layer in model.layers][1:] == [
        "Functional", "GlobalAveragePooling2D", "Dense"]
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == 2048 * 10 + 10
    assert inference_flops(model, batch) == pytest.approx(base + head, rel=1e-12)
    assert training_flops(model, batch) == pytest.approx(base + 2 * head, rel=1e-12)
    assert training_flops(model, batch) / 1e9 == pytest.approx(123.391, abs=5e-4)


def test_frozen_layers_in_the_counts():
    """A frozen layer has no weight gradient; a trainable layer behind only frozen ones no
    input gradient; a frozen layer behind a trainable one passes the input gradient back."""
    keras.backend.clear_session()
    inputs = keras.Input((8,))
    first = keras.layers.Dense(4, trainable=False)
    second, third = keras.layers.Dense(5), keras.layers.Dense(3, trainable=False)
    model = keras.Model(inputs, third(second(first(inputs))))
    f1, f2, f3 = (2.0 * 2 * n for n in (8 * 4, 4 * 5, 5 * 3))
    assert layer_passes(model, 2) == [(f1, False, False), (f2, False, True), (f3, True, False)]
    assert training_flops(model, 2) == f1 + 2 * f2 + 2 * f3
    first.trainable = True
    assert training_flops(model, 2) == 2 * f1 + 3 * f2 + 2 * f3


def test_channels_first_counts_the_same():
    model, batch = built("efficientnet_b0", "channels_first")
    assert tuple(model.input.shape) == (None, 3, 224, 224)
    assert keras.backend.image_data_format() == "channels_last"  # set back after building
    assert inference_flops(model, batch) == pytest.approx(
        sum(efficientnet_b0_convs()) + 2.0 * BATCH * 1280 * 1000, rel=1e-12)


@pytest.mark.parametrize("name, classes", [("resnet50", 1000), ("efficientnet_b0", 1000),
                                           ("resnet50_finetune", 10)])
def test_synthetic_batch(name, classes):
    x, y = synthetic.batch(name, "channels_last")
    assert x.shape == (BATCH, 224, 224, 3) and x.dtype == np.float32
    assert y.shape == (BATCH, classes) and np.array_equal(y.sum(1), np.ones(BATCH))
    assert synthetic.batch(name, "channels_first")[0].shape == (BATCH, 3, 224, 224)


PEERS = """
import json
import numpy as np
result = {}
try:
    import keras
except ImportError:
    keras = None
if keras is not None:
    from kiln.bench.models import inference_flops, training_flops
    from kiln.bench.peers import keras3_runner
    for name in ("resnet50", "efficientnet_b0", "resnet50_finetune"):
        net = keras3_runner._model(keras, name, "channels_last")
        trainable = sum(int(np.prod(w.shape)) for w in net.trainable_weights)
        result[name] = [net.count_params(), trainable, training_flops(net, 16),
                        inference_flops(net, 16)]
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    from kiln.bench.peers import torch_runner
    for name in ("resnet50", "efficientnet_b0", "resnet50_finetune"):
        net = torch_runner._model(torch, name)
        trained = sum(p.numel() for p in net.parameters() if p.requires_grad)
        statistics = sum(b.numel() for n, b in net.named_buffers() if "running" in n)
        parameters = sum(p.numel() for p in net.parameters())
        net.train()
        with torch.no_grad():
            out = net(torch.rand(2, 3, 224, 224))
        result["torch " + name] = [parameters, trained, statistics, list(out.shape),
                                   getattr(net, "base", net).training]
print(json.dumps(result))
"""


@pytest.mark.skipif(importlib.util.find_spec("keras") is None
                    and importlib.util.find_spec("torch") is None,
                    reason="needs keras or torch")
def test_peer_copies_have_kilns_parameters_and_counts():
    """Keras 3 (own process; its NumPy backend, which builds these models in seconds where
    JAX's initializers take minutes: the layers, weights and shapes are the backend's
    neither): kiln's parameters, trainable parameters and GFLOP counts from the same code.
    PyTorch (where installed: the bench environment): Keras' trainable parameters, and its
    BN statistics for Keras' other non-trainable weights (EfficientNet's Normalization has 7
    more: mean, variance, count); the finetune base stays in eval mode when it trains."""
    result = subprocess.run([sys.executable, "-c", PEERS], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "KERAS_BACKEND": "numpy"})
    assert result.returncode == 0, result.stderr
    counts = json.loads(result.stdout.strip().splitlines()[-1])
    assert counts
    for name, extra in (("resnet50", 0), ("efficientnet_b0", 7), ("resnet50_finetune", 0)):
        model, batch = built(name)
        trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
        if name in counts:
            params, keras_trainable, train, infer = counts[name]
            assert (params, keras_trainable) == (model.count_params(), trainable), name
            assert train == pytest.approx(training_flops(model, batch), rel=1e-12), name
            assert infer == pytest.approx(inference_flops(model, batch), rel=1e-12), name
        if "torch " + name in counts:
            params, trained, statistics, shape, base_training = counts["torch " + name]
            assert trained == trainable, name
            assert params + statistics + extra == model.count_params(), name
            assert shape == [2, synthetic.IMAGE_CLASSES[name]]
            assert base_training is (name != "resnet50_finetune")
