"""The labels and sample weights of a batch, given to what a `compute_loss` override reads
of them (the plan's `loss_inputs`, kiln/plan/loss_inputs.py): checked first, so a bad batch
changes no weight, then copied in."""

import numpy as np


def fill_loss_inputs(plan, ys, sample_weights, where):
    """Copy `ys[i]` / `sample_weights[i]` into the plan's loss-input buffers, or raise a
    ValueError naming the argument and the shape compute_loss reads it with."""
    arrays = []
    for (role, index), buffer in plan.loss_inputs:
        given = ys if role == "y" else sample_weights
        argument = role if len(given) == 1 else f"{role}[{index}]"
        array = np.asarray(given[index])
        if role == "y" and array.ndim == 1 and buffer.shape[1:] == (1,):
            array = array.reshape(buffer.shape)  # labels (N,) of an output (None, 1)
        if role == "sample_weight" and array.ndim == 1:
            array = array.reshape(buffer.shape)  # one weight per sample: (N,) as (N, 1)
        if array.shape != buffer.shape:
            expected = (buffer.shape if role == "y"
                        else f"({buffer.shape[0]},) or ({buffer.shape[0]}, 1)")
            what = ("the labels compute_loss reads, shaped like the output it is the "
                    "label of" if role == "y" else "the sample weights compute_loss reads, "
                    "one per sample")
            raise ValueError(f"{where}: argument {argument} must have shape {expected} "
                             f"({what}), got {array.shape}")
        arrays.append((buffer, array))
    for buffer, array in arrays:
        buffer[...] = array
