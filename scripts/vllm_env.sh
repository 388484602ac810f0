#!/usr/bin/env bash
# Build the newest-vLLM test environment for `make test`: the newest vLLM release the
# package supports (gemma_explore/vllm_versions/), for its Python code on a CPU (its
# processors, EngineArgs, CacheConfig, the model files; no engine), beside the package
# with its dev extra. The tests marked `vllm_version` run here a second time.
#
#   scripts/vllm_env.sh VENV [PYTHON]
#
# vLLM publishes no CPU build of that release, and its standard wheel pins GPU kernels,
# one of them at a version PyPI does not carry: scripts/install_vllm.py --build code-only
# installs the wheel --no-deps and its requirements less those kernels (docs/install.md).
# The release and its transformers come from the package's profiles; the torch pair and
# pillow from constraints-vllm-newest.txt.
set -euo pipefail
VENV=$1
PYTHON=${2:-python3}
PY=$VENV/bin/python
CONSTRAINTS=constraints-vllm-newest.txt
test -x "$PY" || "$PYTHON" -m venv "$VENV"
"$PY" -m pip install -q --upgrade pip
# "vllm==X transformers==Y": the newest profile's release and the transformers it takes.
pins=$("$PY" scripts/install_vllm.py --vllm newest --show)
echo "Installing gemma_explore with its dev extra, ${pins#* } (what ${pins% *} accepts)"
"$PY" -m pip install -c "$CONSTRAINTS" -e '.[dev]' "${pins#* }"
"$PY" scripts/install_vllm.py --vllm newest --build code-only -c "$CONSTRAINTS"
