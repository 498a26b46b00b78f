"""How the graph rewrites are applied: `fuse(graph, rules, plan, heads)` over a table of Rules.

The rules themselves and their order are in rules.py; what each one matches is in fusion.py
(ops folded into ops) and loss_head_rules.py (a loss head taking over the model's final
activation). A rule is a plain function of the ops it looks at; this module finds where it
may apply and rewrites the nodes, so every rule obeys the same conditions:

- a producer is folded into its consumer only where its output has exactly one reader and is
  not a model output (otherwise someone else still needs the unfused tensor);
- a loss head takes over the op computing its output only where nothing else reads that
  output (no other op, no other model output).

Rules run in three passes because each kind needs the previous ones done: one-input pairs
(tried in table order, the first rule accepting a pair wins), then several-input merges (a
batch norm is folded into its convolution and a relu into its add before the add is folded
into a convolution), again until nothing changes; then the loss heads, which need the final
producer of each output (a DenseOp that has absorbed the sigmoid after it).
"""

from dataclasses import dataclass

from ..ops import Conv2DOp
from ..ops.conv2d_residual import Conv2DResidualOp
from .symbolic import Node
from .topology import Graph

PAIR, MERGE, LOSS_HEAD = "pair", "merge", "loss head"
TRAINING, INFERENCE, BOTH = "training", "inference", "both"


@dataclass(frozen=True)
class Rule:
    """One graph rewrite.

    Attributes:
        name: how tests and diagnostics name it (unique in the table).
        pattern: what it matches, in words.
        plans: TRAINING, INFERENCE or BOTH: the plans it applies to (evaluation plans run the
            inference forward, so they take the INFERENCE rules).
        kind: PAIR: function(producer op, consumer op) -> merged op or None;
              MERGE: function(producer ops per input, consumer op, writable) ->
                     (merged op, position of the absorbed input) or None;
              LOSS_HEAD: function(op, output tensor, head) -> None, READ_INPUT (the head
                     reads the op's input and applies the op itself) or the op to plan in
                     its place (the head applies what was taken out of it).
        function: the rule.
    """

    name: str
    pattern: str
    plans: str
    kind: str
    function: object

    def applies_to(self, plan):
        return self.plans in (BOTH, plan)


# a loss-head rule's answer: drop the node, the head reads its input
READ_INPUT = "read input"


@dataclass(frozen=True)
class FusedHead:
    """What a loss-head rule did to one output: `taken` is the node of the graph before the
    rewrite the head took over; `node` the node planned in its place (an op with its
    activation taken out), or None when the head reads `taken`'s input instead."""

    rule: str
    taken: Node
    node: Node = None


def fuse(graph, rules, plan="training", heads=None):
    """A new Graph with the `rules` (Rule entries) for `plan` ('training' or 'inference')
    applied; `heads` ({output index: loss head}, for a plan with losses) for the loss-head
    rules, which are not applied without (the graph's `fused_heads` then stays None). The
    traced graph is not modified."""
    if plan not in (TRAINING, INFERENCE):
        raise ValueError(f"fuse: plan must be 'training' or 'inference', got {plan!r}")
    if heads is not None and graph.fused_heads is not None:
        # a second pass would take the activation before the one a head already applies
        raise ValueError("fuse: the loss-head rules have already run on this graph")
    rules = [rule for rule in rules if rule.applies_to(plan)]
    nodes = list(graph.nodes)
    outputs = {id(t) for t in graph.ends}
    single = [rule.function for rule in rules if rule.kind == PAIR]
    merging = [rule.function for rule in rules if rule.kind == MERGE]
    while _fold_once(nodes, outputs, single) or _fold_merge_once(nodes, outputs, merging):
        pass
    fused = graph.with_nodes(nodes)
    if heads is None:
        return fused
    return _fuse_heads(fused, [rule for rule in rules if rule.kind == LOSS_HEAD], heads)


def _absorbable(nodes, outputs):
    """{tensor id: its producer node} for tensors read by exactly one node and not a model
    output: the producers a rule may fold into their consumer."""
    readers = {}
    for node in nodes:
        for tensor in node.inputs:
            readers[id(tensor)] = readers.get(id(tensor), 0) + 1
    return {id(node.output): node for node in nodes
            if readers.get(id(node.output)) == 1 and id(node.output) not in outputs}


def _fold_once(nodes, outputs, rules):
    """Fold the first (producer, one-input consumer) pair a rule accepts; True if one was."""
    producer_of = _absorbable(nodes, outputs)
    for index, node in enumerate(nodes):
        if len(node.inputs) != 1 or id(node.inputs[0]) not in producer_of:
            continue
        producer = producer_of[id(node.inputs[0])]
        for rule in rules:
            merged = rule(producer.op, node.op)
            if merged is not None:
                nodes[index] = Node(merged, producer.inputs, node.output)
                nodes.remove(producer)
                return True
    return False


# ops whose output is a buffer of their own (never a view of an input, as Flatten's or an
# inference Dropout's is), so overwriting it changes no other tensor
_OWN_OUTPUT = (Conv2DOp, Conv2DResidualOp)


def _overwritable(tensor, index, nodes, outputs, absorbed):
    """Whether node `index` may write over `tensor`: it has a buffer of its own, is no model
    output, every other reader runs before node `index`, and `absorbed` (the producer the
    fold moves to node `index`) does not read it."""
    producer = next((node for node in nodes if node.output is tensor), None)
    if (producer is None or not isinstance(producer.op, _OWN_OUTPUT)
            or id(tensor) in outputs or any(t is tensor for t in absorbed.inputs)):
        return False
    return all(position < index for position, node in enumerate(nodes)
               if any(t is tensor for t in node.inputs) and position != index)


def _fold_merge_once(nodes, outputs, rules):
    """Fold the first producer of a several-input consumer a rule accepts: the merged op
    reads the producer's inputs, then the consumer's other inputs in order."""
    producer_of = _absorbable(nodes, outputs)
    for index, node in enumerate(nodes):
        if len(node.inputs) != 2:
            continue
        producers = [producer_of.get(id(t)) for t in node.inputs]
        ops = [None if p is None or len(p.inputs) != 1 else p.op for p in producers]
        writable = [producers[1 - i] is not None and _overwritable(
            t, index, nodes, outputs, producers[1 - i]) for i, t in enumerate(node.inputs)]
        for rule in rules:
            folded = rule(ops, node.op, writable)
            if folded is not None:
                merged, position = folded
                producer = producers[position]
                others = tuple(t for i, t in enumerate(node.inputs) if i != position)
                nodes[index] = Node(merged, tuple(producer.inputs) + others, node.output)
                nodes.remove(producer)
                return True
    return False


def _fuse_heads(graph, rules, heads):
    """The graph whose output i is what head i reads: each head's rewrite is decided on
    `graph` (so one head's rewrite cannot make another's output look unshared), then all are
    applied; the Graph's `fused_heads` records them per output index."""
    producers = {id(node.output): node for node in graph.nodes}
    replaced, dropped, outputs, fused = {}, set(), list(graph.outputs), {}
    for index, head in heads.items():
        tensor = graph.outputs[index]
        node = producers.get(id(tensor))
        # a tensor read by an op, or that is two of the model's outputs, is needed as it is
        if (node is None or graph.consumers.get(id(tensor))
                or sum(t is tensor for t in graph.outputs) > 1):
            continue
        for rule in rules:
            answer = rule.function(node.op, tensor, head)
            if answer is None:
                continue
            if answer is READ_INPUT:
                dropped.add(id(node))
                outputs[index] = node.inputs[0]
                fused[index] = FusedHead(rule.name, node)
            else:
                replaced[id(node)] = Node(answer, node.inputs, node.output)
                fused[index] = FusedHead(rule.name, node, replaced[id(node)])
            break
    nodes = [replaced.get(id(node), node) for node in graph.nodes if id(node) not in dropped]
    return Graph(graph.inputs, outputs, nodes, fused_heads=fused,
                 output_masks=graph.output_masks, added_losses=graph.added_losses,
                 loss_inputs=graph.loss_inputs, observed=graph.observed)
