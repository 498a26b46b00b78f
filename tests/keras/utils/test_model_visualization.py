"""keras.utils.plot_model / model_to_dot (and Keras 2's `keras.utils.vis_utils` path): without
pydot, a clear error naming what to install; with a small stand-in for pydot, the graph Keras 3
would build (a node per layer labelled with its name and class, shapes with show_shapes, an
edge per connection) and, when Graphviz's `dot` is missing, an error naming Graphviz."""

import sys
import types

import pytest
from keras_oracle import real_keras

from kiln import keras as kk
from kiln.keras.utils import model_visualization, vis_utils


class _Graph:
    def __init__(self, *args, **kwargs):
        self.attributes, self.nodes, self.edges = dict(kwargs), [], []

    def set(self, key, value):
        self.attributes[key] = value

    def set_node_defaults(self, **kwargs):
        self.attributes["node_defaults"] = kwargs

    def add_node(self, node):
        self.nodes.append(node)

    def add_edge(self, edge):
        self.edges.append(edge)

    def get_edge(self, source, target):
        return [e for e in self.edges if (e.source, e.target) == (source, target)]


class _Node:
    def __init__(self, name, label=None):
        self.name, self.label, self.attributes = name, label, {}

    def set(self, key, value):
        self.attributes[key] = value


class _Edge(_Node):
    def __init__(self, source, target):
        super().__init__(f"{source}->{target}")
        self.source, self.target = source, target


def fake_pydot(dot_program_present):
    module = types.ModuleType("pydot")

    class Dot(_Graph):
        def create(self, prog=None, format=None):
            if not dot_program_present:
                raise FileNotFoundError('"dot" not found in path.')
            return b""

        def write(self, path, format="raw"):
            with open(path, "w") as f:
                f.write(f"{format}: " + " ".join(n.label for n in self.nodes))

    module.Dot, module.Cluster, module.Node, module.Edge = Dot, _Graph, _Node, _Edge
    return module


@pytest.fixture
def use_pydot(monkeypatch):
    def install(dot_program_present=True):
        for name in ("pydot", "pydot_ng", "pydotplus"):
            monkeypatch.setitem(sys.modules, name, None)  # `import name` raises ImportError
        monkeypatch.setitem(sys.modules, "pydot", fake_pydot(dot_program_present))
    return install


def residual_model():
    kk.backend.clear_session()
    inputs = kk.Input((4,), name="features")
    a = kk.layers.Dense(3, activation="relu", name="left")(inputs)
    b = kk.layers.Dense(3, name="right")(inputs)
    return kk.Model(inputs, kk.layers.Add(name="sum")([a, b]))


def test_paths():
    assert vis_utils.plot_model is kk.utils.plot_model is model_visualization.plot_model
    assert vis_utils.model_to_dot is kk.utils.model_to_dot


def test_without_pydot_the_error_names_the_package(monkeypatch):
    for name in ("pydot", "pydot_ng", "pydotplus"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match="plot_model: the pydot package.*pip install pydot"):
        kk.utils.plot_model(residual_model())
    with pytest.raises(ImportError, match="model_to_dot: the pydot package"):
        kk.utils.model_to_dot(residual_model())


def test_model_to_dot_nodes_labels_and_edges(use_pydot):
    use_pydot()
    model = residual_model()
    dot = kk.utils.model_to_dot(model, show_shapes=True, show_layer_activations=True)
    ids = {str(id(layer)): layer.name for layer in model.layers}
    assert [ids[node.name] for node in dot.nodes] == ["features", "left", "right", "sum"]
    labels = {ids[node.name]: node.label for node in dot.nodes}
    assert "<b>left</b> (Dense)" in labels["left"] and "Activation: <b>relu</b>" in labels["left"]
    assert "Input shape: <b>(None, 4)</b>" in labels["left"]
    assert "Output shape: <b>(None, 3)</b>" in labels["left"]
    assert "Input shape: <b>[(None, 3), (None, 3)]</b>" in labels["sum"]
    assert "Input shape" not in labels["features"]  # an InputLayer shows its output only
    assert sorted((ids[e.source], ids[e.target]) for e in dot.edges) == [
        ("features", "left"), ("features", "right"), ("left", "sum"), ("right", "sum")]
    assert dot.attributes["rankdir"] == "TB" and dot.attributes["dpi"] == 200
    plain = kk.utils.model_to_dot(model, show_layer_names=False)
    assert all("Input shape" not in n.label and "<b>Dense</b>" in n.label
               for n in plain.nodes[1:3])


def test_sequential_layers_are_chained(use_pydot):
    use_pydot()
    kk.backend.clear_session()
    model = kk.Sequential([kk.Input((3,)), kk.layers.Dense(2, name="a"),
                           kk.layers.Dense(4, name="b")])
    dot = kk.utils.model_to_dot(model, show_shapes=True)
    ids = {str(id(layer)): layer.name for layer in model.layers}
    assert [(ids[e.source], ids[e.target]) for e in dot.edges] == [("a", "b")]
    assert "Output shape: <b>(None, 4)</b>" in dot.nodes[1].label


def test_plot_model_writes_the_format_of_the_extension(use_pydot, tmp_path):
    use_pydot()
    path = tmp_path / "model.svg"
    kk.utils.plot_model(residual_model(), to_file=path)
    assert path.read_text().startswith("svg: ")


def test_plot_model_without_graphviz_names_it(use_pydot, tmp_path):
    use_pydot(dot_program_present=False)
    with pytest.raises(ImportError, match="Graphviz's `dot` program.*install Graphviz"):
        kk.utils.plot_model(residual_model(), to_file=tmp_path / "model.png")


def test_labels_and_edges_equal_keras_3s_with_the_same_pydot(use_pydot, monkeypatch):
    keras = real_keras()
    from keras.src.utils import model_visualization as keras_visualization

    use_pydot()
    monkeypatch.setattr(keras_visualization, "pydot", sys.modules["pydot"])

    def build(K):
        inputs = K.Input((4,), name="features")
        a = K.layers.Dense(3, activation="relu", name="left")(inputs)
        b = K.layers.Dense(3, name="right", trainable=False)(inputs)
        return K.Model(inputs, K.layers.Add(name="sum")([a, b]))

    def drawn(K, model):
        dot = K.utils.model_to_dot(model, show_shapes=True, show_layer_activations=True,
                                   show_trainable=True)
        names = {str(id(layer)): layer.name for layer in model.layers}
        return ([n.label for n in dot.nodes],
                sorted((names[e.source], names[e.target]) for e in dot.edges))

    kk.backend.clear_session()
    assert drawn(kk, build(kk)) == drawn(keras, build(keras))
