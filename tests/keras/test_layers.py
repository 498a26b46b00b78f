"""kiln.keras layers: Keras output shapes, configs, weight layouts, numerics against numpy
references (TensorFlow 'same' padding, pooling, Flatten feature order) and error messages."""

import numpy as np
import pytest

from kiln import keras
from kiln.keras.layers import (
    Activation,
    AveragePooling2D,
    Conv2D,
    Dense,
    Dropout,
    Flatten,
    Input,
    InputLayer,
    MaxPooling2D,
)

pytestmark = pytest.mark.usefixtures("kiln_keras_env")

CL, CF = "channels_last", "channels_first"



# -- numpy references (NHWC, Keras kernel layouts) ---------------------------------------------
def same_pads(length, kernel, stride):
    """TensorFlow 'same': output ceil(L / s); the odd padded pixel goes after."""
    out = -(-length // stride)
    total = max((out - 1) * stride + kernel - length, 0)
    return total // 2, total - total // 2


def pad_nhwc(x, kernel, strides, padding, value=0.0):
    if padding == "valid":
        return x
    (top, bottom) = same_pads(x.shape[1], kernel[0], strides[0])
    (left, right) = same_pads(x.shape[2], kernel[1], strides[1])
    return np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=value)


def windows(x, kernel, strides):
    """Yield (i, j, view) with view[n, oh, ow, c] = x[n, oh*sh + i, ow*sw + j, c]."""
    (kh, kw), (sh, sw) = kernel, strides
    out_h = (x.shape[1] - kh) // sh + 1
    out_w = (x.shape[2] - kw) // sw + 1
    for i in range(kh):
        for j in range(kw):
            yield i, j, x[:, i:i + sh * (out_h - 1) + 1:sh, j:j + sw * (out_w - 1) + 1:sw, :]


def conv2d_ref(x, kernel, bias, strides=(1, 1), padding="valid"):
    """x (N, H, W, C), kernel (kh, kw, C, F), bias (F,) -> (N, OH, OW, F), in float64."""
    x = pad_nhwc(np.asarray(x, np.float64), kernel.shape[:2], strides, padding)
    out = None
    for i, j, view in windows(x, kernel.shape[:2], strides):
        term = view @ kernel[i, j].astype(np.float64)
        out = term if out is None else out + term
    return out + bias


def max_pool_ref(x, pool, strides, padding="valid"):
    x = pad_nhwc(np.asarray(x, np.float64), pool, strides, padding, value=-np.inf)
    return np.max(np.stack([v for _, _, v in windows(x, pool, strides)]), axis=0)


def avg_pool_ref(x, pool, strides, padding="valid"):
    """Keras/TensorFlow average pooling: padded cells are not counted."""
    x = np.asarray(x, np.float64)
    ones = np.ones_like(x[..., :1])
    x, ones = (pad_nhwc(a, pool, strides, padding) for a in (x, ones))
    total = sum(v for _, _, v in windows(x, pool, strides))
    count = sum(v for _, _, v in windows(ones, pool, strides))
    return total / count


def dense_ref(x, kernel, bias):
    return np.asarray(x, np.float64) @ kernel + bias


def relu(x):
    return np.maximum(x, 0)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def to_cf(x):
    return np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)))


def to_cl(x):
    return np.ascontiguousarray(np.transpose(x, (0, 2, 3, 1)))


def rng(seed=0):
    return np.random.default_rng(seed)


def hwc_shape(shape_cl, data_format):
    h, w, c = shape_cl
    return (h, w, c) if data_format == CL else (c, h, w)


def test_numpy_references_on_hand_computed_values():
    """The references themselves: tiny cases worked out by hand."""
    x = np.arange(16, dtype=np.float64).reshape(1, 4, 4, 1)
    kernel = np.ones((2, 2, 1, 1))
    assert conv2d_ref(x, kernel, [0.0])[0, :, :, 0].tolist() == [
        [10, 14, 18], [26, 30, 34], [42, 46, 50]]
    # 'same' with stride 2 on 4 pixels and kernel 3: pad 0 before, 1 after (TensorFlow rule).
    assert same_pads(4, 3, 2) == (0, 1) and same_pads(5, 3, 1) == (1, 1)
    same = conv2d_ref(x, np.ones((3, 3, 1, 1)), [1.0], (2, 2), "same")[0, :, :, 0]
    assert same.tolist() == [[0 + 1 + 2 + 4 + 5 + 6 + 8 + 9 + 10 + 1, 2 + 3 + 6 + 7 + 10 + 11 + 1],
                             [8 + 9 + 10 + 12 + 13 + 14 + 1, 10 + 11 + 14 + 15 + 1]]
    assert max_pool_ref(x, (2, 2), (2, 2))[0, :, :, 0].tolist() == [[5, 7], [13, 15]]
    assert max_pool_ref(x[:, :3, :3], (2, 2), (2, 2), "same")[0, :, :, 0].tolist() == [
        [5, 6], [9, 10]]
    assert avg_pool_ref(x[:, :3, :3], (2, 2), (2, 2), "same")[0, :, :, 0].tolist() == [
        [2.5, 4.0], [8.5, 10]]


# -- output shapes ----------------------------------------------------------------------------
# (layer factory taking data_format, Keras input shape as (H, W, C), Keras output as (H, W, C))
SHAPE_CASES = {
    "conv_valid": (lambda f, **k: Conv2D(4, 3, data_format=f, **k), (7, 9, 2), (5, 7, 4)),
    "conv_same": (lambda f, **k: Conv2D(4, 3, padding="same", data_format=f, **k),
                  (7, 9, 2), (7, 9, 4)),
    "conv_valid_s2": (lambda f, **k: Conv2D(4, 3, strides=2, data_format=f, **k),
                      (7, 9, 2), (3, 4, 4)),
    "conv_same_s2": (lambda f, **k: Conv2D(4, 3, strides=2, padding="same", data_format=f, **k),
                     (7, 9, 2), (4, 5, 4)),
    "conv_rect": (lambda f, **k: Conv2D(3, (2, 3), strides=(1, 2), data_format=f, **k),
                  (6, 8, 1), (5, 3, 3)),
    "maxpool_default": (lambda f, **k: MaxPooling2D(data_format=f, **k), (7, 9, 2), (3, 4, 2)),
    "maxpool_same": (lambda f, **k: MaxPooling2D(padding="same", data_format=f, **k),
                     (7, 9, 2), (4, 5, 2)),
    "maxpool_3_s1": (lambda f, **k: MaxPooling2D(3, strides=1, data_format=f, **k),
                     (7, 9, 2), (5, 7, 2)),
    "avgpool_default": (lambda f, **k: AveragePooling2D(data_format=f, **k),
                        (7, 9, 2), (3, 4, 2)),
    "avgpool_rect_same": (lambda f, **k: AveragePooling2D((2, 3), strides=(2, 2), padding="same",
                                                          data_format=f, **k),
                          (7, 9, 2), (4, 5, 2)),
}


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("case", sorted(SHAPE_CASES))
def test_spatial_layer_output_shape(case, data_format):
    make, in_hwc, out_hwc = SHAPE_CASES[case]
    layer = make(data_format, input_shape=hwc_shape(in_hwc, data_format))
    model = keras.Sequential([layer])
    model.build()
    assert layer.output.shape == (None, *hwc_shape(out_hwc, data_format))
    x = rng().random((2, *hwc_shape(in_hwc, data_format)), dtype=np.float32)
    assert model.predict(x).shape == (2, *hwc_shape(out_hwc, data_format))


@pytest.mark.parametrize("data_format", [CL, CF])
def test_flatten_dense_activation_dropout_shapes(data_format):
    layers = [Conv2D(3, 2, input_shape=hwc_shape((5, 4, 2), data_format),
                     data_format=data_format),
              Dropout(0.3), Activation("tanh"), Flatten(data_format=data_format),
              Dense(7), Activation("relu"), Dropout(0.1), Dense(2, activation="softmax")]
    model = keras.Sequential(layers)
    model.build()
    conv_out = hwc_shape((4, 3, 3), data_format)
    assert [layer.output.shape for layer in layers] == [
        (None, *conv_out), (None, *conv_out), (None, *conv_out), (None, 36),
        (None, 7), (None, 7), (None, 7), (None, 2)]
    assert model.predict(np.zeros((3, *hwc_shape((5, 4, 2), data_format)))).shape == (3, 2)


def test_input_layer_and_input_function():
    inp = Input((6, 6, 1), name="pixels")  # Keras 3: a symbolic tensor of its InputLayer
    assert isinstance(inp._keras_history[0], InputLayer) and inp.name == "pixels"
    assert inp.shape == (None, 6, 6, 1)
    model = keras.Sequential([inp, Conv2D(2, 3), Flatten(), Dense(3, activation="softmax")])
    model.build()
    assert model.input.shape == (None, 6, 6, 1)
    # as in Keras 3, a Sequential model's layers do not include its InputLayer
    assert [type(layer).__name__ for layer in model.layers] == ["Conv2D", "Flatten", "Dense"]
    assert model.layers[0].output.shape == (None, 4, 4, 2)
    assert model.predict(np.zeros((4, 6, 6, 1))).shape == (4, 3)
    layer = InputLayer(input_shape=(5,))
    dense = Dense(2)
    keras.Sequential([layer, dense]).build()
    assert dense.kernel.shape == (5, 2)


def test_input_layer_followed_by_channels_first_layers():
    conv = Conv2D(4, 3, data_format=CF)
    model = keras.Sequential([Input((2, 7, 9)), conv])
    assert model.predict(np.zeros((1, 2, 7, 9))).shape == (1, 4, 5, 7)
    assert conv.output.shape == (None, 4, 5, 7)


def test_layers_use_global_image_data_format():
    keras.backend.set_image_data_format(CF)
    conv, pool, flat = Conv2D(4, 3, input_shape=(2, 7, 9)), MaxPooling2D(), Flatten()
    assert conv.data_format == pool.data_format == flat.data_format == CF
    model = keras.Sequential([conv, pool, flat])
    model.build()
    assert pool.output.shape == (None, 4, 2, 3) and flat.output.shape == (None, 24)


# -- configs ----------------------------------------------------------------------------------
CONFIG_LAYERS = {
    "conv": lambda: Conv2D(8, (3, 2), strides=2, padding="SAME", data_format=CF,
                           activation="relu", use_bias=False, kernel_initializer="he_normal",
                           input_shape=(1, 28, 28), name="conv_cfg"),
    "maxpool": lambda: MaxPooling2D((3, 3), strides=(1, 2), padding="same", data_format=CL),
    "avgpool": lambda: AveragePooling2D(2, data_format=CF),
    "dropout": lambda: Dropout(0.25, seed=7),
    "flatten": lambda: Flatten(data_format=CF),
    "dense": lambda: Dense(10, activation="softmax", bias_initializer="ones", input_dim=5),
    "activation": lambda: Activation("tanh"),
    "input": lambda: InputLayer(input_shape=(28, 28, 1)),
}


@pytest.mark.parametrize("case", sorted(CONFIG_LAYERS))
def test_get_config_round_trip(case):
    layer = CONFIG_LAYERS[case]()
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    renamed = type(layer).from_config({**config, "name": "other_name"})
    assert renamed.name == "other_name"
    assert {**renamed.get_config(), "name": config["name"]} == config


def test_get_config_values_are_normalized_like_keras():
    conv = CONFIG_LAYERS["conv"]().get_config()
    assert conv["name"] == "conv_cfg"
    assert conv["filters"] == 8 and tuple(conv["kernel_size"]) == (3, 2)
    assert tuple(conv["strides"]) == (2, 2) and conv["padding"] == "same"
    assert conv["data_format"] == CF and conv["activation"] == "relu"
    assert conv["use_bias"] is False and conv["kernel_initializer"]["class_name"] == "HeNormal"
    assert "batch_input_shape" not in conv  # Keras 3: a Sequential config starts with its Input
    pool = CONFIG_LAYERS["maxpool"]().get_config()
    assert tuple(pool["pool_size"]) == (3, 3) and tuple(pool["strides"]) == (1, 2)
    assert tuple(CONFIG_LAYERS["avgpool"]().get_config()["strides"]) == (2, 2)  # = pool_size
    dense = CONFIG_LAYERS["dense"]().get_config()
    assert dense["units"] == 10 and dense["activation"] == "softmax"
    assert dense["bias_initializer"] == {"module": "keras.initializers", "class_name": "Ones",
                                         "config": {}, "registered_name": None}
    assert CONFIG_LAYERS["dropout"]().get_config()["rate"] == 0.25
    assert Activation(keras.activations.relu).get_config()["activation"] == "relu"


# -- weights ----------------------------------------------------------------------------------
@pytest.mark.parametrize("data_format", [CL, CF])
def test_weight_shapes_are_keras_layouts(data_format):
    conv = Conv2D(5, (3, 2), input_shape=hwc_shape((8, 7, 3), data_format),
                  data_format=data_format)
    conv_no_bias = Conv2D(4, 1, use_bias=False, data_format=data_format)
    dense = Dense(6)
    out = Dense(2, activation="softmax")
    model = keras.Sequential([conv, conv_no_bias, Flatten(data_format=data_format), dense, out])
    assert [w.shape for w in model.get_weights()] == [
        (3, 2, 3, 5), (5,), (1, 1, 5, 4), (4 * 6 * 6, 6), (6,), (6, 2), (2,)]
    assert [w.shape for w in conv.weights] == [(3, 2, 3, 5), (5,)]
    assert conv.kernel.shape == (3, 2, 3, 5) and dense.kernel.shape == (144, 6)
    assert conv.count_params() == 3 * 2 * 3 * 5 + 5 and conv_no_bias.count_params() == 20
    assert model.count_params() == 95 + 20 + 144 * 6 + 6 + 6 * 2 + 2


def test_initializers_follow_keras_fans_and_bias_zeros():
    conv = Conv2D(64, 3, input_shape=(10, 10, 32))
    dense = Dense(10)
    keras.Sequential([conv, Flatten(), dense]).build()
    kernel, bias = conv.get_weights()
    limit = np.sqrt(6.0 / (9 * 32 + 9 * 64))  # glorot_uniform with the receptive field
    assert np.all(np.abs(kernel) <= limit) and np.abs(kernel).max() > 0.9 * limit
    assert np.all(bias == 0)
    assert np.abs(dense.get_weights()[0]).max() <= np.sqrt(6.0 / (8 * 8 * 64 + 10))


def test_set_weights_then_get_weights_round_trip_after_plan_is_built():
    model = keras.Sequential([Conv2D(3, 2, input_shape=(4, 4, 2)), Flatten(), Dense(2)])
    model.predict(np.zeros((1, 4, 4, 2)))  # weights now live in oneDNN's chosen layouts
    values = [rng(1).standard_normal(w.shape).astype(np.float32) for w in model.get_weights()]
    model.set_weights(values)
    for got, expected in zip(model.get_weights(), values):
        np.testing.assert_array_equal(got, expected)
    conv = model.layers[0]
    with pytest.raises(ValueError, match=r"expected shape \(2, 2, 2, 3\)"):
        conv.set_weights([np.zeros((2, 2, 3, 2)), np.zeros(3)])
    with pytest.raises(ValueError, match="expected 2 weight arrays"):
        conv.set_weights([np.zeros((2, 2, 2, 3))])


# -- numerics vs numpy ------------------------------------------------------------------------
def randomize(model, seed):
    values = [rng(seed + i).uniform(-0.5, 0.5, w.shape).astype(np.float32)
              for i, w in enumerate(model.get_weights())]
    model.set_weights(values)
    return values


CONV_CASES = [((3, 3), (1, 1), "valid", (7, 8, 3)), ((3, 3), (1, 1), "same", (7, 8, 3)),
              ((3, 3), (2, 2), "same", (8, 8, 2)), ((3, 3), (2, 2), "same", (7, 9, 2)),
              ((2, 3), (2, 1), "valid", (7, 8, 3)), ((4, 4), (3, 2), "same", (9, 10, 2)),
              ((1, 1), (1, 1), "valid", (5, 5, 16))]


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("kernel_size,strides,padding,in_hwc", CONV_CASES)
def test_conv2d_predict_matches_numpy(kernel_size, strides, padding, in_hwc, data_format):
    conv = Conv2D(5, kernel_size, strides=strides, padding=padding,
                  input_shape=hwc_shape(in_hwc, data_format), data_format=data_format)
    model = keras.Sequential([conv])
    kernel, bias = randomize(model, 10)
    x = rng(2).standard_normal((3, *in_hwc)).astype(np.float32)
    expected = conv2d_ref(x, kernel, bias, strides, padding)
    got = model.predict(x if data_format == CL else to_cf(x))
    got = got if data_format == CL else to_cl(got)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("activation,function", [
    ("relu", relu), ("tanh", np.tanh), ("sigmoid", lambda v: 1 / (1 + np.exp(-v))),
    ("linear", lambda v: v)])
def test_conv2d_fused_activation_matches_numpy(activation, function, data_format):
    model = keras.Sequential([Conv2D(4, 3, padding="same", activation=activation,
                                     input_shape=hwc_shape((5, 6, 2), data_format),
                                     data_format=data_format)])
    kernel, bias = randomize(model, 20)
    x = rng(3).standard_normal((2, 5, 6, 2)).astype(np.float32)
    got = model.predict(x if data_format == CL else to_cf(x))
    got = got if data_format == CL else to_cl(got)
    np.testing.assert_allclose(got, function(conv2d_ref(x, kernel, bias, padding="same")),
                               rtol=1e-4, atol=1e-5)


POOL_CASES = [((2, 2), None, "valid", (6, 6, 3)), ((2, 2), None, "valid", (7, 9, 3)),
              ((2, 2), None, "same", (7, 9, 3)), ((3, 3), (1, 1), "valid", (6, 5, 2)),
              ((3, 3), (2, 2), "same", (8, 7, 2)), ((2, 3), (1, 2), "same", (5, 8, 2))]


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize("pool_size,strides,padding,in_hwc", POOL_CASES)
def test_pooling_predict_matches_numpy(pool_size, strides, padding, in_hwc, mode, data_format):
    cls = MaxPooling2D if mode == "max" else AveragePooling2D
    model = keras.Sequential([cls(pool_size, strides=strides, padding=padding,
                                  input_shape=hwc_shape(in_hwc, data_format),
                                  data_format=data_format)])
    x = rng(4).standard_normal((2, *in_hwc)).astype(np.float32)
    reference = max_pool_ref if mode == "max" else avg_pool_ref
    expected = reference(x, pool_size, strides or pool_size, padding)
    got = model.predict(x if data_format == CL else to_cf(x))
    got = got if data_format == CL else to_cl(got)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_dense_relu_softmax_and_dropout_identity_match_numpy():
    dense1, dense2 = Dense(6, activation="relu", input_shape=(5,)), Dense(4)
    model = keras.Sequential([dense1, Dropout(0.5), dense2, Dropout(0.3),
                              Activation("softmax")])
    k1, b1, k2, b2 = randomize(model, 30)
    x = rng(5).standard_normal((33, 5)).astype(np.float32)
    expected = softmax(dense_ref(relu(dense_ref(x, k1, b1)), k2, b2))
    np.testing.assert_allclose(model.predict(x), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.predict(x[:1]), expected[:1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.predict(x, batch_size=8), expected, rtol=1e-5, atol=1e-6)


def test_dropout_is_identity_in_predict():
    model = keras.Sequential([Dropout(0.9, input_shape=(3, 4, 5), seed=1)])
    x = rng(6).standard_normal((7, 3, 4, 5)).astype(np.float32)
    np.testing.assert_array_equal(model.predict(x), x)


def test_activation_layer_on_4d_and_2d():
    x = rng(7).standard_normal((2, 3, 4, 5)).astype(np.float32)
    for name, function in [("relu", relu), ("tanh", np.tanh)]:
        model = keras.Sequential([Activation(name, input_shape=(3, 4, 5))])
        np.testing.assert_allclose(model.predict(x), function(x), rtol=1e-5, atol=1e-6)
    # Keras' softmax runs over the last axis, for channels_first too.
    for data_format in (CL, CF):
        keras.backend.set_image_data_format(data_format)
        model = keras.Sequential([Activation("softmax", input_shape=(3, 4, 5))])
        np.testing.assert_allclose(model.predict(x), softmax(x), rtol=1e-5, atol=1e-6)
    keras.backend.set_image_data_format(CL)
    flat = x.reshape(2, -1)
    model = keras.Sequential([Activation(keras.activations.sigmoid, input_shape=(60,))])
    np.testing.assert_allclose(model.predict(flat), 1 / (1 + np.exp(-flat)), rtol=1e-5)


def test_flatten_feature_order_matches_keras():
    """Keras transposes a channels_first input to channels_last before flattening: the
    features are (H, W, C)-ordered in both formats."""
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    model = keras.Sequential([Flatten(input_shape=(3, 4, 5), data_format=CL)])
    np.testing.assert_array_equal(model.predict(x), x.reshape(2, -1))
    model = keras.Sequential([Flatten(input_shape=(3, 4, 5), data_format=CF)])
    np.testing.assert_array_equal(model.predict(x), x.transpose(0, 2, 3, 1).reshape(2, -1))


@pytest.mark.parametrize("data_format", [CL, CF])
def test_conv_pool_flatten_dense_matches_numpy(data_format):
    """The dense kernel rows follow Keras' flatten order, (H, W, C) in both formats, although
    kiln reads the 4D activation directly: the same weights give the same predictions."""
    in_hwc = (10, 14, 2)
    model = keras.Sequential([
        Conv2D(6, 3, activation="relu", input_shape=hwc_shape(in_hwc, data_format),
               data_format=data_format),
        Conv2D(5, 3, padding="same", strides=2, data_format=data_format),
        MaxPooling2D(data_format=data_format),
        Dropout(0.4),
        Flatten(data_format=data_format),
        Dense(7, activation="relu"),
        Dense(3, activation="softmax"),
    ])
    k1, b1, k2, b2, k3, b3, k4, b4 = randomize(model, 40)
    assert k3.shape == (2 * 3 * 5, 7)
    x = rng(8).standard_normal((4, *in_hwc)).astype(np.float32)
    h = relu(conv2d_ref(x, k1, b1))
    h = conv2d_ref(h, k2, b2, (2, 2), "same")
    h = max_pool_ref(h, (2, 2), (2, 2))
    features = h.reshape(4, -1)
    expected = softmax(dense_ref(relu(dense_ref(features, k3, b3)), k4, b4))
    got = model.predict(x if data_format == CL else to_cf(x))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("units", [1, 5])
def test_dense_kernel_rows_are_hwc_in_both_formats(data_format, units):
    """Probing Flatten->Dense with one-hot inputs recovers the kernel exactly when its rows are in
    Keras' feature order, (H, W, C) for both data formats."""
    h, w, c = 2, 3, 4
    shape = hwc_shape((h, w, c), data_format)
    model = keras.Sequential([Flatten(input_shape=shape, data_format=data_format),
                              Dense(units, use_bias=False)])
    kernel = rng(9).standard_normal((h * w * c, units)).astype(np.float32)
    model.set_weights([kernel])
    probes = np.eye(h * w * c, dtype=np.float32).reshape(-1, h, w, c)  # probe i: feature i = 1
    if data_format == CF:
        probes = to_cf(probes)
    np.testing.assert_allclose(model.predict(probes), kernel, atol=1e-6)
    # One pixel/channel, seen through both orders.
    x = np.zeros((1, h, w, c), np.float32)
    x[0, 1, 2, 3] = 1.0
    row = (1 * w + 2) * c + 3
    np.testing.assert_allclose(model.predict(x if data_format == CL else to_cf(x))[0],
                               kernel[row], atol=1e-6)


# -- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("make,pattern", [
    (lambda: Conv2D(4, 3, padding="full", name="c_pad"),
     r"Conv2D 'c_pad'.*argument padding.*'full'"),
    (lambda: MaxPooling2D(padding="causal", name="p_pad"),
     r"MaxPooling2D 'p_pad'.*argument padding.*'causal'"),
    (lambda: AveragePooling2D(padding=3, name="a_pad"),
     r"AveragePooling2D 'a_pad'.*argument padding"),
    (lambda: Conv2D(-1, 3, name="c_neg"), r"Conv2D 'c_neg'.*argument filters.*-1"),
    (lambda: Conv2D(0, 3, name="c_zero"), r"Conv2D 'c_zero'.*argument filters"),
    (lambda: Conv2D(4.5, 3, name="c_float"), r"Conv2D 'c_float'.*argument filters"),
    (lambda: Conv2D(4, (3, 3, 3), name="c_ks"), r"Conv2D 'c_ks'.*argument kernel_size"),
    (lambda: Conv2D(4, 3, strides="x", name="c_st"), r"Conv2D 'c_st'.*argument strides"),
    (lambda: Conv2D(4, 3, strides=2, dilation_rate=2, name="c_dil"),
     r"Conv2D 'c_dil'.*strides > 1 .*dilation_rate > 1"),
    (lambda: Conv2D(4, 3, dilation_rate=(1, 0), name="c_dil2"),
     r"Conv2D 'c_dil2'.*argument dilation_rate"),
    (lambda: Conv2D(4, 3, data_format="NHWC", name="c_df"),
     r"Conv2D 'c_df'.*argument data_format.*'NHWC'"),
    (lambda: Flatten(data_format="nchw", name="f_df"), r"Flatten 'f_df'.*argument data_format"),
    (lambda: Dense(2.5, name="d_float"), r"Dense 'd_float'.*argument units.*2\.5"),
    (lambda: Dense("10", name="d_str"), r"Dense 'd_str'.*argument units"),
    (lambda: Dense(0, name="d_zero"), r"Dense 'd_zero'.*argument units"),
    (lambda: Dense(3, activation="sparsemax", name="d_act"),
     r"Dense 'd_act'.*argument activation.*'sparsemax'"),
    (lambda: Conv2D(3, 3, activation="squareplus", name="c_act"),
     r"Conv2D 'c_act'.*argument activation.*'squareplus'"),
    (lambda: Activation("celu", name="act_bad"), r"Activation 'act_bad'.*argument activation"),
    (lambda: Dropout(1.0, name="drop_1"), r"Dropout 'drop_1'.*argument rate"),
    (lambda: Dropout(-0.1, name="drop_neg"), r"Dropout 'drop_neg'.*argument rate"),
    (lambda: Dropout(0.5, noise_shape=(None, 0), name="drop_ns"),
     r"Dropout 'drop_ns'.*argument noise_shape"),
    (lambda: Dense(3, kernel_initializer="lecun_magic", name="d_init"),
     r"Dense 'd_init'.*lecun_magic"),
    (lambda: Dense(3, dtype="float16", name="d_dtype"), r"Dense 'd_dtype'.*argument dtype"),
    (lambda: InputLayer(name="in_none"), r"InputLayer 'in_none'.*argument shape"),
])
def test_bad_constructor_arguments_name_layer_and_argument(make, pattern):
    with pytest.raises(ValueError, match=pattern):
        make()


@pytest.mark.parametrize("cls,args", [(Conv2D, (4, 3)), (Dense, (3,)), (MaxPooling2D, ()),
                                      (Dropout, (0.5,)), (Flatten, ()), (Activation, ("relu",))])
def test_unknown_keyword_argument_is_type_error_naming_class_and_argument(cls, args):
    with pytest.raises(TypeError, match=rf"{cls.__name__}\b.*unexpected keyword.*'kernel_sise'"):
        cls(*args, kernel_sise=3)


def test_unknown_keyword_argument_message_names_the_layer():
    with pytest.raises(TypeError, match=r"Conv2D 'my_conv'.*'kernel_sise'"):
        Conv2D(4, 3, name="my_conv", kernel_sise=3)


def test_numpy_integer_sizes_are_accepted():
    dense = Dense(np.int64(3), input_shape=(4,))
    conv = Conv2D(np.int32(2), np.int64(3), input_shape=(5, 5, 1))
    assert dense.units == 3 and conv.filters == 2 and conv.kernel_size == (3, 3)


def test_input_smaller_than_kernel_names_layer():
    # built at construction, as Keras 3 builds a Sequential model with an input shape
    with pytest.raises(ValueError, match=r"Conv2D 'c_small'.*3x3.*kernel_size"):
        keras.Sequential([Conv2D(4, 5, input_shape=(3, 3, 1), name="c_small")])
    with pytest.raises(ValueError, match=r"MaxPooling2D 'mp_small'.*pool_size"):
        keras.Sequential([MaxPooling2D(4, input_shape=(3, 3, 1), name="mp_small")])


def test_average_pooling_too_small_names_average_pooling():
    with pytest.raises(ValueError, match=r"AveragePooling2D 'ap_small'.*pool_size"):
        keras.Sequential([AveragePooling2D(4, input_shape=(3, 3, 1), name="ap_small")])


def test_mixed_data_formats_are_refused():
    with pytest.raises(ValueError, match=r"MaxPooling2D 'mp_cf'.*data_format"):
        keras.Sequential([Conv2D(2, 3, input_shape=(6, 6, 1), data_format=CL),
                          MaxPooling2D(data_format=CF, name="mp_cf")])


def test_first_layer_needs_input_shape():
    model = keras.Sequential([Dense(3, name="d_first")])
    with pytest.raises(ValueError, match=r"Dense 'd_first'.*input_shape"):
        model.build()
    with pytest.raises(ValueError, match=r"Conv2D 'c_2d'.*4D input"):
        keras.Sequential([Conv2D(2, 3, input_shape=(10,), name="c_2d")]).build()
