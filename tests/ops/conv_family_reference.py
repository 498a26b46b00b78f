"""float64 numpy references of the convolution family (Keras semantics), values and gradients.

A dilated and grouped (or depthwise) convolution is the plain convolution of op_checker with
a dense kernel: zeros between the dilated taps and outside each group's block. Its kernel
gradient is that dense gradient read back at the same places. The transposed convolution is
written out as the scatter Keras's definition is (each input pixel adds a kernel-sized patch
at stride spacing), then cropped by Keras's padding rule.
"""

import numpy as np
from op_checker import CHANNELS_LAST, activation_backward, activation_forward, conv2d_reference

from kiln.ops.conv2d_transpose import transpose_padding


def _to_nhwc(x, data_format):
    return x if data_format == CHANNELS_LAST else x.transpose(0, 2, 3, 1)


def _from_nhwc(x, data_format):
    return x if data_format == CHANNELS_LAST else x.transpose(0, 3, 1, 2)


def _dense_kernel_places(kernel_shape, dilation, groups, in_channels):
    """Index arrays mapping a Keras grouped kernel (kh, kw, in/g, out) into the dense
    (span_h, span_w, in, out) kernel."""
    kh, kw, in_per_group, out = kernel_shape
    out_per_group = out // groups
    a, b, c, o = np.meshgrid(np.arange(kh), np.arange(kw), np.arange(in_per_group),
                             np.arange(out), indexing="ij")
    return a * dilation[0], b * dilation[1], (o // out_per_group) * in_per_group + c, o


def grouped_conv2d_reference(x, kernel, bias=None, strides=(1, 1), padding="valid",
                             dilation=(1, 1), groups=1, activation=None,
                             data_format=CHANNELS_LAST, dy=None):
    """Keras Conv2D with dilation_rate and groups (kernel (kh, kw, in/g, out)). Returns y, or
    (y, dx, dkernel, dbias) when dy is given."""
    in_channels = kernel.shape[2] * groups
    kh, kw = kernel.shape[:2]
    span = ((kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1)
    dense = np.zeros((*span, in_channels, kernel.shape[3]))
    places = _dense_kernel_places(kernel.shape, dilation, groups, in_channels)
    dense[places] = kernel
    if dy is None:
        return conv2d_reference(x, dense, bias, strides, padding, activation, data_format)
    y, dx, ddense, dbias = conv2d_reference(x, dense, bias, strides, padding, activation,
                                            data_format, dy=dy)
    return y, dx, ddense[places], dbias


def depthwise_kernel_as_grouped(kernel):
    """Keras DepthwiseConv2D kernel (kh, kw, in, m) as a grouped one (kh, kw, 1, in * m):
    output channel c * m + k reads input channel c."""
    kh, kw, channels, multiplier = kernel.shape
    return kernel.reshape(kh, kw, 1, channels * multiplier)


def depthwise_conv2d_reference(x, kernel, bias=None, strides=(1, 1), padding="valid",
                               dilation=(1, 1), activation=None, data_format=CHANNELS_LAST,
                               dy=None):
    grouped = depthwise_kernel_as_grouped(kernel)
    result = grouped_conv2d_reference(x, grouped, bias, strides, padding, dilation,
                                      kernel.shape[2], activation, data_format, dy)
    if dy is None:
        return result
    y, dx, dkernel, dbias = result
    return y, dx, dkernel.reshape(kernel.shape), dbias


def conv2d_transpose_reference(x, kernel, bias=None, strides=(1, 1), padding="valid",
                               output_padding=None, dilation=(1, 1), activation=None,
                               data_format=CHANNELS_LAST, dy=None):
    """Keras Conv2DTranspose (kernel (kh, kw, filters, in)). Returns y, or
    (y, dx, dkernel, dbias) when dy is given."""
    x = _to_nhwc(x, data_format)
    n, h, w, _ = x.shape
    kh, kw, filters, _ = kernel.shape
    spans = ((kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1)
    pads = [transpose_padding(kernel.shape[i], strides[i], dilation[i], padding,
                              None if output_padding is None else output_padding[i])
            for i in range(2)]
    full = ((h - 1) * strides[0] + spans[0], (w - 1) * strides[1] + spans[1])
    out = [full[i] - pads[i][0] - pads[i][1] for i in range(2)]
    # the full result, with room for negative padding (zeros) on either side
    margin = [(max(-pads[i][0], 0), max(-pads[i][1], 0)) for i in range(2)]
    shape = (n, margin[0][0] + full[0] + margin[0][1], margin[1][0] + full[1] + margin[1][1],
             filters)

    def tap_slices(a, b):
        top = margin[0][0] + a * dilation[0]
        left = margin[1][0] + b * dilation[1]
        return (slice(None), slice(top, top + strides[0] * (h - 1) + 1, strides[0]),
                slice(left, left + strides[1] * (w - 1) + 1, strides[1]))

    z_full = np.zeros(shape)
    for a in range(kh):
        for b in range(kw):
            z_full[tap_slices(a, b)] += np.einsum("nijc,oc->nijo", x, kernel[a, b])
    top = margin[0][0] + pads[0][0]
    left = margin[1][0] + pads[1][0]
    crop = (slice(None), slice(top, top + out[0]), slice(left, left + out[1]))
    z = z_full[crop]
    if bias is not None:
        z = z + bias
    y = activation_forward(activation, z)
    if dy is None:
        return _from_nhwc(y, data_format)
    dz = activation_backward(activation, y, _to_nhwc(dy, data_format))
    dz_full = np.zeros(shape)
    dz_full[crop] = dz
    dx = np.zeros_like(x)
    dkernel = np.zeros_like(kernel)
    for a in range(kh):
        for b in range(kw):
            patch = dz_full[tap_slices(a, b)]
            dx += np.einsum("nijo,oc->nijc", patch, kernel[a, b])
            dkernel[a, b] = np.einsum("nijo,nijc->oc", patch, x)
    return _from_nhwc(y, data_format), _from_nhwc(dx, data_format), dkernel, dz.sum((0, 1, 2))
