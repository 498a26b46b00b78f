"""Which leading ops of a plan run in sub-batches, and how many images per sub-batch.

The convolutional front of mnist_cnn writes and reads tensors of 11-19 MB per batch of 128:
more than the caches keep between one primitive and the next inside a whole training step, so
the memory-bound work in between (pooling, dropout, relu backward, the first convolution) runs
at DRAM speed. Cut into sub-batches of a few MB, each op's output is still in cache when the
next op reads it; the convolutions themselves run as fast on 8 images as on 128.

Only ops whose `per_image` is true are sliced (see kiln/ops/base.py: today convolutions,
pooling, dropout, activations), from the input up to the first op that is not (one that mixes
images or flattens them); the weight gradients of later sub-batches are added to the first
one's.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc, layout_key
from ..ops import Conv2DOp

# Bytes of the largest activation of one sub-batch: with the call's input beside it, split over
# the two cores, it stays inside each core's 2 MB L2. mnist_cnn gets 8 images (a 4 MB budget,
# 16 images, was slower); cifar10_cnn gets 16 (its whole batch of 32 was no faster).
# Measurements: docs/performance.md, 'Decisions and their measurements'.
BUDGET_BYTES = 2 << 20
# Fewer images than this per call and per-call costs (thread start, weight-gradient
# reductions) outweigh what the caches save.
MIN_IMAGES = 8


def front_chain(graph):
    """The nodes from the first input on, as long as each tensor has one consumer of one
    input: the ops that may run in sub-batches."""
    chain, tensor = [], graph.inputs[0]
    outputs = {id(t) for t in graph.ends}
    while id(tensor) not in outputs:
        readers = graph.consumers.get(id(tensor), [])
        if len(readers) != 1 or len(readers[0].inputs) != 1:
            break
        chain.append(readers[0])
        tensor = readers[0].output
    return chain


def front(ops, input_dims, itemsize):
    """(number of leading per-image ops, bytes of their largest output for one image)."""
    count, largest, dims = 0, 0, tuple(input_dims)
    for op in ops:
        if len(dims) != 4 or not op.per_image:
            break
        dims = op.output_dims(dims)
        largest = max(largest, int(np.prod(dims[1:])) * itemsize)
        count += 1
    return count, largest


def choose(ops, input_dims, itemsize, budget=None):
    """(number of leading ops to slice, images per sub-batch), or (0, batch) for none."""
    budget = BUDGET_BYTES if budget is None else budget
    batch = input_dims[0]
    count, largest = front(ops, input_dims, itemsize)
    # one op alone (a ResNet's first conv before its batch norm) keeps nothing in cache for a
    # next op: slicing it would only add calls
    if (count < 2 or not any(isinstance(op, Conv2DOp) for op in ops[:count])
            or batch * largest <= budget):
        return 0, batch
    images = max((n for n in range(MIN_IMAGES, batch) if batch % n == 0
                  and n * largest <= budget), default=None)
    if images is None:
        return 0, batch
    return count, images


def recomputable(op, input_dims):
    """A convolution with at most 32 multiply-adds per output (mnist_cnn's first: 1 x 3 x 3,
    cifar10_cnn's: 3 x 3 x 3) costs less to run twice than its output costs to keep."""
    if not isinstance(op, Conv2DOp):
        return False
    kh, kw = op.kernel_size
    return input_dims[1] * kh * kw <= 32


class SubBatchUnsupported(Exception):
    """A plan cannot run in sub-batches (a layout that does not keep images back to back)."""


def with_batch(desc, batch):
    """`desc`'s layout for `batch` images (plain or channel-blocked layouts only)."""
    wanted = layout_key(desc)
    dims = desc.dims
    for tag in BATCH_OUTER_TAGS.get(len(dims), ()):
        candidate = MemoryDesc.with_tag(dims, desc.data_type, tag)
        if layout_key(candidate) == wanted:
            return MemoryDesc.with_tag((batch, *dims[1:]), desc.data_type, tag)
    raise SubBatchUnsupported(f"no batch-outermost layout matches {desc}")


BATCH_OUTER_TAGS = {
    2: (dnnl.ab,),
    4: (dnnl.aBcd16b, dnnl.acdb, dnnl.abcd, dnnl.aBcd8b, dnnl.aBcd4b),
}
