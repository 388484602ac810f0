#!/usr/bin/env bash
# Build the light environment for `make demo` and `make lab`: the package with its
# demo, notebooks and lab extras, and NO vLLM (vLLM and its CUDA stack live only in .venv,
# which `make test` builds).
#
#   scripts/light_env.sh VENV PYTHON [TORCH_CPU_INDEX]
#
# On Linux, PyPI's torch pulls ~3 GB of CUDA libraries; PyTorch's CPU wheel index has
# CPU-only builds of the same torch/torchvision pair. We try that index first and keep
# its pair only when torchvision imports next to that torch (a CPU torch beside PyPI's
# CUDA torchvision fails with "operator torchvision::nms does not exist"). When the index
# cannot be reached we fall back to PyPI's pair, which still carries no vLLM.
set -euo pipefail
VENV=$1
PYTHON=${2:-python3}
CPU_INDEX=${3:-https://download.pytorch.org/whl/cpu}
PY=$VENV/bin/python
test -x "$PY" || "$PYTHON" -m venv "$VENV"
"$PY" -m pip install -q --upgrade pip
pins=$(grep -E '^(torch|torchvision)==' constraints.txt | sed 's/,.*//')  # torch==X torchvision==Y
constraints=constraints.txt
if [ "$(uname -s)" = Linux ] && [ -n "$CPU_INDEX" ]; then
  echo "Trying CPU-only torch from $CPU_INDEX"
  # shellcheck disable=SC2086
  if "$PY" -m pip install -q --index-url "$CPU_INDEX" $pins 2>/dev/null \
      && "$PY" -c "import torch, torchvision.ops; assert torch.version.cuda is None" 2>/dev/null; then
    constraints=constraints-light.txt  # keep the +cpu pair (constraints.txt refuses it)
  else
    echo "No working CPU-only torch/torchvision pair there: using PyPI's (no vLLM either way)"
    "$PY" -m pip uninstall -q -y torch torchvision 2>/dev/null || true
  fi
fi
"$PY" -m pip install -c "$constraints" -e '.[demo,notebooks,lab]'
