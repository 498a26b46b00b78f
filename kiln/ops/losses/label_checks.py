"""Checks of a batch's labels that run before the step: a bad label must stop the batch
before any weight (or moving statistic) changes, with a message naming what was expected.

Class ids are checked by a small kernel (one pass over N values, nothing allocated), so the
check costs nothing next to the step.
"""

import numpy as np

from ..numba_config import SERIAL, njit


@njit(**SERIAL)
def first_bad_class_id(ids, classes):
    """Index of the first id that is not an integer in [0, classes), or -1."""
    for row in range(ids.shape[0]):
        value = ids[row]
        if not (value >= 0 and value < classes and value == np.floor(value)):
            return row
    return -1


def check_class_ids(ids, classes, context, of=" of the batch"):
    """Raise ValueError naming `context` when `ids` (float32 (N,), (N, steps) for a sequence
    output or (N, H, W) for an image) has a bad class id; `of` says what the sample number
    counts in."""
    flat = ids.reshape(-1)
    row = first_bad_class_id(flat, classes)
    if row >= 0:
        sample, *place = np.unravel_index(row, ids.shape)
        where = f"sample {int(sample)}{of}"
        if len(place) == 1:
            where += f", step {int(place[0])},"
        elif place:  # an image output's class ids (batch, H, W)
            where += f", pixel {tuple(int(i) for i in place)},"
        raise ValueError(f"{context}: {where} has class id "
                         f"{float(flat[row])!r}, expected an integer in [0, {classes})")
