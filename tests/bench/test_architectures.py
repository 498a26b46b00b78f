"""kiln's own bench models (kiln/bench/architectures.py: mobilenet_v2 and the U-Net) built in
kiln and in real Keras 3 (JAX backend) from the same definition and the same weights: the same
layers and weights, the same predictions, the same training-mode loss and the same weights
after one Adam step: the U-Net in both data formats, MobileNetV2 in channels_first (Keras' XLA
compiles of its predict and train steps take most of its 30-80 s; op by op, jit_compile=False,
its step alone takes 90 s). This test found that max pooling dropped a relu's derivative from
the U-Net's skip connections (see test_pooling_against_keras.py).

Small inputs keep it quick (the topology does not depend on the size): MobileNetV2 at 32x32
(its five stride-2 stages end on 1x1), the U-Net at 16x16 (two poolings), six samples.

Deep relu networks make exact step comparisons fragile (see test_resnet20_against_keras.py):
a relu6 input within rounding distance of 0 or 6 switches on one side only and its changed
gradient spreads back through the batch norms. An Adam first step moves each weight by about
lr * sign(gradient), which only the few gradients near 0 may flip: those must stay rare.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "keras"))  # the shared real-Keras helper

import keras_oracle  # noqa: E402, F401  (sets KERAS_BACKEND before Keras is imported)
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import build_pair, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402
from kiln.bench.architectures import mobilenet_v2, unet  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning")

LEARNING_RATE = 1e-3
# name -> (build(K, data_format), loss, labels(rng, predictions), parameters of the bench size)
MODELS = {
    "mobilenet_v2": (lambda K, f: mobilenet_v2(K, f, input_size=32), "categorical_crossentropy",
                     lambda rng, p: np.eye(p.shape[-1], dtype=np.float32)[
                         rng.integers(0, p.shape[-1], len(p))], 2_270_794),
    "unet": (lambda K, f: unet(K, f, input_size=16), "binary_crossentropy",
             lambda rng, p: (rng.random(p.shape) > 0.5).astype(np.float32), 117_985),
}


@pytest.mark.parametrize("name,data_format", [
    # MobileNetV2 in one format for time: channels_first, kiln's format with more layout
    # work (test_conv_family_against_keras.py checks its layers in both)
    ("mobilenet_v2", "channels_first"), ("unet", "channels_last"), ("unet", "channels_first")])
def test_bench_model_predicts_and_trains_like_keras(name, data_format):
    keras = real_keras()
    build, loss, labels, parameters = MODELS[name]
    ours, theirs, x = build_pair(lambda K: build(K, data_format))
    assert ours.count_params() == parameters
    for model, module in ((ours, kk), (theirs, keras)):
        model.compile(loss=loss, optimizer=module.optimizers.Adam(LEARNING_RATE))
    predictions = ours.predict(x, verbose=0)
    np.testing.assert_allclose(predictions, theirs.predict(x, verbose=0), rtol=1e-4,
                               atol=1e-6)

    y = labels(np.random.default_rng(3), predictions)
    start = ours.get_weights()
    kiln_loss = ours.fit(x, y, batch_size=len(x), epochs=1, shuffle=False,
                         verbose=0).history["loss"][0]
    # Keras's loss of the training-mode forward (batch statistics), before its update
    keras_loss = float(theirs.train_on_batch(x, y))
    # rel 1e-4 as the layer checker's (keras_oracle.py): with AVX2 kernels (8 floats a vector)
    # MobileNetV2's training-mode loss, after 17 batch norms of batch statistics, was 1.7e-5
    # off Keras's; a wrong layer moves it by 1e-2 and more
    assert kiln_loss == pytest.approx(keras_loss, rel=1e-4)

    flipped = total = 0
    for weight, after, expected, before in zip(ours.weights, ours.get_weights(),
                                               theirs.get_weights(), start):
        assert np.all(np.abs(after - expected) <= 2.001 * LEARNING_RATE), weight.path
        flipped += np.sum(~np.isclose(after, expected, rtol=1e-4, atol=2e-6))
        total += after.size
        if "moving" not in weight.path:  # dead relus leave some entries in place
            assert not np.array_equal(after, before), weight.path
    assert flipped <= 0.01 * total, (flipped, total)
