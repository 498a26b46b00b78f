"""Sub-batch eligibility reads `op.per_image` (kiln/ops/base.py). It replaced an isinstance
list in kiln/plan/sub_batches.py; on the bench models the flag picks exactly the ops that list
did, and the plans (sub-batch size, every call) are the same as with the list."""

import numpy as np
import pytest

from kiln.bench import models
from kiln.ops import ActivationOp, Conv2DOp, DropoutOp, MaxPoolDropoutOp, Pooling2DOp
from kiln.plan import sub_batches


def listed(op):
    """The isinstance list sub_batches.py used before it read `op.per_image`."""
    if isinstance(op, ActivationOp):
        return op.activation != "softmax"
    return isinstance(op, (Conv2DOp, Pooling2DOp, MaxPoolDropoutOp, DropoutOp))


def listed_front(ops, input_dims, itemsize):
    """sub_batches.front as it was with the list."""
    count, largest, dims = 0, 0, tuple(input_dims)
    for op in ops:
        if len(dims) != 4 or not listed(op):
            break
        dims = op.output_dims(dims)
        largest = max(largest, int(np.prod(dims[1:])) * itemsize)
        count += 1
    return count, largest


# images per sub-batch of each model's own batch: the comparison is not only of unsliced plans
SUB_BATCH = {"mnist_cnn": 8, "cifar10_cnn": 16, "resnet20": 0, "mobilenet_v2": 0, "unet": 8}


@pytest.mark.parametrize("name", sorted(SUB_BATCH))
def test_per_image_picks_the_ops_the_isinstance_list_did(name, monkeypatch):
    model, batch = models.built(name)
    for training in (True, False):
        plan = model._plan(training, batch)
        for op in plan.graph.ops:
            assert op.per_image == listed(op), op.name
        model._plans = {}  # the same plan again, built with the list
        with monkeypatch.context() as patch:
            patch.setattr(sub_batches, "front", listed_front)
            listed_plan = model._plan(training, batch)
        model._plans = {}
        assert plan.sub_batch == listed_plan.sub_batch == SUB_BATCH[name]
        assert plan.describe() == listed_plan.describe()
