"""BroadcastBinaryOp's shape rule and what its forward and backward share: the operations,
their oneDNN binary algorithms, numpy's broadcast over logical dims, the Keras-order layout,
and the binary primitive of one operation."""

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import MemoryDesc
from .tensor import CHANNELS_LAST

COMPARISONS = ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal")
OPERATIONS = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
              *COMPARISONS)
ALGORITHMS = {"add": dnnl.binary_add, "subtract": dnnl.binary_sub,
              "multiply": dnnl.binary_mul, "divide": dnnl.binary_div,
              "maximum": dnnl.binary_max, "minimum": dnnl.binary_min,
              "equal": dnnl.binary_eq, "not_equal": dnnl.binary_ne,
              "greater": dnnl.binary_gt, "greater_equal": dnnl.binary_ge,
              "less": dnnl.binary_lt, "less_equal": dnnl.binary_le}
# ops whose operands may be swapped so the full-size one is oneDNN's src0 (subtract too, with
# the result negated by a post-op; an order comparison as its mirror image, x0 > x1 = x1 < x0)
SWAPPABLE = {"add", "multiply", "maximum", "minimum", "subtract", *COMPARISONS}
MIRRORED = {"greater": "less", "less": "greater", "greater_equal": "less_equal",
            "less_equal": "greater_equal"}


def broadcast_dims(label, first, second):
    """numpy's broadcast of two logical dims of equal rank (None: an unknown batch)."""
    first, second = tuple(first), tuple(second)
    result = []
    if len(first) == len(second):
        for a, b in zip(first, second, strict=True):
            if a == b or b == 1 or b is None and a != 1:
                result.append(a)
            elif a == 1 or a is None:
                result.append(b)
            else:
                break
        else:
            return tuple(result)
    raise ValueError(f"{label}: shapes {first} and {second} do not broadcast (axes must be "
                     "equal or 1, ranks equal)")


def plain_desc(dims, data_format, data_type=dnnl.f32):
    """The row-major layout in Keras' order: nhwc for 4D channels_last, else abcd..."""
    tag = dnnl.acdb if len(dims) == 4 and data_format == CHANNELS_LAST else None
    return MemoryDesc.with_tag(dims, data_type, tag)


EMPTY = np.zeros(0, np.float32)  # a kernel's absent array argument


def binary_primitive(builder, operation, desc, small_desc, post, label):
    alg = ALGORITHMS[operation]

    return builder.primitive(*descriptor(
        "dnnl_binary_primitive_desc_create", "binary", f"{label} {desc} {operation} {small_desc}",
        alg, desc, small_desc, desc, post_ops=post))
