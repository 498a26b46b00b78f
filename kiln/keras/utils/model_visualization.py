"""`keras.utils.model_to_dot` / `plot_model`: a model's layers and connections as a Graphviz
graph, drawn the way Keras 3 draws it (one HTML-table node per layer: name and class, optionally
activation, input / output shapes, dtype and trainable; an edge per connection).

Graphviz is optional, as in Keras: the graph is built with `pydot` (or its older forks
pydot_ng / pydotplus) and `plot_model` renders it with Graphviz's `dot` program. Without them
the error says what to install (`pip install kiln[plot-model]` for pydot; Graphviz itself comes
from the system's packages).
"""

import os


def _import_pydot():
    for name in ("pydot", "pydot_ng", "pydotplus"):
        try:
            return __import__(name)
        except ImportError:
            continue
    return None


def _require_pydot(who):
    pydot = _import_pydot()
    if pydot is None:
        raise ImportError(f"{who}: the pydot package is required; install it with "
                          "`pip install pydot` (or kiln's extra: `pip install kiln[plot-model]`)"
                          ", and Graphviz's `dot` program to render images")
    return pydot


def _format_shape(value):
    if isinstance(value, (list, tuple)) and value and not all(
            v is None or isinstance(v, int) for v in value):
        return "[" + ", ".join(_format_shape(v) for v in value) + "]"
    return "?" if value is None else str(tuple(value))


def _tensor_shapes(tensors):
    if isinstance(tensors, (list, tuple)):
        return [t.shape for t in tensors]
    return tensors.shape


def _shape_or_none(read_tensors):
    """The shapes of a layer's input or output tensors; None (drawn "?") for a layer never
    called, as Keras."""
    try:
        return _tensor_shapes(read_tensors())
    except (AttributeError, ValueError, IndexError):
        return None


def _activation_name(activation):
    return getattr(activation, "name", None) or getattr(activation, "__name__", None) \
        or str(activation)


def _cell(text):
    return f'<td bgcolor="white"><font point-size="14">{text}</font></td>'


def make_layer_label(layer, show_layer_names, show_layer_activations, show_dtype, show_shapes,
                     show_trainable):
    """The node's HTML-like label, as Keras 3's `make_layer_label`."""
    class_name = type(layer).__name__
    cols = []
    if show_shapes:
        if class_name != "InputLayer":
            input_shape = _shape_or_none(lambda: layer.input)
            cols.append(_cell(f"Input shape: <b>{_format_shape(input_shape)}</b>"))
        output_shape = _shape_or_none(lambda: layer.output)
        cols.append(_cell(f"Output shape: <b>{_format_shape(output_shape)}</b>"))
    if show_dtype:
        dtype = getattr(layer, "dtype", None) or getattr(layer, "compute_policy", None)
        cols.append(_cell(f"Output dtype: <b>{dtype or '?'}</b>"))
    if show_trainable and layer.weights:
        color, text = (("forestgreen", "Trainable") if layer.trainable
                       else ("firebrick", "Non-trainable"))
        cols.append(f'<td bgcolor="{color}"><font point-size="14" color="white">'
                    f"<b>{text}</b></font></td>")
    colspan = max(1, int(show_dtype) + int(show_trainable) + (2 if show_shapes else 0))
    title = f"<b>{layer.name}</b> ({class_name})" if show_layer_names else f"<b>{class_name}</b>"
    table = ('<<table border="0" cellborder="1" bgcolor="black" cellpadding="10">'
             f'<tr><td colspan="{colspan}" bgcolor="black">'
             f'<font point-size="16" color="white">{title}</font></td></tr>')
    activation = getattr(layer, "activation", None)
    if show_layer_activations and activation is not None:
        table += (f'<tr><td bgcolor="white" colspan="{colspan}"><font point-size="14">'
                  f"Activation: <b>{_activation_name(activation)}</b></font></td></tr>")
    if cols:
        table += f"<tr>{''.join(cols)}</tr>"
    return table + "</table>>"


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True,
                 rankdir="TB", expand_nested=False, dpi=200, subgraph=False,
                 show_layer_activations=False, show_trainable=False, splines="ortho",
                 **kwargs):
    """A `pydot.Dot` of `model` (a `pydot.Cluster` when `subgraph`), as Keras 3's: a node per
    layer (a nested model is one node: `expand_nested` is not supported yet), an edge from
    each layer to each layer that reads its output."""
    pydot = _require_pydot("model_to_dot")
    if kwargs.pop("layer_range", None) is not None:
        raise ValueError("model_to_dot: argument layer_range is no longer supported (Keras 3)")
    if kwargs:
        raise ValueError(f"model_to_dot: unrecognized keyword arguments {sorted(kwargs)}")
    if expand_nested:
        raise ValueError("model_to_dot: argument expand_nested=True is not supported yet; "
                         "a nested model is drawn as one node")
    layers = _built_layers(model, "model_to_dot")
    if subgraph:
        dot = pydot.Cluster(style="dashed", graph_name=model.name)
        dot.set("label", model.name)
        dot.set("labeljust", "l")
    else:
        dot = pydot.Dot()
        dot.set("rankdir", rankdir)
        dot.set("concentrate", True)
        dot.set("dpi", dpi)
        dot.set("splines", splines)
        dot.set_node_defaults(shape="record")
    options = {"show_layer_names": show_layer_names, "show_dtype": show_dtype,
               "show_layer_activations": show_layer_activations, "show_shapes": show_shapes,
               "show_trainable": show_trainable}
    for layer in layers:
        node = pydot.Node(str(id(layer)), label=make_layer_label(layer, **options))
        node.set("fontname", "Helvetica")
        node.set("border", "0")
        node.set("margin", "0")
        dot.add_node(node)
    for source, target in _connections(model, layers):
        if not dot.get_edge(str(id(source)), str(id(target))):
            edge = pydot.Edge(str(id(source)), str(id(target)))
            edge.set("penwidth", "2")
            dot.add_edge(edge)
    return dot


def _built_layers(model, who):
    build = getattr(model, "_build_if_possible", None)
    if build is not None:
        build()
    if not model.built:
        raise ValueError(f"{who}: the model '{model.name}' has not been built yet; build it "
                         "(give its Input, call build() or call it on a batch) first")
    return list(model.layers)


def _connections(model, layers):
    """(source layer, target layer) pairs: consecutive layers of a Sequential model; in a
    functional one, the layers whose outputs each layer's calls read (within the model)."""
    from ..models import Sequential

    if isinstance(model, Sequential):
        return list(zip(layers[:-1], layers[1:], strict=False))
    members = {id(layer) for layer in layers}
    pairs = []
    for layer in layers:
        for node in getattr(layer, "_inbound_nodes", ()):
            for tensor in node.input_tensors:
                history = tensor._keras_history
                if history is not None and id(history[0]) in members:
                    pairs.append((history[0], layer))
    return pairs


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False,
               show_layer_names=False, rankdir="TB", expand_nested=False, dpi=200,
               show_layer_activations=False, show_trainable=False, splines="ortho", **kwargs):
    """Draws `model` into `to_file` (its extension is the image format, png by default) with
    Graphviz, as Keras 3's `plot_model`; returns an IPython Image when IPython is there."""
    pydot = _require_pydot("plot_model")
    try:
        pydot.Dot.create(pydot.Dot())  # renders an empty graph: is Graphviz's `dot` there?
    except Exception as err:  # pydot raises OSError / FileNotFoundError / its own exceptions
        raise ImportError(
            "plot_model: Graphviz's `dot` program is required to render the graph and could "
            f"not be run ({err}); install Graphviz (e.g. `apt-get install graphviz`, "
            "`brew install graphviz`, or https://graphviz.org/download/)") from err
    dot = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype,
                       show_layer_names=show_layer_names, rankdir=rankdir,
                       expand_nested=expand_nested, dpi=dpi,
                       show_layer_activations=show_layer_activations,
                       show_trainable=show_trainable, splines=splines, **kwargs)
    to_file = str(to_file)
    extension = os.path.splitext(to_file)[1][1:] or "png"
    dot.write(to_file, format=extension)
    if extension != "pdf":
        try:
            from IPython import display
        except ImportError:
            return None
        return display.Image(filename=to_file)
    return None


__all__ = ["model_to_dot", "plot_model"]
