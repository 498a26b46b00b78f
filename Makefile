# Quick start:  make train   (set up .venv, train the classic mnist_cnn on real MNIST)
#               make test    (set up .venv with the test dependencies, run the suite)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STEPS ?= 50

.PHONY: train test bench install install-test clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

train: install
	$(PY) examples/mnist_cnn.py

test: install-test
	$(PY) -m pytest -q

bench: install
	$(PY) -m kiln.bench train --model mnist_cnn --format channels_last --steps $(STEPS)
	$(PY) -m kiln.bench train --model mnist_cnn --format channels_first --steps $(STEPS)

clean:
	rm -rf $(VENV) build *.egg-info
