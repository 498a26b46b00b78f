"""Keras 2's `keras.layers.convolutional` path (old scripts import from it);
the layers live in their own modules.
`__all__` is empty so `keras.layers` does not list them twice."""

from .conv1d import Conv1D, Convolution1D  # noqa: F401
from .conv2d import Conv2D, Convolution2D  # noqa: F401
from .conv2d_transpose import Conv2DTranspose, Convolution2DTranspose  # noqa: F401
from .cropping1d import Cropping1D  # noqa: F401
from .cropping2d import Cropping2D  # noqa: F401
from .depthwise_conv2d import DepthwiseConv2D  # noqa: F401
from .separable_conv1d import SeparableConv1D, SeparableConvolution1D  # noqa: F401
from .separable_conv2d import SeparableConv2D, SeparableConvolution2D  # noqa: F401
from .up_sampling1d import UpSampling1D  # noqa: F401
from .up_sampling2d import UpSampling2D  # noqa: F401
from .zero_padding1d import ZeroPadding1D  # noqa: F401
from .zero_padding2d import ZeroPadding2D  # noqa: F401

# Keras 2.2's other names of Conv2DTranspose (only on this path, as there)
Deconvolution2D = Deconv2D = Conv2DTranspose

__all__ = []
