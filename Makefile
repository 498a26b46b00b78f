# Quick start:  make train   (set up .venv, train the classic mnist_cnn on real MNIST)
#               make test    (set up .venv with the test dependencies, run the suite)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Datasets: as in CI, a shared data folder beside the checkout is used when present; otherwise
# the loaders read the Keras cache (~/.keras/datasets) or download.
KILN_DATASETS ?= $(abspath $(wildcard ../shared/data))
export KILN_DATASETS

.PHONY: train test bench install install-test clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	$(PY) -m kiln.keras.warmup
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

$(VENV)/.installed-peers: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[peers]'
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

train: install
	$(PY) examples/mnist_cnn.py

test: install-test
	$(PY) -m pytest -q -n 2 --dist loadfile

# kiln and every peer (Keras 3 + TensorFlow / JAX, PyTorch) side by side; JSON in bench-results/
bench: $(VENV)/.installed-peers
	$(PY) -m kiln.bench compare --precisions f32 bf16 --json bench-results/compare.json

clean:
	rm -rf $(VENV) build *.egg-info
