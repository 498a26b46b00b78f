"""Trains the classic MNIST convnet briefly while logging every way kiln can, then draws the
curves: the README's figures come from this script.

    python examples/mnist_training_curves.py --out docs/images

Logs go to <out>/mnist_logs/ (a CSVLogger file and a TensorBoard log_dir with weight
histograms: `tensorboard --logdir <out>/mnist_logs/tensorboard` shows them); the figures are
<out>/mnist_history.png (`History.plot()`) and <out>/mnist_tensorboard.png (`kiln plot` on the
TensorBoard log_dir), the same curves from two sources. Needs `pip install 'kiln[plot,
tensorboard]'` and MNIST (see the README's Quick start).
"""

import argparse
import os

from kiln import keras
from kiln.bench.models import mnist_cnn
from kiln.keras.datasets import mnist
from kiln.plot.__main__ import main as kiln_plot


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".", help="folder for the logs and the PNG files")
    parser.add_argument("--train", type=int, default=6000, help="training images used")
    parser.add_argument("--validation", type=int, default=1000, help="test images used")
    parser.add_argument("--epochs", type=int, default=8)
    args = parser.parse_args()

    keras.utils.set_random_seed(0)
    (x_train, y_train), (x_test, y_test) = mnist.load_data()
    x_train = x_train[:args.train, :, :, None].astype("float32") / 255
    x_test = x_test[:args.validation, :, :, None].astype("float32") / 255
    y_train = keras.utils.to_categorical(y_train[:args.train], 10)
    y_test = keras.utils.to_categorical(y_test[:args.validation], 10)

    model, _, batch_size = mnist_cnn("channels_last")  # Adadelta(learning_rate=1.0)
    logs = os.path.join(args.out, "mnist_logs")
    os.makedirs(logs, exist_ok=True)
    callbacks = [
        keras.callbacks.CSVLogger(os.path.join(logs, "history.csv")),
        keras.callbacks.TensorBoard(os.path.join(logs, "tensorboard"), histogram_freq=1),
        # a falling learning rate, so the TensorBoard figure's learning_rate panel shows one
        keras.callbacks.LearningRateScheduler(lambda epoch, rate: rate * (0.8 if epoch else 1)),
    ]
    history = model.fit(x_train, y_train, batch_size=batch_size, epochs=args.epochs,
                        validation_data=(x_test, y_test), callbacks=callbacks)

    history.plot(os.path.join(args.out, "mnist_history.png"),
                 title=f"mnist_cnn, {args.train} MNIST images, validation on {args.validation}")
    kiln_plot([os.path.join(logs, "tensorboard"), "-o",
               os.path.join(args.out, "mnist_tensorboard.png"),
               "--title", "kiln plot on the TensorBoard log_dir"])


if __name__ == "__main__":
    main()
