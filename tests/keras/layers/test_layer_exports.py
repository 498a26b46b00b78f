"""`keras.layers` exports every layer its package defines, under Keras's names: a new layer is
one file in kiln/keras/layers (nothing to register), and nothing else leaks into the API."""

import importlib
import pkgutil

from keras_oracle import real_keras

import kiln.keras.layers as layers

EXPORTED = [
    "Activation", "ActivityRegularization", "Add", "Average", "AveragePooling2D", "AvgPool2D",
    "BatchNormalization", "Bidirectional", "Concatenate", "Conv1D", "Conv2D", "Conv2DTranspose",
    "Convolution1D", "Convolution2D", "Convolution2DTranspose", "Cropping2D", "Dense",
    "AlphaDropout", "DepthwiseConv2D", "Dropout", "ELU", "Embedding", "Flatten", "GRU",
    "GaussianDropout",
    "GaussianNoise", "GlobalAveragePooling2D", "GlobalAvgPool2D", "GlobalMaxPool2D",
    "GlobalMaxPooling2D", "Identity", "Input", "InputLayer", "LSTM", "Lambda", "Layer",
    "LeakyReLU", "Masking", "MaxPool2D",
    "MaxPooling2D", "Maximum", "Minimum", "Multiply", "Normalization", "PReLU", "Permute",
    "ReLU", "Rescaling", "Reshape", "SeparableConv2D", "SeparableConvolution2D", "SimpleRNN",
    "Softmax",
    "SpatialDropout2D", "Subtract", "SyncBatchNormalization", "UpSampling2D", "ZeroPadding2D",
    "add", "average", "concatenate", "maximum", "minimum", "multiply", "subtract",
]
# the 1D (sequence) layers
EXPORTED += [
    "AveragePooling1D", "AvgPool1D", "Conv1DTranspose", "Convolution1DTranspose",
    "DepthwiseConv1D", "SeparableConv1D", "SeparableConvolution1D",
    "GlobalAveragePooling1D", "GlobalAvgPool1D",
    "Cropping1D", "GlobalMaxPool1D", "GlobalMaxPooling1D", "MaxPool1D", "MaxPooling1D",
    "RepeatVector", "SpatialDropout1D", "UpSampling1D", "ZeroPadding1D",
]
# the normalizations of transformers and image models
EXPORTED += ["GroupNormalization", "LayerNormalization", "RMSNormalization",
             "UnitNormalization"]
# wrappers
EXPORTED += ["TimeDistributed"]
# the RNN wrapper and its cells
EXPORTED += ["RNN", "SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells"]
# attention
EXPORTED += ["AdditiveAttention", "Attention", "Dot", "EinsumDense", "MultiHeadAttention",
             "dot", "GroupQueryAttention", "GroupedQueryAttention"]
# image preprocessing and augmentation (docs/augmentation.md)
EXPORTED += ["CenterCrop", "CutMix", "MixUp", "RandomBrightness", "RandomContrast", "RandomCrop",
             "RandomErasing", "RandomFlip", "RandomGrayscale", "RandomRotation", "RandomShear",
             "RandomTranslation", "RandomZoom", "Resizing"]
KERAS_2_ONLY = {"SyncBatchNormalization"}  # tf.keras's name; Keras 3 folds it into BatchNorm
# Keras's class name of keras.layers.GroupQueryAttention: configs it saves name the class
KERAS_CLASS_NAMES = {"GroupedQueryAttention"}


def test_the_api_is_what_the_layer_modules_export():
    assert sorted(layers.__all__) == sorted(EXPORTED)
    for name in EXPORTED:
        assert getattr(layers, name) is not None


def test_every_public_layer_class_of_the_package_is_exported():
    for info in pkgutil.iter_modules(layers.__path__):
        module = importlib.import_module(f"kiln.keras.layers.{info.name}")
        for name, value in vars(module).items():
            if (isinstance(value, type) and issubclass(value, layers.Layer)
                    and value.__module__ == module.__name__ and not name.startswith("_")):
                assert getattr(layers, name) is value, f"{info.name}.{name} is not exported"


def test_every_exported_name_is_a_keras_name():
    keras = real_keras()
    missing = [name for name in EXPORTED
               if name not in KERAS_2_ONLY | KERAS_CLASS_NAMES
               and not hasattr(keras.layers, name)]
    assert missing == []
