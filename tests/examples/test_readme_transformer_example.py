"""The README's transformer example runs as written: its code block is read from README.md
(so the text users copy is what is tested) and executed on a small imdb.npz in Keras's format
in a temporary Keras cache; two epochs must learn the cued labels."""

import math
import re
from pathlib import Path

from keras2_scripts import write_imdb

README = Path(__file__).resolve().parents[2] / "README.md"
TRAIN, TEST = 320, 64


def transformer_block():
    section = README.read_text().split("### Transformers", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_transformer_example_trains(keras2_cache):
    write_imdb(keras2_cache, TRAIN, TEST)
    namespace = {"__name__": "readme_transformer"}
    exec(compile(transformer_block(), str(README), "exec"), namespace)
    model = namespace["model"]
    assert [type(layer).__name__ for layer in model.layers] == [
        "InputLayer", "TokenAndPosition", "EncoderBlock", "GlobalAveragePooling1D", "Dense"]
    history = model.history.history
    assert len(history["loss"]) == 2 and all(math.isfinite(v) for v in history["loss"])
    assert history["loss"][1] < history["loss"][0]
    assert history["val_accuracy"][-1] >= 0.75, history
