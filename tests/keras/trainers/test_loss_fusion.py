"""The loss is a node of the plan: a softmax or sigmoid before a cross-entropy is applied by
the loss kernel whatever layer precedes it, unless someone else reads its output; the classic
softmax + accuracy step runs one loss kernel and nothing else for the metric."""

import numpy as np
import pytest
from fit_oracle import check_fit_against_keras

from kiln import keras

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def one_hot(classes):
    return lambda rng, n: np.eye(classes, dtype=np.float32)[rng.integers(0, classes, n)]


def plan_of(model, batch=4):
    model._build_if_possible()
    return model._plan(True, batch)


def test_classic_softmax_accuracy_step_is_one_loss_kernel():
    model = keras.Sequential([keras.layers.Dense(3, activation="softmax", input_shape=(5,))])
    model.compile(loss="categorical_crossentropy", optimizer="sgd", metrics=["accuracy"])
    labels = plan_of(model).describe()
    assert "categorical_crossentropy softmax cross-entropy" in labels
    assert not [label for label in labels if label.endswith(("softmax", "metric"))], labels
    evaluation = model._plan(False, 4, evaluate=True).describe()
    assert "categorical_crossentropy softmax cross-entropy" in evaluation
    assert not [label for label in evaluation if "backward" in label]


def branches_added_then_softmax(K):
    inputs = K.Input((5,))
    a = K.layers.Dense(3)(inputs)
    b = K.layers.Dense(3)(K.layers.Dense(4, activation="tanh")(inputs))
    return K.Model(inputs, K.layers.Activation("softmax")(K.layers.Add()([a, b])))


def test_softmax_after_an_add_is_fused_and_trains_as_keras():
    kiln_model, _ = check_fit_against_keras(
        branches_added_then_softmax,
        lambda K: dict(loss="categorical_crossentropy", metrics=["accuracy"]), one_hot(3))
    plan = plan_of(kiln_model, 6)
    assert plan.heads[0].fused and plan.heads[0].skip is not None
    assert not [label for label in plan.describe() if "softmax backward" in label]


def conv_sigmoid(K):
    inputs = K.Input((6, 6, 1))
    x = K.layers.Conv2D(2, 3, activation="relu")(inputs)
    x = K.layers.Flatten()(x)
    return K.Model(inputs, K.layers.Activation("sigmoid")(K.layers.Dense(2)(x)))


def test_sigmoid_folded_into_a_dense_is_taken_back_by_the_loss():
    kiln_model, _ = check_fit_against_keras(
        conv_sigmoid, lambda K: dict(loss="binary_crossentropy", metrics=["accuracy"]),
        lambda rng, n: (rng.random((n, 2)) > 0.5).astype(np.float32))
    head = plan_of(kiln_model, 6).heads[0]
    assert head.fused and head.replace is not None and head.replace[1].activation is None


def softmax_read_by_another_layer(K):
    inputs = K.Input((5,))
    probabilities = K.layers.Dense(3, activation="softmax", name="probs")(inputs)
    score = K.layers.Dense(1, name="score")(probabilities)
    return K.Model(inputs, [probabilities, score])


def test_softmax_read_by_another_layer_is_not_fused():
    def labels(rng, n):
        return [one_hot(3)(rng, n), rng.normal(size=(n, 1)).astype(np.float32)]
    kiln_model, _ = check_fit_against_keras(
        softmax_read_by_another_layer,
        lambda K: dict(loss=["categorical_crossentropy", "mse"], metrics=[["acc"], []]),
        labels)
    heads = plan_of(kiln_model, 6).heads
    assert not heads[0].fused
    assert "categorical_crossentropy cross-entropy on probabilities" in plan_of(
        kiln_model, 6).describe()


def test_from_logits_after_a_softmax_is_not_fused():
    """Keras then takes the softmax output as logits: so does kiln."""
    def build(K):
        return K.Sequential([K.Input((5,)), K.layers.Dense(3, activation="softmax")])
    kiln_model, _ = check_fit_against_keras(
        build, lambda K: dict(loss=K.losses.CategoricalCrossentropy(from_logits=True)),
        one_hot(3))
    assert not plan_of(kiln_model, 6).heads[0].fused


def test_softmax_op_over_the_last_axis_is_fused_too():
    """keras.layers.Softmax plans a SoftmaxOp (not an ActivationOp): fused all the same."""
    from kiln.graph.symbolic import SymbolicTensor
    from kiln.graph.topology import Graph
    from kiln.ops import DenseOp
    from kiln.ops.losses import CategoricalCrossentropyHead
    from kiln.ops.softmax import SoftmaxOp
    from kiln.plan.parameters import ParameterStore
    from kiln.plan.step_plan import StepPlan
    from kiln.runtime.optimizers import SGDUpdater

    store = ParameterStore()
    dense = DenseOp("dense", 3)
    shapes = {"kernel": (5, 3), "bias": (3,)}  # Keras layouts
    for key, (dims, tag) in dense.parameter_dims((4, 5)).items():
        store.add(f"dense/{key}", dims, tag, np.zeros(shapes[key], np.float32))
    graph = Graph.chain([dense, SoftmaxOp("softmax")], SymbolicTensor((None, 5)))
    plan = StepPlan(graph, 4, store, CategoricalCrossentropyHead("cce"), SGDUpdater(0.1))
    assert plan.heads[0].fused and "softmax softmax" not in plan.describe()
