"""One framework training mnist_cnn to a test accuracy, in its own process (started by
kiln.bench.time_to_accuracy, which sets the framework's environment first):

    python -m kiln.bench.peers.accuracy_worker FRAMEWORK PRECISION DATA.npz MAX_EPOCHS TARGET

DATA.npz holds x_train / x_test (float32, x/255, NHWC) and y_train / y_test (int labels), the
same arrays for every framework. The script's semantics: batch 128, shuffled every epoch,
Adadelta(learning_rate=1.0), categorical cross-entropy, the test set evaluated after every
epoch (batch 128, as fit's validation_data does); training stops after the first epoch whose
test accuracy reaches TARGET. The clock starts before the model is made (so it counts building,
compiling and tracing) and runs through every evaluation. The last stdout line is
`RESULT {json}`: per epoch the test accuracy, the wall-clock since the start and the seconds
spent evaluating.
"""

import json
import sys
import time

import numpy as np

BATCH = 128


def _keras_train(keras, net, data, max_epochs, target, start):
    epochs = []

    class Clock(keras.callbacks.Callback):
        evaluating = 0.0

        def on_test_begin(self, logs=None):
            self.test_start = time.perf_counter()

        def on_test_end(self, logs=None):
            self.evaluating += time.perf_counter() - self.test_start

        def on_epoch_end(self, epoch, logs=None):
            accuracy = float(logs["val_accuracy"])
            epochs.append({"accuracy": accuracy, "seconds": time.perf_counter() - start,
                           "eval_seconds": self.evaluating})
            if accuracy >= target:
                self.model.stop_training = True

    y_train = np.eye(10, dtype="float32")[data["y_train"]]
    y_test = np.eye(10, dtype="float32")[data["y_test"]]
    net.fit(data["x_train"], y_train, batch_size=BATCH, epochs=max_epochs, shuffle=True,
            verbose=0, validation_data=(data["x_test"], y_test), callbacks=[Clock()])
    return epochs


def run_kiln(precision, data, max_epochs, target):
    from ... import keras as kiln_keras
    from .. import models
    start = time.perf_counter()
    policy = kiln_keras.mixed_precision
    policy.set_global_policy("mixed_bfloat16" if precision == "bf16" else "float32")
    try:
        net, _, _ = models.mnist_cnn("channels_last")
    finally:
        policy.set_global_policy("float32")
    return _keras_train(kiln_keras, net, data, max_epochs, target, start)


def run_keras(precision, data, max_epochs, target):
    import keras

    from .keras3_runner import _model
    start = time.perf_counter()
    keras.mixed_precision.set_global_policy("mixed_bfloat16" if precision == "bf16"
                                            else "float32")
    net = _model(keras, "mnist_cnn", "channels_last")
    return _keras_train(keras, net, data, max_epochs, target, start)


def run_torch(precision, data, max_epochs, target):
    import torch

    from .torch_runner import _model
    start = time.perf_counter()
    net = _model(torch, "mnist_cnn")
    for layer in net.modules():  # Keras' initializers: glorot_uniform kernels, zero biases
        if isinstance(layer, (torch.nn.Conv2d, torch.nn.Linear)):
            torch.nn.init.xavier_uniform_(layer.weight)
            torch.nn.init.zeros_(layer.bias)
    optimizer = torch.optim.Adadelta(net.parameters(), lr=1.0, rho=0.95, eps=1e-7)
    loss_fn = torch.nn.CrossEntropyLoss()  # on logits: the softmax fused, as kiln's is
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")
    x_train = torch.from_numpy(data["x_train"]).permute(0, 3, 1, 2).contiguous()
    y_train = torch.from_numpy(data["y_train"].astype("int64"))
    x_test = torch.from_numpy(data["x_test"]).permute(0, 3, 1, 2).contiguous()
    y_test = torch.from_numpy(data["y_test"].astype("int64"))
    epochs, evaluating = [], 0.0
    for _ in range(max_epochs):
        net.train()
        order = torch.randperm(len(x_train))
        for i in range(0, len(x_train), BATCH):
            index = order[i:i + BATCH]
            optimizer.zero_grad(set_to_none=True)
            with autocast:
                loss = loss_fn(net(x_train[index]), y_train[index])
            loss.backward()
            optimizer.step()
        test_start = time.perf_counter()
        net.eval()
        correct = 0
        with torch.inference_mode(), autocast:
            for i in range(0, len(x_test), BATCH):
                correct += int((net(x_test[i:i + BATCH]).argmax(1) == y_test[i:i + BATCH]).sum())
        evaluating += time.perf_counter() - test_start
        accuracy = correct / len(x_test)
        epochs.append({"accuracy": accuracy, "seconds": time.perf_counter() - start,
                       "eval_seconds": evaluating})
        if accuracy >= target:
            break
    return epochs


RUNNERS = {"kiln": run_kiln, "keras-tensorflow": run_keras, "keras-jax": run_keras,
           "torch": run_torch}


def main(argv):
    framework, precision, path, max_epochs, target = argv
    with np.load(path, allow_pickle=False) as archive:
        data = {key: archive[key] for key in archive.files}
    epochs = RUNNERS[framework](precision, data, int(max_epochs), float(target))
    print("RESULT " + json.dumps({"framework": framework, "precision": precision,
                                  "epochs": epochs}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
