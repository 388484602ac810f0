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
  echo "Trying CPU-only torch from $CPU_INDEX (about 200 MB; pip's progress follows)"
  log=$(mktemp)
  why=""
  # pip's own output stays on screen (progress bars, and why it failed); a short timeout
  # and one retry, so an unreachable index fails in seconds, not minutes.
  # shellcheck disable=SC2086
  # (stderr goes through tee into $log; pipefail keeps pip's exit status)
  if { "$PY" -m pip install --progress-bar on --timeout 15 --retries 1 \
      --index-url "$CPU_INDEX" $pins 2>&1 1>&3 | tee "$log" >&2; } 3>&1; then
    if "$PY" -c "import torch, torchvision.ops; assert torch.version.cuda is None" 2>>"$log"; then
      constraints=constraints-light.txt  # keep the +cpu pair (constraints.txt refuses it)
    else
      why="that torch/torchvision pair does not import together ($(tail -n 1 "$log"))"
    fi
  else
    net=$(grep -m 1 -oE 'Connection refused|timed out|Name or service not known|Temporary failure in name resolution|No route to host|SSLError' "$log" || true)
    reason=$(grep -m 1 '^ERROR' "$log" || true)
    if [ -n "$net" ]; then
      why="the index could not be reached ($net)"
    else
      why="pip could not install it from there: ${reason:-see the pip lines above}"
    fi
  fi
  rm -f "$log"
  if [ -n "$why" ]; then
    echo "Falling back to PyPI's torch/torchvision (about 3 GB with CUDA; no vLLM either way)."
    echo "Why: $why"
    "$PY" -m pip uninstall -q -y torch torchvision 2>/dev/null || true
  fi
fi
echo "Installing gemma_explore with its demo, notebooks and lab extras"
"$PY" -m pip install -c "$constraints" -e '.[demo,notebooks,lab]'
