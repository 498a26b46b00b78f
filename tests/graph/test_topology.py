"""kiln.graph.topology: nodes in an order where producers come first, consumers per tensor,
and the errors for outputs that do not come from the inputs."""

import pytest

from kiln.graph.symbolic import SymbolicTensor, apply
from kiln.graph.topology import Graph
from kiln.ops import ActivationOp, AddOp, DenseOp


def test_order_and_consumers():
    x = SymbolicTensor((None, 4), name="x")
    a = apply(DenseOp("a", 3), x)
    b = apply(ActivationOp("b", "relu"), a)
    c = apply(ActivationOp("c", "tanh"), a)
    d = apply(AddOp("d"), [b, c, a])
    graph = Graph([x], [d])
    names = [node.op.name for node in graph.nodes]
    assert names.index("a") < names.index("b") < names.index("d")
    assert names.index("c") < names.index("d")
    assert len(graph.consumers[id(a)]) == 3 and len(graph.consumers[id(x)]) == 1
    assert d.shape == (None, 3)


def test_output_not_from_the_inputs_names_the_tensor():
    x = SymbolicTensor((None, 4), name="x")
    other = SymbolicTensor((None, 4), name="other")
    y = apply(AddOp("sum"), [apply(DenseOp("a", 4), x), other])
    with pytest.raises(ValueError, match="depends on tensor 'other'"):
        Graph([x], [y])
    with pytest.raises(ValueError, match="model input 'other'.*not used"):
        Graph([x, other], [apply(DenseOp("b", 2), x)])
