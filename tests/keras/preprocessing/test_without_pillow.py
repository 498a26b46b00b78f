"""Pillow is optional (the `image` extra): without it kiln imports, ImageDataGenerator
augments and trains from arrays, and only reading image files (flow_from_directory,
image_dataset_from_directory, load_img) stops, at once, with an error saying what to install.
Run in a fresh process where `import PIL` fails."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    sys.modules["PIL"] = None  # as if Pillow were not installed: import PIL raises
    import numpy as np
    from kiln import keras
    from kiln.keras.preprocessing.image import ImageDataGenerator, load_img

    x = np.random.default_rng(0).random((8, 6, 6, 3)).astype(np.float32)
    y = np.eye(2, dtype=np.float32)[[0, 1] * 4]
    datagen = ImageDataGenerator(rotation_range=10, width_shift_range=0.1,
                                 horizontal_flip=True)
    model = keras.Sequential([keras.layers.Flatten(input_shape=(6, 6, 3)),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    model.fit(datagen.flow(x, y, batch_size=4), epochs=1, verbose=0)
    print("arrays: ok")
    for name, call in [
            ("flow_from_directory", lambda: datagen.flow_from_directory(sys.argv[1])),
            ("image_dataset_from_directory",
             lambda: keras.utils.image_dataset_from_directory(sys.argv[1])),
            ("load_img", lambda: load_img(sys.argv[1] + "/a/none.png"))]:
        try:
            call()
        except ImportError as error:
            print(f"{name}: {error}")
        else:
            print(f"{name}: no error")
""")


def test_without_pillow_arrays_train_and_image_files_ask_for_it(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert "arrays: ok" in lines
    for name in ("flow_from_directory", "image_dataset_from_directory", "load_img"):
        assert f"{name}: reading and writing image files needs Pillow: pip install pillow " \
               "(or kiln[image])" in lines, result.stdout
