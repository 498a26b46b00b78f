"""Every graph rewrite kiln applies before planning, as one table.

`fuse(graph, RULES, plan, heads)` (rewrite.py) applies the entries that are for `plan`, in
this order: the first rule accepting a pair wins, so the order is part of what the plans are.
A model plans with `model._plan_rules` (this table; tests plan without some entries, see
`without`). What each function matches is in fusion.py and loss_head_rules.py.
"""

from . import fusion, loss_head_rules
from .rewrite import BOTH, INFERENCE, LOSS_HEAD, MERGE, PAIR, Rule, fuse

RULES = (
    Rule("activation into conv/dense",
         "Conv2D / Dense without activation, then Activation(relu | tanh | sigmoid | ...: the "
         "ones whose backward reads their output)",
         BOTH, PAIR, fusion.fold_activation),
    Rule("relu into batch norm/add",
         "BatchNorm (fuse_norm_relu) or Add without activation, then Activation('relu')",
         BOTH, PAIR, fusion.fold_relu),
    Rule("max pool + dropout",
         "a 2x2/2 'valid' max Pooling2D, then a Dropout that drops something",
         BOTH, PAIR, fusion.fold_pool_dropout),
    Rule("channel affine",
         "x * per-channel scale then + the same layer's per-channel shift, or a per-channel "
         "add / multiply / ChannelAffine then Activation('relu')",
         BOTH, PAIR, fusion.fold_channel_affine),
    Rule("channel affine into conv",
         "a plain Conv2D without activation, then a ChannelAffine over its filters",
         BOTH, PAIR, fusion.fold_conv_channel_affine),
    # inference only: training needs the batch statistics, the input of the activations
    # listed below, and the Add's backward feeding both of its branches
    Rule("batch norm into conv",
         "Conv2D without activation, then BatchNorm (its moving statistics as post-ops)",
         INFERENCE, PAIR, fusion.fold_batch_norm),
    Rule("any activation into conv/dense",
         "Conv2D / Dense without activation, then any activation with oneDNN post-ops "
         "(gelu, silu, mish, hard_silu, ...)",
         INFERENCE, PAIR, fusion.fold_activation_for_inference),
    Rule("residual add into conv",
         "Add(a, Conv2D without activation (x)) [+ relu] where `a` may be overwritten -> "
         "Conv2DResidual(x, a) with a sum post-op",
         INFERENCE, MERGE, fusion.fold_residual_add),
    # plans with losses (training and evaluation) only: they need the output's loss head
    Rule("loss head applies final activation",
         "a model output computed by Activation(softmax | sigmoid), or a Softmax over the last "
         "axis of (batch, classes), that its cross-entropy head can apply, read by no one else",
         BOTH, LOSS_HEAD, loss_head_rules.head_applies_final_activation),
    Rule("loss head takes dense activation",
         "a model output computed by a Dense whose activation its cross-entropy head can "
         "apply, read by no one else",
         BOTH, LOSS_HEAD, loss_head_rules.head_takes_dense_activation),
)

NAMES = tuple(rule.name for rule in RULES)


def fuse_heads(graph, heads):
    """`graph` with the table's loss-head rules applied for `heads` ({output index: loss
    head}): for a plan made from a graph no model rewrote for its losses (StepPlan)."""
    return fuse(graph, [rule for rule in RULES if rule.kind == LOSS_HEAD], heads=heads)


def named(*names, rules=RULES):
    """The entries of `rules` called `names`, in table order (a KeyError names a typo)."""
    return tuple(rule for rule in rules if rule.name in _known(names, rules))


def without(*names, rules=RULES):
    """`rules` without the entries called `names` (plans compared with a rule left out)."""
    return tuple(rule for rule in rules if rule.name not in _known(names, rules))


def _known(names, rules):
    unknown = set(names) - {rule.name for rule in rules}
    if unknown:
        raise KeyError(f"no graph rule named {sorted(unknown)}; the rules: "
                       f"{[rule.name for rule in rules]}")
    return set(names)
