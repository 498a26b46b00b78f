"""Class ids of a whole label array, checked before fit / evaluate run their first step.

The per-batch check (batch_steps.py) stops a bad batch before it changes any weight, but the
batches before it have trained by then: a label out of range in the last batch of numpy `y`
left a model half an epoch further on and the run dead. Arrays are known up front, so their
class ids are checked at once (one pass of the same kernel over N values); generators and
PyDatasets are still checked batch by batch, as their batches arrive.
"""

import numpy as np

from ...ops.losses.label_checks import check_class_ids


def check_all_class_ids(model, adapter, owner):
    """Raise the per-batch check's ValueError, sample numbered in the whole of `y`, when the
    labels `adapter` holds as arrays give a sparse loss a bad class id."""
    ys = getattr(adapter, "ys", None)
    entries = model._compile_loss.entries
    if ys is None or entries is None:
        return  # a generator or PyDataset, or labels the batches will refuse anyway
    outputs = model.outputs
    for index, loss, _, name in entries:
        head = loss.engine_head()
        if not head.sparse or index >= len(ys):
            continue
        ids = ys[index]
        # one id per sample, per step of a sequence or per pixel of an image output
        per_sample = tuple(outputs[index].shape[1:-1])
        if ids.ndim == len(per_sample) + 2 and ids.shape[-1] == 1:
            ids = ids.reshape(ids.shape[:-1])
        if ids.ndim != len(per_sample) + 1 or tuple(ids.shape[1:]) != per_sample:
            continue  # the wrong shape: the first batch says what fits
        argument = "y" if len(outputs) == 1 else f"y[{index}]"
        check_class_ids(np.ascontiguousarray(ids, dtype=np.float32),
                        outputs[index].shape[-1],
                        f"{owner}: argument {argument} for loss '{head.name}' on output "
                        f"'{name}'", of="")
