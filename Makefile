# Two commands a newcomer types on a fresh machine:
#   make demo   dump a bundled TensorFlow sample under XLA and show what fused
#   make test   lint, type-check, build the API reference and run the whole test suite
#   make docs   the API reference, generated from the docstrings, in build/docs/
# Both create .venv, install hloscope with its extras, and install Debian's graphviz
# (the `dot` binary) when it is missing.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck docs pytest bench clean system-deps browser

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[tf,jax,torch,nsys,proto,xprof,dev]'
	$(BIN)/python -m pip install --quiet --no-deps "tf-keras==$$($(TF_RELEASE)).*"
	touch $(STAMP)

# tf-keras (for its tests) declares a dependency on `tensorflow`, which pip would install
# beside tensorflow-cpu: take the tf-keras release of the installed TensorFlow's
# major.minor (`2.21`), without its dependencies.
TF_RELEASE = $(BIN)/python -c 'from importlib.metadata import version; print(*version("tensorflow-cpu").split(".")[:2], sep=".")'

# Debian's graphviz provides the real `dot` renderer.
system-deps:
	@command -v dot >/dev/null 2>&1 || { \
	  echo "installing Debian's graphviz (for the dot binary)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq graphviz >/dev/null; }

# Debian's Chromium for the HTML report's browser tests.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium (for the HTML report tests)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium >/dev/null; }

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

demo: $(STAMP) system-deps
	$(BIN)/hloscope dump samples/dense_relu.py --out hloscope-runs/demo --force --profile
	$(BIN)/hloscope report hloscope-runs/demo
	$(BIN)/hloscope ops hloscope-runs/demo --op relu
	$(BIN)/hloscope graph hloscope-runs/demo --expand all -o hloscope-runs/demo/dense_relu.svg
	$(BIN)/hloscope report hloscope-runs/demo --html hloscope-runs/demo/report.html
	@echo "open hloscope-runs/demo/report.html in a browser, or hloscope-runs/demo/dense_relu.svg"

lint: $(STAMP)
	$(BIN)/ruff check hloscope tests benchmarks samples
	$(BIN)/ruff format --check hloscope tests benchmarks samples

typecheck: $(STAMP)
	$(BIN)/mypy

# The API reference: pdoc over the public API (`import hloscope`), Google-style
# docstrings; any warning (an annotation it cannot resolve, ...) fails the build.
docs: $(STAMP)
	$(BIN)/python -W error::UserWarning -m pdoc --docformat google -o build/docs hloscope
	@echo "API reference in build/docs/hloscope.html"

pytest: $(STAMP) system-deps browser
	$(BIN)/python -m pytest

test: lint typecheck docs pytest

bench: $(STAMP) system-deps
	$(BIN)/python benchmarks/parse_bench.py

clean:
	rm -rf $(VENV) hloscope-runs build .pytest_cache .mypy_cache .ruff_cache
