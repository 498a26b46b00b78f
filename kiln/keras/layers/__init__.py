"""Keras layers (`keras.layers`)."""

from .activation import Activation
from .activity_regularization import ActivityRegularization
from .base_layer import Layer
from .batch_normalization import BatchNormalization
from .conv1d import Conv1D
from .conv2d import Conv2D
from .conv2d_transpose import Conv2DTranspose
from .cropping2d import Cropping2D
from .dense import Dense
from .depthwise_conv2d import DepthwiseConv2D
from .dropout import Dropout
from .elu import ELU
from .flatten import Flatten
from .gaussian_dropout import GaussianDropout
from .gaussian_noise import GaussianNoise
from .global_pooling import GlobalAveragePooling2D, GlobalMaxPooling2D
from .identity import Identity
from .input_layer import Input, InputLayer
from .lambda_layer import Lambda
from .leaky_relu import LeakyReLU
from .merge import (
                    Add,
                    Average,
                    Concatenate,
                    Maximum,
                    Minimum,
                    Multiply,
                    Subtract,
                    add,
                    average,
                    concatenate,
                    maximum,
                    minimum,
                    multiply,
                    subtract,
)
from .normalization import Normalization
from .permute import Permute
from .pooling import AveragePooling2D, MaxPooling2D
from .prelu import PReLU
from .relu import ReLU
from .rescaling import Rescaling
from .reshape import Reshape
from .separable_conv2d import SeparableConv2D
from .softmax import Softmax
from .spatial_dropout2d import SpatialDropout2D
from .sync_batch_normalization import SyncBatchNormalization
from .up_sampling2d import UpSampling2D
from .zero_padding2d import ZeroPadding2D

Convolution1D = Conv1D
Convolution2D = Conv2D
Convolution2DTranspose = Conv2DTranspose
SeparableConvolution2D = SeparableConv2D
MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D

__all__ = ["Activation", "Add", "AveragePooling2D", "Average", "AvgPool2D",
           "BatchNormalization", "Concatenate", "Conv1D", "Conv2D", "Conv2DTranspose",
           "Convolution1D", "Convolution2D", "Convolution2DTranspose", "Dense",
           "DepthwiseConv2D", "Dropout", "SeparableConv2D", "SeparableConvolution2D",
           "Flatten", "Input", "InputLayer", "Layer", "MaxPool2D", "MaxPooling2D", "Maximum",
           "Minimum", "Multiply", "Subtract", "add", "average", "concatenate", "maximum",
           "minimum", "multiply", "subtract"]
# the activation, pooling, shape and noise layers
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool2D = GlobalMaxPooling2D
__all__ += ["Lambda", "ELU", "GlobalAveragePooling2D", "GlobalAvgPool2D", "GlobalMaxPool2D",
            "GlobalMaxPooling2D", "LeakyReLU", "PReLU", "ReLU", "Softmax", "Cropping2D",
            "Permute", "Reshape", "UpSampling2D", "ZeroPadding2D", "ActivityRegularization",
            "GaussianDropout", "GaussianNoise", "Identity", "Normalization", "Rescaling",
            "SpatialDropout2D"]
# data-parallel training
__all__ += ["SyncBatchNormalization"]
