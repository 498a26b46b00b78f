"""Keras layers (`keras.layers`)."""

from .activation import Activation
from .base_layer import Layer
from .conv2d import Conv2D
from .dense import Dense
from .dropout import Dropout
from .flatten import Flatten
from .input_layer import Input, InputLayer
from .pooling import AveragePooling2D, MaxPooling2D

Convolution2D = Conv2D
MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D

__all__ = ["Activation", "AveragePooling2D", "AvgPool2D", "Conv2D", "Convolution2D", "Dense",
           "Dropout", "Flatten", "Input", "InputLayer", "Layer", "MaxPool2D", "MaxPooling2D"]
