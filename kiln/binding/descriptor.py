"""A primitive descriptor's arguments, once: the cache key and the creating call both come
from them, so the two cannot drift apart (a key that left out an argument would hand one
shape's primitive to another).

    spec = descriptor("dnnl_convolution_forward_primitive_desc_create",
                      "convolution forward", shapes, kind, alg, src, weights, bias, dst,
                      strides, dilates, pad_l, pad_r, post_ops=post_ops)
    primitive = builder.primitive(*spec)

Arguments are passed as they are meant: a MemoryDesc (keyed by its layout), a tuple of ints
(oneDNN dims), a PrimitiveDesc made by a descriptor (a backward's forward hint, keyed by its
own key), None, or a number. The attribute (post-ops, else the shared default) goes last, as
every `*_primitive_desc_create` call takes it.
"""

from .memory import MemoryDesc, layout_key, to_dims
from .post_ops import NONE
from .primitive import Attributes, PrimitiveDesc, default_attributes


def _key_of(argument):
    if isinstance(argument, MemoryDesc):
        return layout_key(argument)
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
