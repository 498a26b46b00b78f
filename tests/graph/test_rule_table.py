"""The rewrites as one table (graph/rules.py) plan what the rules spread over graph/fusion.py
and plan/loss_plan.py planned before: the same ops, in the same order, for the bench models
and for the loss heads that apply (or do not apply) the model's final activation.

fused_ops_before_the_rule_table.json was recorded with the code before the table: per model,
the ops of the training and inference graphs, and with the loss heads the ops the plan ran
(an activation the head applies left out, a Dense's taken out of it) with, per head, whether
it fused and the op computing the tensor it reads.
"""

import json
from pathlib import Path

import pytest

from kiln import keras
from kiln.bench import models as bench
from kiln.graph import rules
from kiln.graph.rewrite import INFERENCE, LOSS_HEAD, TRAINING, fuse

RECORDED = json.loads((Path(__file__).parent / "fused_ops_before_the_rule_table.json")
                      .read_text())


def describe(op):
    """'Type name [activation] [+relu]': what the recorded lists hold per op."""
    activation = getattr(op, "activation", None)
    text = f"{type(op).__name__} {op.name}"
    if isinstance(activation, str):
        text += f" {activation}"
    if getattr(op, "fuse_relu", False):
        text += " +relu"
    return text


def with_heads(graph, heads, plan):
    fused = fuse(graph, rules.RULES, plan, heads)
    producers = {id(node.output): node for node in fused.nodes}
    described = []
    for index in heads:
        node = producers.get(id(fused.outputs[index]))
        described.append([index in fused.fused_heads, None if node is None else describe(node.op)])
    return {"ops": [describe(op) for op in fused.ops], "heads": described}


def record(model):
    heads = {loss.output: loss.head for loss in model._compile_loss.output_losses()}
    return {"training": [describe(op) for op in fuse(model.graph, rules.RULES, TRAINING).ops],
            "inference": [describe(op) for op in fuse(model.graph, rules.RULES, INFERENCE).ops],
            "training with losses": with_heads(model.graph, heads, TRAINING),
            "evaluation with losses": with_heads(model.graph, heads, INFERENCE)}


def test_every_image_bench_model_was_recorded():
    """The sequence models and the keras.applications models came after the table: they have
    no recording from before it."""
    applications = {"resnet50", "efficientnet_b0", "resnet50_finetune"}
    assert set(RECORDED["bench"]) == set(bench.MODELS) - set(bench.SEQUENCE_MODELS) - applications


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("name", sorted(RECORDED["bench"]))
def test_bench_models_fuse_as_before_the_table(name, data_format):
    model, _ = bench.built(name, data_format)
    assert record(model) == RECORDED["bench"][name]


def sequential(*layers, shape=(5,)):
    return keras.Sequential([keras.Input(shape), *layers])


def softmax_read_by_another_layer():
    inputs = keras.Input((5,))
    probabilities = keras.layers.Dense(3, activation="softmax", name="probs")(inputs)
    score = keras.layers.Dense(1, name="score")(probabilities)
    return keras.Model(inputs, [probabilities, score])


def add_then_softmax():
    inputs = keras.Input((5,))
    a = keras.layers.Dense(3)(inputs)
    b = keras.layers.Dense(3)(keras.layers.Dense(4, activation="tanh")(inputs))
    return keras.Model(inputs, keras.layers.Activation("softmax")(keras.layers.Add()([a, b])))


L = keras.layers
LOSS_MODELS = {
    "dense softmax + categorical_crossentropy":
        (lambda: sequential(L.Dense(3, activation="softmax")), "categorical_crossentropy"),
    "dense + Activation softmax + categorical_crossentropy":
        (lambda: sequential(L.Dense(3), L.Activation("softmax")), "categorical_crossentropy"),
    "dense + Softmax layer + sparse_categorical_crossentropy":
        (lambda: sequential(L.Dense(3), L.Softmax()), "sparse_categorical_crossentropy"),
    "dense sigmoid + binary_crossentropy":
        (lambda: sequential(L.Dense(2, activation="sigmoid")), "binary_crossentropy"),
    "dense + Activation sigmoid + binary_crossentropy":
        (lambda: sequential(L.Dense(2), L.Activation("sigmoid")), "binary_crossentropy"),
    "dense softmax + categorical_crossentropy from_logits":
        (lambda: sequential(L.Dense(3, activation="softmax")),
         lambda: keras.losses.CategoricalCrossentropy(from_logits=True)),
    "dense + binary_crossentropy from_logits":
        (lambda: sequential(L.Dense(2)),
         lambda: keras.losses.BinaryCrossentropy(from_logits=True)),
    "dense sigmoid + categorical_crossentropy (not its activation)":
        (lambda: sequential(L.Dense(3, activation="sigmoid")), "categorical_crossentropy"),
    "conv relu + Activation sigmoid + binary_crossentropy per pixel":
        (lambda: sequential(L.Conv2D(2, 3, activation="relu"), L.Activation("sigmoid"),
                            shape=(6, 6, 1)), "binary_crossentropy"),
    "softmax read by another layer":
        (softmax_read_by_another_layer, ["categorical_crossentropy", "mse"]),
    "add + Activation softmax + categorical_crossentropy":
        (add_then_softmax, "categorical_crossentropy"),
}


@pytest.mark.parametrize("case", list(LOSS_MODELS))
def test_loss_heads_fuse_as_before_the_table(case):
    make, loss = LOSS_MODELS[case]
    keras.backend.clear_session()
    model = make()
    model.compile(loss=loss() if callable(loss) else loss, optimizer="sgd")
    model._build_if_possible()
    assert record(model) == RECORDED["loss heads"][case]


def test_the_table_names_each_rule_once_and_says_where_it_applies():
    assert len(set(rules.NAMES)) == len(rules.RULES)
    assert all(rule.plans in ("training", "inference", "both") and rule.pattern
               for rule in rules.RULES)
    # loss-head rules come last: they need each output's final producer
    kinds = [rule.kind for rule in rules.RULES]
    assert kinds[kinds.index(LOSS_HEAD):] == [LOSS_HEAD] * kinds.count(LOSS_HEAD)
    assert rules.without("residual add into conv") == tuple(
        rule for rule in rules.RULES if rule.name != "residual add into conv")
    with pytest.raises(KeyError, match="no graph rule named"):
        rules.named("no such rule")
