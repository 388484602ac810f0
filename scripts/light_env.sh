#!/usr/bin/env bash
# Build the light environment for `make demo` and `make lab`: the package with its
# demo, notebooks and lab extras, and NO vLLM (vLLM lives in make test's .venv and
# .venv-vllm-newest), at the pins of constraints-light.txt: the newest transformers and
# gradio that install together. `make test` runs the tests marked transformers_version
# here too.
#
#   scripts/light_env.sh VENV PYTHON [TORCH_CPU_INDEX]
#
# On Linux, PyPI's torch pulls ~3 GB of CUDA libraries; PyTorch's CPU wheel index has
# CPU-only builds of the same torch/torchvision pair. We try that index first and keep
# its pair only when torchvision imports next to that torch (a CPU torch beside PyPI's
# CUDA torchvision fails with "operator torchvision::nms does not exist"). When the index
# cannot be reached we fall back to PyPI's pair, which still carries no vLLM, and say why
# in one line that names the real cause: the index (probed directly), pip's last error,
# or which of torch / torchvision would not load.
set -euo pipefail
VENV=$1
PYTHON=${2:-python3}
CPU_INDEX=${3:-https://download.pytorch.org/whl/cpu}
PY=$VENV/bin/python
test -x "$PY" || "$PYTHON" -m venv "$VENV"
"$PY" -m pip install -q --upgrade pip
constraints=constraints-light.txt
pins=$(grep -E '^(torch|torchvision)==' "$constraints" | sed 's/[,;].*//')  # torch==X torchvision==Y
# PyPI's torch of that release, never a local CPU-only "+cpu" build of it that some machines
# carry beside pip: PyPI's torchvision cannot load its operators next to one.
pypi_torch="torch!=$(grep -E '^torch==' "$constraints" | sed 's/^torch==//; s/[,;].*//')+cpu"

# Why the index cannot be reached (one line), or nothing when it answers: asked directly,
# so a fallback names the index, not whatever pip or an import said after it.
index_unreachable() {
  "$PY" - "$CPU_INDEX" 2>/dev/null <<'PROBE' || echo "$CPU_INDEX: the probe did not run"
import sys, urllib.request
url = sys.argv[1].rstrip("/") + "/torch/"
try:
    urllib.request.urlopen(url, timeout=15).close()
except Exception as exc:  # URLError, HTTPError, a timeout, a bad certificate
    print(f"{url}: {getattr(exc, 'reason', None) or exc}")
PROBE
}

# Why this environment's torch/torchvision are not a working CPU-only pair (one line),
# or nothing when they are. Each failure says which package it is about.
cpu_pair_problem() {
  "$PY" - 2>/dev/null <<'PAIR' || echo "the torch/torchvision import check crashed"
try:
    import torch
except Exception as exc:
    print(f"torch does not import ({type(exc).__name__}: {exc})")
    raise SystemExit(0)
if torch.version.cuda is not None:
    print(f"the torch pip left here is a CUDA build ({torch.__version__}), not the index's CPU one")
    raise SystemExit(0)
try:
    import torchvision.ops  # noqa: F401
except Exception as exc:
    last = (str(exc).strip().splitlines() or [""])[-1]
    print(f"torchvision does not load next to the CPU torch {torch.__version__} ({last})")
PAIR
}

if [ "$(uname -s)" = Linux ] && [ -n "$CPU_INDEX" ]; then
  echo "Trying CPU-only torch from $CPU_INDEX (about 200 MB; pip's progress follows)"
  log=$(mktemp)
  why=""
  before=$("$PY" -c "import importlib.metadata as m; print(m.version('torch'))" 2>/dev/null || true)
  # pip's own output stays on screen (progress bars, and why it failed); a short timeout
  # and one retry, so an unreachable index fails in seconds, not minutes.
  # shellcheck disable=SC2086
  # (stderr goes through tee into $log; pipefail keeps pip's exit status)
  if { "$PY" -m pip install --progress-bar on --timeout 15 --retries 1 \
      --index-url "$CPU_INDEX" $pins 2>&1 1>&3 | tee "$log" >&2; } 3>&1; then
    problem=$(cpu_pair_problem)
    if [ -z "$problem" ]; then
      pypi_torch=""  # keep the index's +cpu pair
    else
      # pip can succeed without the index (the pins already installed, or found in a
      # --find-links folder): then the index, not the pair, is the reason to name.
      down=$(index_unreachable)
      if [ -n "$down" ]; then
        why="the index could not be reached ($down), so pip kept what it found elsewhere: $problem"
      elif [ -n "$before" ]; then
        why="pip kept the torch $before already in $VENV (its pin was met): $problem"
      else
        why="$problem"
      fi
    fi
  else
    down=$(index_unreachable)
    reason=$(grep -E '^ERROR' "$log" | tail -n 1 || true)
    if [ -n "$down" ]; then
      why="the index could not be reached ($down)"
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
# shellcheck disable=SC2086  # $pypi_torch: one requirement, or nothing
"$PY" -m pip install -c "$constraints" -e '.[demo,notebooks,lab]' $pypi_torch
