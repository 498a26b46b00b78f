"""Order and check a traced graph: which nodes compute the outputs from the inputs, in an order
where every node comes after the nodes producing its inputs, and who reads each tensor.

The plan compiler needs exactly this: forward in this order, backward in reverse, gradients of
a tensor with several consumers summed, fusion only where a producer has one consumer.
"""


class Graph:
    """Nodes from `inputs` to `outputs` (lists of SymbolicTensors) in topological order.

    Raises ValueError naming the tensor when an output depends on a tensor that is not one of
    the inputs, or when an input does not reach any output.

    `fused_heads` ({output index: rewrite.FusedHead}) says which outputs a loss head reads
    before the final activation it applies itself (the loss-head rules of rules.py): such
    an output is then the activation's input, or a node whose activation was taken out.
    None until the loss-head rules have run on the graph ({} when they fused nothing).

    `added_losses`: tensors the plan sums into the loss (Keras's add_loss), computed from the
    inputs like the outputs; rewrites treat them as outputs (kiln/plan/added_losses.py).

    `loss_inputs`: tensors without a node that only added losses read: the labels and sample
    weights a `compute_loss` override reads (the plan gives each a buffer the trainer fills
    per batch, kiln/plan/loss_inputs.py). `observed`: tensors the trainer reads after the
    step (what a compute_loss override updates a metric with); rewrites keep them too.
    """

    def __init__(self, inputs, outputs, nodes=None, fused_heads=None, output_masks=None,
                 added_losses=(), loss_inputs=(), observed=()):
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.added_losses = list(added_losses)
        self.loss_inputs = list(loss_inputs)
        self.observed = list(observed)
        # the Keras mask of each output (None where it has none): a loss weights the steps
        # of a sequence output by it, so its nodes are planned too
        self.output_masks = (list(output_masks) if output_masks is not None
                             else [getattr(t, "_keras_mask", None) for t in self.outputs])
        if nodes is None:
            roots = (self.outputs + [m for m in self.output_masks if m is not None]
                     + self.added_losses + self.observed)
            nodes = topological_nodes(self.inputs, roots, self.loss_inputs)
        self.nodes = nodes
        self.consumers = consumers(self.nodes)
        self.fused_heads = None if fused_heads is None else dict(fused_heads)

    @classmethod
    def chain(cls, ops, input_tensor):
        """A linear graph applying `ops` in order to `input_tensor` (tests, simple callers)."""
        from .symbolic import apply
        tensor = input_tensor
        for op in ops:
            tensor = apply(op, tensor)
        return cls([input_tensor], [tensor])

    def with_nodes(self, nodes):
        """The same inputs and outputs computed by rewritten `nodes` (fusion)."""
        return Graph(self.inputs, self.outputs, nodes, self.fused_heads, self.output_masks,
                     self.added_losses, self.loss_inputs, self.observed)

    def with_added_losses(self, losses, loss_inputs=(), observed=()):
        """This graph (before any rewrite) with the nodes computing `losses` and `observed`
        too (from the inputs and `loss_inputs`)."""
        return Graph(self.inputs, self.outputs, output_masks=self.output_masks,
                     added_losses=losses, loss_inputs=loss_inputs, observed=observed)

    @property
    def ends(self):
        """The tensors someone outside the graph's nodes reads: outputs, added losses and
        observed tensors."""
        return self.outputs + self.added_losses + self.observed

    @property
    def ops(self):
        return [node.op for node in self.nodes]


def topological_nodes(inputs, outputs, sources=()):
    """The nodes computing `outputs` from `inputs` (each must be used) and `sources` (tensors
    that may go unused), in topological order."""
    input_ids = {id(t) for t in inputs} | {id(t) for t in sources}
    order, done, visiting = [], set(), set()
    for output in outputs:
        if id(output) in input_ids or id(output.node) in done:
            continue
        if output.node is None:
            raise ValueError(f"model output '{output.name}' {output.shape} is not computed from "
                             "the model inputs (pass it as an input or compute it from one)")
        # iterative depth-first search: deep models would overflow Python's recursion limit
        stack = [(output.node, 0)]
        visiting.add(id(output.node))
        while stack:
            node, position = stack.pop()
            if position < len(node.inputs):
                stack.append((node, position + 1))
                tensor = node.inputs[position]
                if id(tensor) in input_ids:
                    continue
                parent = tensor.node
                if parent is None:
                    raise ValueError(
                        f"model output '{output.name}' depends on tensor '{tensor.name}' "
                        f"{tensor.shape}, which is not one of the model inputs "
                        f"{[t.name for t in inputs]}")
                if id(parent) in done:
                    continue
                if id(parent) in visiting:
                    raise ValueError(f"the graph has a cycle through '{tensor.name}'")
                visiting.add(id(parent))
                stack.append((parent, 0))
            else:
                visiting.discard(id(node))
                done.add(id(node))
                order.append(node)
    used = {id(t) for node in order for t in node.inputs} | {id(t) for t in outputs}
    for tensor in inputs:
        if id(tensor) not in used:
            raise ValueError(f"model input '{tensor.name}' {tensor.shape} is not used by any "
                             f"output {[t.name for t in outputs]}")
    return order


def consumers(nodes):
    """id(tensor) -> the nodes reading it, in order (a node reading it twice counts twice)."""
    readers = {}
    for node in nodes:
        for tensor in node.inputs:
            readers.setdefault(id(tensor), []).append(node)
    return readers
