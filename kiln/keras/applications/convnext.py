"""`keras.applications.convnext`: ConvNeXtTiny, Small, Base, Large and XLarge (Liu et al.,
2022), layer by layer as Keras 3 builds them (keras/src/applications/convnext.py): the
ImageNet Normalization inside the model, a Sequential stem and downsampling blocks, blocks of
a 7x7 depthwise convolution (Conv2D with groups), LayerNormalization over the channels, two
Dense layers on each position (gelu between), LayerScale and a residual add. The same layer
names, weight shapes and order, so Keras's weight files load. channels_last only, as in
Keras."""

import itertools

import numpy as np

from .. import backend, layers
from ..models import Sequential
from . import imagenet_utils
from .application_builder import check_weights, finish, image_input
from .layer_scale import LayerScale
from .stochastic_depth import StochasticDepth

__all__ = ["ConvNeXt", "ConvNeXtTiny", "ConvNeXtSmall", "ConvNeXtBase", "ConvNeXtLarge",
           "ConvNeXtXLarge", "LayerScale", "StochasticDepth", "preprocess_input",
           "decode_predictions"]

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/convnext/"
MODEL_CONFIGS = {
    "tiny": {"depths": [3, 3, 9, 3], "projection_dims": [96, 192, 384, 768]},
    "small": {"depths": [3, 3, 27, 3], "projection_dims": [96, 192, 384, 768]},
    "base": {"depths": [3, 3, 27, 3], "projection_dims": [128, 256, 512, 1024]},
    "large": {"depths": [3, 3, 27, 3], "projection_dims": [192, 384, 768, 1536]},
    "xlarge": {"depths": [3, 3, 27, 3], "projection_dims": [256, 512, 1024, 2048]},
}
_BLOCK_UIDS = itertools.count(1)  # Keras's names of unnamed blocks: prestem1, prestem2...
IMAGENET_MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
IMAGENET_VARIANCE = [(0.229 * 255) ** 2, (0.224 * 255) ** 2, (0.225 * 255) ** 2]


def ConvNeXtBlock(projection_dim, drop_path_rate=0.0, layer_scale_init_value=1e-6,  # noqa: N802
                  name=None):
    """The ConvNeXt block: 7x7 depthwise convolution, LayerNormalization, Dense(4 * dim),
    gelu, Dense(dim), LayerScale, StochasticDepth (or a linear Activation), added to the
    input."""
    if name is None:
        name = f"prestem{next(_BLOCK_UIDS)}"

    def apply(inputs):
        x = layers.Conv2D(filters=projection_dim, kernel_size=7, padding="same",
                          groups=projection_dim, name=f"{name}_depthwise_conv")(inputs)
        x = layers.LayerNormalization(epsilon=1e-6, name=f"{name}_layernorm")(x)
        x = layers.Dense(4 * projection_dim, name=f"{name}_pointwise_conv_1")(x)
        x = layers.Activation("gelu", name=f"{name}_gelu")(x)
        x = layers.Dense(projection_dim, name=f"{name}_pointwise_conv_2")(x)
        if layer_scale_init_value is not None:
            x = LayerScale(layer_scale_init_value, projection_dim,
                           name=f"{name}_layer_scale")(x)
        if drop_path_rate:
            layer = StochasticDepth(drop_path_rate, name=f"{name}_stochastic_depth")
        else:
            layer = layers.Activation("linear", name=f"{name}_identity")
        return inputs + layer(x)

    return apply


def ConvNeXt(depths, projection_dims, drop_path_rate=0.0,  # noqa: N802
             layer_scale_init_value=1e-6, default_size=224, name="convnext",
             include_preprocessing=True, include_top=True, weights=None, input_tensor=None,
             input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
             weights_name=None):
    """The ConvNeXt builder: `depths` blocks of `projection_dims` channels in four stages;
    `drop_path_rate` the stochastic depth of the last block (linearly less before it);
    `include_preprocessing` the ImageNet Normalization of 3-channel inputs (pixels in
    [0, 255]) as the model's first layer."""
    if backend.image_data_format() == "channels_first":
        raise ValueError(f"{name}: ConvNeXt does not support the 'channels_first' image data "
                         "format; use 'channels_last' (keras.config.set_image_data_format)")
    check_weights(weights, include_top, classes, name)
    img_input, input_shape = image_input(input_tensor, input_shape, default_size, include_top,
                                         weights, name)
    if weights == "imagenet":
        expected = MODEL_CONFIGS.get(str(weights_name).split("convnext_")[-1])
        if expected is None or list(depths) != expected["depths"] or (
                list(projection_dims) != expected["projection_dims"]):
            raise ValueError(f"{name}: the architecture does not match the {weights_name} "
                             f"ImageNet weights: depths={list(depths)}, projection_dims="
                             f"{list(projection_dims)}")
        if weights_name not in name:
            raise ValueError(f'{name}: with weights="imagenet" the model name must contain '
                             f'the weights variant "{weights_name}", got name={name!r}')

    x = img_input
    if include_preprocessing and input_shape[2] == 3:
        x = layers.Normalization(mean=IMAGENET_MEAN, variance=IMAGENET_VARIANCE,
                                 name=f"{name}_prestem_normalization")(x)
    stem = Sequential([
        layers.Conv2D(projection_dims[0], kernel_size=4, strides=4, name=f"{name}_stem_conv"),
        layers.LayerNormalization(epsilon=1e-6, name=f"{name}_stem_layernorm"),
    ], name=f"{name}_stem")
    downsample_layers = [stem] + [Sequential([
        layers.LayerNormalization(epsilon=1e-6, name=f"{name}_downsampling_layernorm_{i}"),
        layers.Conv2D(projection_dims[i + 1], kernel_size=2, strides=2,
                      name=f"{name}_downsampling_conv_{i}"),
    ], name=f"{name}_downsampling_block_{i}") for i in range(3)]

    depth_drop_rates = [float(rate) for rate in np.linspace(0.0, drop_path_rate, sum(depths))]
    cur = 0
    for i in range(4):
        x = downsample_layers[i](x)
        for j in range(depths[i]):
            x = ConvNeXtBlock(projection_dim=projection_dims[i],
                              drop_path_rate=depth_drop_rates[cur + j],
                              layer_scale_init_value=layer_scale_init_value,
                              name=f"{name}_stage_{i}_block_{j}")(x)
        cur += depths[i]

    if include_top:
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.GlobalAveragePooling2D(name=f"{name}_head_gap")(x)
        x = layers.LayerNormalization(epsilon=1e-6, name=f"{name}_head_layernorm")(x)
        x = layers.Dense(classes, activation=classifier_activation,
                         name=f"{name}_head_dense")(x)
    else:
        if pooling == "avg":
            x = layers.GlobalAveragePooling2D()(x)
        elif pooling == "max":
            x = layers.GlobalMaxPooling2D()(x)
        x = layers.LayerNormalization(epsilon=1e-6)(x)
    file_name = name + (".h5" if include_top else "_notop.h5")
    return finish(input_tensor, img_input, x, name, weights, file_name, BASE_WEIGHTS_PATH)


def _variant(size):
    def build(include_top=True, include_preprocessing=True, weights="imagenet",
              input_tensor=None, input_shape=None, pooling=None, classes=1000,
              classifier_activation="softmax", name=f"convnext_{size}"):
        config = MODEL_CONFIGS[size]
        return ConvNeXt(config["depths"], config["projection_dims"], drop_path_rate=0.0,
                        layer_scale_init_value=1e-6, default_size=224, name=name,
                        include_preprocessing=include_preprocessing, include_top=include_top,
                        weights=weights, input_tensor=input_tensor, input_shape=input_shape,
                        pooling=pooling, classes=classes,
                        classifier_activation=classifier_activation,
                        weights_name=f"convnext_{size}")

    build.__name__ = build.__qualname__ = f"ConvNeXt{size.capitalize().replace('Xl', 'XL')}"
    build.__doc__ = f"""Instantiates the {build.__name__} architecture.

    Args (as Keras): include_top (the classifier head), include_preprocessing (the ImageNet
    Normalization as the first layer: inputs are pixels in [0, 255]), weights (None,
    'imagenet': Keras's file from the Keras cache, or a path), input_tensor, input_shape (at
    least 32x32), pooling (None, 'avg' or 'max' without the head, then a
    LayerNormalization), classes, classifier_activation, name."""
    return build


ConvNeXtTiny = _variant("tiny")
ConvNeXtSmall = _variant("small")
ConvNeXtBase = _variant("base")
ConvNeXtLarge = _variant("large")
ConvNeXtXLarge = _variant("xlarge")


preprocess_input = imagenet_utils.module_preprocess_input(None)
decode_predictions = imagenet_utils.decode_predictions
