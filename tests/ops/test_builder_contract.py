"""The op-to-plan contract cannot drift: every member of the builder that code under kiln/ops
reads is declared in kiln.ops.base.Builder, every declared member is read by some op (the
protocol is the whole contract and no more), and PlanBuilder implements each one with the
protocol's signature. Checked statically, from the source."""

import ast
import inspect
from pathlib import Path

import kiln.ops
from kiln.ops.base import Builder
from kiln.plan.builder import PlanBuilder
from kiln.plan.parameters import ParameterStore

OPS = Path(kiln.ops.__file__).parent


def _is_builder(node):
    """`builder` or `self.builder`: the names ops hold the PlanBuilder under."""
    if isinstance(node, ast.Name):
        return node.id == "builder"
    return (isinstance(node, ast.Attribute) and node.attr == "builder"
            and isinstance(node.value, ast.Name) and node.value.id == "self")


class _Uses(ast.NodeVisitor):
    def __init__(self):
        self.found = {}  # member -> "file:line" of a first use

    def visit_FunctionDef(self, node):
        arguments = {a.arg for a in node.args.args}
        # numba code generation (`codegen(context, builder, ...)` and its helpers): there
        # `builder` is llvmlite's IR builder, not the plan's
        if {"context", "builder"} <= arguments:
            return
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if _is_builder(node.value):
            self.found.setdefault(node.attr, f"{self.path}:{node.lineno}")
        self.generic_visit(node)


def members_ops_use():
    uses = _Uses()
    for path in sorted(OPS.rglob("*.py")):
        uses.path = path.relative_to(OPS.parent)
        uses.visit(ast.parse(path.read_text(), str(path)))
    return uses.found


def declared():
    methods = {name for name, value in vars(Builder).items()
               if not name.startswith("_") and callable(value)}
    return methods, set(Builder.__annotations__)


def test_every_member_ops_use_is_declared_and_every_declared_one_is_used():
    used = members_ops_use()
    methods, attributes = declared()
    assert len(used) > 20  # the scan found the ops' builder calls
    undeclared = {name: where for name, where in used.items()
                  if name not in methods | attributes}
    assert not undeclared, f"add these to kiln.ops.base.Builder (with docs): {undeclared}"
    unused = (methods | attributes) - set(used)
    assert not unused, f"no op uses these Builder members: {sorted(unused)}"


def test_every_declared_member_is_documented():
    methods, attributes = declared()
    for name in methods:
        assert inspect.getdoc(getattr(Builder, name)), name
    source = inspect.getsource(Builder)
    for name in attributes:  # an attribute's docstring is the string right after it
        assert f'{name}: ' in source and '"""' in source.split(f"{name}: ", 1)[1].split(
            "\n", 2)[1], name


def test_plan_builder_implements_the_protocol():
    methods, attributes = declared()
    builder = PlanBuilder(ParameterStore(), training=True)
    for name in attributes:
        assert hasattr(builder, name), name
    for name in methods:
        implementation = getattr(PlanBuilder, name, None)
        assert callable(implementation), name
        assert (inspect.signature(implementation).parameters.keys()
                == inspect.signature(getattr(Builder, name)).parameters.keys()), name


class _PrimitiveRequests(ast.NodeVisitor):
    """`builder.primitive(...)` calls whose arguments are not one starred descriptor call."""

    def __init__(self):
        self.hand_built = []

    def visit_Call(self, node):
        if (isinstance(node.func, ast.Attribute) and node.func.attr == "primitive"
                and _is_builder(node.func.value)):
            spread = (len(node.args) == 1 and isinstance(node.args[0], ast.Starred)
                      and isinstance(node.args[0].value, ast.Call))
            if not spread:
                self.hand_built.append(f"{self.path}:{node.lineno}")
        self.generic_visit(node)


def test_ops_take_cache_keys_from_the_descriptor_arguments():
    """A key written by hand beside the creating call can leave out an argument and hand one
    shape's primitive to another: ops spread a (key, make) pair made from one argument list
    (binding/descriptor.py, or conv_family.Primitives, which is built on it)."""
    requests = _PrimitiveRequests()
    for path in sorted(OPS.rglob("*.py")):
        requests.path = path.relative_to(OPS.parent)
        requests.visit(ast.parse(path.read_text(), str(path)))
    assert requests.hand_built == []
