"""MobileNet (v1), MobileNetV3Small and EfficientNetV2B0 against real Keras 3 (JAX backend):
the same layers and weights (names, classes, shapes, paths, order), Keras's `.weights.h5`
loaded into kiln gives Keras's values and predictions (the logits), and kiln's file loads
into Keras with kiln's values. The other variants (MobileNet with a depth multiplier,
MobileNetV3Large and the minimalistic models, EfficientNetV2B1 to L, without preprocessing
or on one channel) are checked against a record of Keras's structure.

Small inputs (32x32) and 10 classes keep them fast. MobileNetV3Small keeps its top (pooling
with keepdims, 1x1 convolutions, Flatten, Activation) and its hard sigmoid, which Keras
writes as two `keras.ops` on the tensor (`ReLU(6)(x + 3) * (1 / 6)`), not as layers.
"""

import hashlib

import numpy as np
import pytest
from applications_helpers import build_both, images, weights_files_both_ways
from test_applications_against_keras import assert_step_close

import kiln.keras.applications.efficientnet_v2
import kiln.keras.applications.mobilenet
import kiln.keras.applications.mobilenet_v3  # noqa: F401
from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]


# name: (kiln module, arguments besides weights=None, input_shape=(32, 32, 3), classes=10,
# classifier_activation=None)
CASES = {
    "MobileNet": ("mobilenet", {"alpha": 0.5}),
    # its default input: (None, None, 3), any size
    "MobileNetV3Small": ("mobilenet_v3", {"input_shape": None, "dropout_rate": 0.0}),
    "EfficientNetV2B0": ("efficientnet_v2", {}),
}


def assert_logits_close(kiln_logits, keras_logits):
    """Within 1e-3 of the largest logit. With random weights and BatchNormalization's initial
    moving statistics (mean 0, variance 1) the signal shrinks block after block (the logits
    are ~1e-11 here, the softmax exactly 1/10): so the logits, relative to their scale."""
    assert kiln_logits.shape == keras_logits.shape == (2, 10)
    scale = float(np.abs(keras_logits).max())
    assert scale > 0
    np.testing.assert_allclose(kiln_logits, keras_logits, rtol=0, atol=1e-3 * scale,
                               err_msg="predict (logits)")


@pytest.mark.parametrize("name", list(CASES))
def test_weights_files_both_ways_and_predictions(name, fast_keras_init, tmp_path):
    keras = fast_keras_init
    module, arguments = CASES[name]

    def build(K):
        builder = getattr(getattr(K.applications, module) if K is kk else K.applications, name)
        return builder(**{"weights": None, "input_shape": (32, 32, 3), "classes": 10,
                          "classifier_activation": None, **arguments})

    kiln_model, keras_model = build_both(keras, build)
    assert tuple(kiln_model.input.shape) == tuple(keras_model.input.shape)
    x = getattr(kk.applications, module).preprocess_input(images(2, 32))
    kiln_initial = weights_files_both_ways(kiln_model, keras_model, tmp_path, x,
                                           assert_logits_close)

    if name == "MobileNetV3Small":
        # one SGD step from kiln's initial weights, BatchNormalization in training mode:
        # the backward of hard-swish, of the hard sigmoid's ops, of the squeeze-excite
        # Multiply and of the Flatten at the top
        y = np.eye(10, dtype=np.float32)[np.random.default_rng(1).integers(0, 10, len(x))]
        losses = []
        for K, model in ((kk, kiln_model), (keras, keras_model)):
            model.compile(optimizer=K.optimizers.SGD(learning_rate=0.01),
                          loss=K.losses.CategoricalCrossentropy(from_logits=True))
            losses.append(model.fit(x, y, batch_size=len(x), epochs=1, shuffle=False,
                                    verbose=0).history["loss"][0])
        assert losses[0] == pytest.approx(float(losses[1]), rel=1e-4), "training loss"
        assert_step_close(kiln_model, kiln_initial, kiln_model.get_weights(),
                          keras_model.get_weights(), name)


@pytest.fixture
def fast_kiln_init(monkeypatch):
    """Zeros in place of the random draws: the structure tests never look at the values, and
    drawing Keras's exact values for EfficientNetV2L's 118M weights takes most of a minute."""
    from kiln.keras.initializers import jax_draws

    def zeros(seed, shape, *args):
        return np.zeros(shape, np.float32)

    for draw in ("uniform", "normal", "truncated_normal"):
        monkeypatch.setattr(jax_draws, draw, zeros)


# Keras 3.15's models, include_top=False on (32, 32, 3) unless given: (layers, weights,
# parameters, the first 16 hex digits of the sha256 of "path:shape" of every weight in order,
# joined by "|")
KERAS_STRUCTURE = {
    ("mobilenet", "MobileNet", (("alpha", 0.75), ("depth_multiplier", 2))): (
        86, 135, 3647352, "61f77384305b2818"),
    ("mobilenet_v3", "MobileNetV3Large", ()): (187, 262, 2996352, "4b1c79980d25b52b"),
    ("mobilenet_v3", "MobileNetV3Large", (("minimalistic", True),)): (
        139, 230, 1437608, "2bc2c1959b097637"),
    ("mobilenet_v3", "MobileNetV3Small", (("include_preprocessing", False),
                                          ("minimalistic", True))): (
        102, 170, 441000, "2c5cd900fbf45de4"),
    ("mobilenet_v3", "MobileNetV3Small", (("alpha", 1.5),)): (
        157, 206, 2084792, "3b2e3977ea9b03db"),
    ("efficientnet_v2", "EfficientNetV2B0", (("include_preprocessing", False),)): (
        268, 359, 5919312, "43daeabb838abdb9"),
    # one channel: Rescaling(1/128, offset=-1), not the ImageNet Normalization
    ("efficientnet_v2", "EfficientNetV2B0", (("input_shape", (32, 32, 1)),)): (
        269, 359, 5918736, "f1762a4060ba61a6"),
    ("efficientnet_v2", "EfficientNetV2B1", ()): (334, 441, 6931124, "30b1e1490bda025d"),
    ("efficientnet_v2", "EfficientNetV2B2", ()): (349, 460, 8769374, "a3aed604d756b0b3"),
    ("efficientnet_v2", "EfficientNetV2B3", ()): (409, 536, 12930622, "770970fe2c4c3d21"),
    ("efficientnet_v2", "EfficientNetV2S", ()): (513, 670, 20331360, "08bc2cf13dbc5ece"),
    ("efficientnet_v2", "EfficientNetV2M", ()): (740, 961, 53150388, "25b9c98caeca48a6"),
    ("efficientnet_v2", "EfficientNetV2L", ()): (1028, 1329, 117746848, "1d7f659cfbf03bc6"),
}


@pytest.mark.parametrize("case", list(KERAS_STRUCTURE),
                         ids=lambda case: case[1] + "".join(f"-{k}={v}" for k, v in case[2]))
def test_other_variants_have_keras_structure(case, fast_kiln_init):
    module, name, arguments = case
    kk.backend.clear_session(free_memory=False)  # automatic names ('rescaling') as recorded
    arguments = {"include_top": False, "weights": None, "input_shape": (32, 32, 3),
                 **dict(arguments)}
    model = getattr(getattr(kk.applications, module), name)(**arguments)
    description = "|".join(f"{w.path}:{tuple(w.shape)}" for w in model.weights)
    digest = hashlib.sha256(description.encode()).hexdigest()[:16]
    assert (len(model.layers), len(model.weights), model.count_params(), digest) == (
        KERAS_STRUCTURE[case])
