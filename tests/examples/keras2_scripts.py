"""Running Keras 2.2.4's own example scripts and keras-io's Keras 3 ones in kiln, with only
their imports changed, on small data written in the real file formats into a temporary Keras
cache.

The scripts are not copied into this repository. Keras 2.2.4's come from its source
distribution on PyPI (`keras==2.2.4`, which ships the examples/ folder), downloaded once by pip
into a test cache and checked against its sha256. keras-io's examples are on no package
registry: their tests run when `KILN_KERAS_IO` names a keras-io checkout, and are skipped
otherwise.

A script runs as `python script.py` would (`__name__ == "__main__"`), from the original text
with its imports pointed at kiln (`kiln_source`: the only lines changed) and a few whole lines
rewritten to shorten it (epochs, data sizes); each rewrite must match exactly one line, so a
changed script fails loudly instead of silently running long.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import types
from pathlib import Path

import numpy as np
import pytest

KERAS2_REQUIREMENT = "keras==2.2.4"
KERAS2_SDIST = "Keras-2.2.4.tar.gz"
KERAS2_SDIST_SHA256 = "90b610a3dbbf6d257b20a079eba3fdf2eed2158f64066a7c6f7227023fd60bc9"
KERAS2 = "keras2"
KERAS_IO = "keras-io"
# keras-io's paths of the scripts the tests run
KERAS_IO_PATHS = {
    "timeseries_classification_from_scratch":
        "examples/timeseries/timeseries_classification_from_scratch.py",
    "timeseries_classification_transformer":
        "examples/timeseries/timeseries_classification_transformer.py",
    "text_classification_with_transformer":
        "examples/nlp/text_classification_with_transformer.py",
}
# `import keras` / `from keras... import` / `from tensorflow import keras` /
# `from tensorflow.keras... import`: the import lines a script may have, pointed at kiln
IMPORT_REWRITES = [
    (re.compile(r"^(\s*)import keras$"), r"\1from kiln import keras"),
    (re.compile(r"^(\s*)from tensorflow import keras$"), r"\1from kiln import keras"),
    (re.compile(r"^(\s*)from (?:tensorflow\.)?keras(\.\S+)? import "),
     r"\1from kiln.keras\2 import "),
]


def source_cache():
    """Where downloaded sources are kept between runs."""
    folder = Path(os.environ.get("KILN_TEST_CACHE") or Path.home() / ".cache" / "kiln-tests")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def keras2_sdist():
    """Keras 2.2.4's source distribution from PyPI, downloaded by pip on first use (into a
    temporary folder, then moved in place, so parallel test workers never see half a file)."""
    path = source_cache() / KERAS2_SDIST
    if not path.exists() or sha256(path) != KERAS2_SDIST_SHA256:
        with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                            "--no-binary", ":all:", "--dest", scratch, KERAS2_REQUIREMENT],
                           check=True)
            downloaded = Path(scratch) / KERAS2_SDIST
            assert sha256(downloaded) == KERAS2_SDIST_SHA256, f"{KERAS2_SDIST} is not PyPI's"
            os.replace(downloaded, path)
    return path


def original_source(name, origin=KERAS2):
    """The script's text as its authors wrote it."""
    if origin == KERAS2:
        with tarfile.open(keras2_sdist()) as archive:
            member = archive.extractfile(f"Keras-2.2.4/examples/{name}.py")
            return member.read().decode("utf-8")
    checkout = os.environ.get("KILN_KERAS_IO")
    if not checkout:
        pytest.skip("keras-io's examples are on no package registry: set KILN_KERAS_IO to a "
                    "keras-io checkout to run this script")
    return (Path(checkout) / KERAS_IO_PATHS[name]).read_text(encoding="utf-8")


def kiln_import(line):
    """`line` with a Keras import pointed at kiln; any other line as it is."""
    for pattern, replacement in IMPORT_REWRITES:
        if pattern.match(line):
            return pattern.sub(replacement, line)
    return line


def kiln_source(name, origin=KERAS2):
    """The original text with its Keras imports pointed at kiln, and nothing else changed."""
    return "\n".join(map(kiln_import, original_source(name, origin).split("\n")))


def script_source(name, rewrites=(), origin=KERAS2):
    """The kiln source with each `(old line, new line)` of `rewrites` replaced once."""
    source = kiln_source(name, origin)
    for old, new in rewrites:
        assert source.count(old + "\n") == 1, f"{name}.py no longer has exactly one {old!r}"
        source = source.replace(old + "\n", new + "\n")
    return source


def run_script(name, rewrites=(), origin=KERAS2):
    """Executes the (rewritten) script as __main__; returns its global namespace."""
    path = f"{origin}/{name}.py"
    namespace = {"__name__": "__main__", "__file__": path}
    exec(compile(script_source(name, rewrites, origin), path, "exec"), namespace)
    return namespace


def six_moves_shim(monkeypatch):
    """addition_rnn.py does `from six.moves import range` (Python 2 compatibility); `six`
    is not a kiln dependency, so the test provides the one name it takes: the builtin."""
    six = types.ModuleType("six")
    six.moves = types.ModuleType("six.moves")
    six.moves.range = range
    monkeypatch.setitem(sys.modules, "six", six)
    monkeypatch.setitem(sys.modules, "six.moves", six.moves)


def epoch_logs(out):
    """The `name: value` pairs of every epoch summary line Progbar printed, in order."""
    logs = []
    for line in out.splitlines():
        if re.match(r"^\d+/\d+ - \S+ - \S+/step - ", line):
            logs.append({k: float(v) for k, v in re.findall(r"(\w+): ([-+\d.e]+)", line)})
    return logs


def printed_number(out, label):
    match = re.search(rf"^{re.escape(label)} (\S+)$", out, re.M)
    assert match, f"no {label!r} line in the output"
    return float(match.group(1))


# -- the data files, in Keras's formats ------------------------------------------------------
def object_array(lists):
    """What Keras's .npz files hold: a 1-D object array of Python int lists."""
    array = np.empty(len(lists), dtype=object)
    for i, values in enumerate(lists):
        array[i] = [int(v) for v in values]
    return array


def cued_sequences(rng, labels, vocabulary, cues_per_class, shortest, longest, cue_rate):
    """Word-index lists where a `cue_rate` share of the words tells the label: label k uses
    the cue words `10 + cues_per_class * k ...`; the rest are random words above them."""
    first_plain = 10 + cues_per_class * (int(labels.max()) + 1)
    sequences = []
    for label in labels:
        words = rng.integers(first_plain, vocabulary, int(rng.integers(shortest, longest)))
        cued = rng.random(len(words)) < cue_rate
        words[cued] = 10 + cues_per_class * int(label) + rng.integers(0, cues_per_class,
                                                                       int(cued.sum()))
        sequences.append(words)
    return object_array(sequences)


def write_word_index(path, vocabulary):
    """The `{word: index}` json Keras ships next to the .npz (indexes from 1)."""
    path.write_text(json.dumps({f"word{i}": i for i in range(1, vocabulary)}))


def write_imdb(folder, train_count, test_count, vocabulary=4000, seed=0):
    """imdb.npz (x_train, y_train, x_test, y_test) with learnable 0/1 labels, and
    imdb_word_index.json. Indexes stay below 4990: imdb_cnn.py keeps num_words=5000 and
    load_data adds index_from=3."""
    rng = np.random.default_rng(seed)
    y_train, y_test = rng.integers(0, 2, train_count), rng.integers(0, 2, test_count)
    kwargs = dict(vocabulary=vocabulary, cues_per_class=2, shortest=150, longest=400,
                  cue_rate=0.4)
    np.savez(folder / "imdb.npz", x_train=cued_sequences(rng, y_train, **kwargs),
             y_train=y_train, x_test=cued_sequences(rng, y_test, **kwargs), y_test=y_test)
    write_word_index(folder / "imdb_word_index.json", vocabulary)


def write_reuters(folder, count, classes, vocabulary=3000, seed=0):
    """reuters.npz (x, y: 46 topics in Keras's file, `classes` here) and
    reuters_word_index.json."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, count)
    np.savez(folder / "reuters.npz", x=cued_sequences(rng, y, vocabulary, 3, 10, 60, 0.3), y=y)
    write_word_index(folder / "reuters_word_index.json", vocabulary)


def write_ucr_tsv(path, count, length=500, seed=0):
    """A UCR archive TSV (FordA_TRAIN.tsv's format): one series per line, the label (-1 or 1)
    first, then `length` z-normalized values, tab-separated. Class 1 is a sine of 12 periods,
    class -1 one of 7 (random phases), both in noise: learnable by a small convnet."""
    rng = np.random.default_rng(seed)
    labels = rng.choice([-1, 1], count)
    t = np.arange(length) / length
    periods = np.where(labels == 1, 12.0, 7.0)[:, None]
    series = (np.sin(2 * np.pi * (periods * t + rng.random((count, 1))))
              + rng.normal(0.0, 0.8, (count, length)))
    series = (series - series.mean(1, keepdims=True)) / series.std(1, keepdims=True)
    rows = np.column_stack([labels, series])
    np.savetxt(path, rows, delimiter="\t", fmt=["%d"] + ["%.7f"] * length)
    return labels
