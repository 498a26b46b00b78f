"""Keras 2 scripts import layers from per-family modules (`keras.layers.core`,
`.recurrent`, ...); each must give the same classes as `keras.layers`, and must not add
entries to `keras.layers.__all__`."""

import importlib

import pytest

from kiln.keras import layers

KERAS2_MODULES = {
    "core": ["Dense", "Activation", "Dropout", "Flatten", "Reshape", "Permute",
             "RepeatVector", "Lambda", "ActivityRegularization", "Masking",
             "SpatialDropout1D", "SpatialDropout2D"],
    "embeddings": ["Embedding"],
    "recurrent": ["SimpleRNN", "GRU", "LSTM", "RNN", "SimpleRNNCell", "GRUCell", "LSTMCell",
                  "StackedRNNCells"],
    "convolutional": ["Conv1D", "Conv2D", "Conv2DTranspose", "SeparableConv1D",
                      "SeparableConv2D", "DepthwiseConv2D", "UpSampling1D", "UpSampling2D",
                      "ZeroPadding1D", "ZeroPadding2D", "Cropping1D", "Cropping2D",
                      "Convolution1D", "Convolution2D", "Convolution2DTranspose",
                      "SeparableConvolution1D", "SeparableConvolution2D"],
    "pooling": ["MaxPooling1D", "MaxPooling2D", "AveragePooling1D", "AveragePooling2D",
                "GlobalMaxPooling1D", "GlobalAveragePooling1D", "GlobalMaxPooling2D",
                "GlobalAveragePooling2D"],
    "normalization": ["BatchNormalization"],
    "merge": ["Add", "Concatenate", "Multiply", "Average", "Maximum", "Minimum", "Subtract",
              "Dot", "add", "concatenate", "multiply", "average", "maximum", "minimum",
              "subtract", "dot"],
    "wrappers": ["TimeDistributed", "Bidirectional"],
    "advanced_activations": ["LeakyReLU", "PReLU", "ELU", "ReLU", "Softmax"],
    "noise": ["GaussianNoise", "GaussianDropout", "AlphaDropout"],
}


@pytest.mark.parametrize("module_name", sorted(KERAS2_MODULES))
def test_keras2_layer_module_gives_the_same_classes(module_name):
    module = importlib.import_module(f"kiln.keras.layers.{module_name}")
    for name in KERAS2_MODULES[module_name]:
        assert getattr(module, name) is getattr(layers, name), f"{module_name}.{name}"


def test_keras2_paths_add_nothing_to_the_layer_list():
    assert len(layers.__all__) == len(set(layers.__all__))


def test_keras2_deconvolution_names_are_conv2d_transpose():
    from kiln.keras.layers import convolutional

    assert convolutional.Deconvolution2D is convolutional.Deconv2D is layers.Conv2DTranspose
