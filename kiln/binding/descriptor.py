"""A primitive descriptor's arguments, once: the cache key and the creating call both come
from them, so the two cannot drift apart (a key that left out an argument would hand one
shape's primitive to another).

    spec = descriptor("dnnl_convolution_forward_primitive_desc_create",
                      "convolution forward", shapes, kind, alg, src, weights, bias, dst,
                      strides, dilates, pad_l, pad_r, post_ops=post_ops)
    primitive = builder.primitive(*spec)

Arguments are passed as they are meant: a MemoryDesc (keyed by its layout and, for a window
of a larger buffer, its offset: a primitive is made for one offset), a tuple of ints
(oneDNN dims), a PrimitiveDesc made by a descriptor (a backward's forward hint, keyed by its
own key), None, or a number. The attribute (post-ops, else the shared default) goes last, as
every `*_primitive_desc_create` call takes it. The calls that take their arguments in
another order (reorder, sum, concat) have their own functions here, keyed the same way.
"""

from .memory import MemoryDesc, layout_key, to_dims, window_offset
from .post_ops import NONE
from .primitive import (
    Attributes,
    PrimitiveDesc,
    concat_pd,
    default_attributes,
    reorder_pd,
    scaled_reorder_pd,
    sum_pd,
)


def _key_of(argument):
    if isinstance(argument, MemoryDesc):
        offset = window_offset(argument)
        return layout_key(argument) if offset == 0 else (layout_key(argument), "at", offset)
    if isinstance(argument, PrimitiveDesc):
        return argument.key  # set below: only descriptors made here can be hints
    if isinstance(argument, tuple):
        return ("dims", *argument)
    return argument


def _call_form(argument):
    if isinstance(argument, (MemoryDesc, PrimitiveDesc)):
        return argument.handle
    if isinstance(argument, tuple):
        return to_dims(argument)
    return argument


def descriptor(create_function, name, shapes, *arguments, post_ops=NONE):
    """(cache key, function creating the PrimitiveDesc) for `create_function(engine,
    *arguments, attribute)`; `name` starts the key and names the primitive in messages,
    `shapes` (display only) tells which layer it is for."""
    key = (name, *(_key_of(argument) for argument in arguments), post_ops.key)

    def make():
        attributes = Attributes(post_ops) if post_ops else default_attributes()
        pd = PrimitiveDesc(create_function, name, shapes,
                           *(_call_form(argument) for argument in arguments), attributes.handle)
        pd.key = key
        return pd

    return key, make


def _keyed(key, create):
    def make():
        pd = create()
        pd.key = key
        return pd
    return key, make


def reorder_descriptor(source, target, scales_mask=None):
    """(key, make) of a reorder from layout `source` to `target`; with `scales_mask`, the
    source is multiplied by a scale per index of the masked dims (see scaled_reorder_pd)."""
    key = ("reorder", _key_of(source), _key_of(target), scales_mask)
    if scales_mask is None:
        return _keyed(key, lambda: reorder_pd(source, target))
    return _keyed(key, lambda: scaled_reorder_pd(source, target, scales_mask))


def sum_descriptor(target, sources, scales=None):
    """(key, make) of target = sum of `sources` times `scales` (floats, default all 1)."""
    scales = tuple(float(s) for s in scales) if scales is not None else (1.0,) * len(sources)
    key = ("sum", _key_of(target), *(_key_of(source) for source in sources), scales)
    return _keyed(key, lambda: sum_pd(target, sources, list(scales)))


def concat_descriptor(target, axis, sources, shapes):
    """(key, make) of target = `sources` side by side along `axis`."""
    key = ("concat", _key_of(target), axis, *(_key_of(source) for source in sources))
    return _keyed(key, lambda: concat_pd(target, axis, sources, shapes))
