"""The plans and the media readers load neither torch nor transformers (pyproject's
forbidden contract says so statically; this runs the imports and looks)."""

from __future__ import annotations

import subprocess
import sys


def test_plans_and_media_import_without_torch_or_transformers():
    code = (
        "import sys\n"
        "import gemma_explore.plans.image, gemma_explore.plans.audio, gemma_explore.plans.video\n"
        "import gemma_explore.plans.vllm, gemma_explore.media.loaders, gemma_explore.media.headers\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
