"""keras.utils.set_random_seed: the same script run twice in fresh processes (same machine,
same thread count) trains bit-identical weights with shuffling, dropout and augmentation on;
another seed trains different ones."""

import hashlib
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import hashlib, sys
    import numpy as np
    from kiln import keras
    from kiln.keras.layers import Conv2D, Dense, Dropout, Flatten
    from kiln.keras.preprocessing.image import ImageDataGenerator

    keras.utils.set_random_seed(int(sys.argv[1]))
    rng = np.random.default_rng(0)  # the data is fixed; only the seed changes
    x = rng.random((64, 8, 8, 3)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 64)]
    model = keras.Sequential([Conv2D(4, 3, activation="relu", input_shape=(8, 8, 3)),
                              Dropout(0.3), Flatten(), Dense(4, activation="softmax")])
    model.compile(optimizer="adam", loss="categorical_crossentropy")
    model.fit(x, y, batch_size=16, epochs=2, shuffle=True, verbose=0)
    augment = ImageDataGenerator(rotation_range=20, width_shift_range=0.2, zoom_range=0.1,
                                 horizontal_flip=True)
    model.fit(augment.flow(x, y, batch_size=16), epochs=2, verbose=0)
    digest = hashlib.sha256()
    for weight in model.get_weights():
        digest.update(np.ascontiguousarray(weight).tobytes())
    print(digest.hexdigest())
""")


def run(seed):
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(seed)], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


def test_same_seed_same_weights_other_seed_other_weights():
    first, second, other = run(5), run(5), run(6)
    assert first == second
    assert first != other
    assert len(first) == len(hashlib.sha256().hexdigest())
