"""Modules renamed for what they hold still import for one release, with a warning, and
give the very objects of their new homes."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import gemma_explore as ge
from gemma_explore import inspection


def _fresh_import(name: str):
    sys.modules.pop(name, None)
    with pytest.warns(DeprecationWarning, match="goes in 0.3"):
        return importlib.import_module(name)


def test_the_inspect_module_is_now_inspection():
    old = _fresh_import("gemma_explore.inspect")
    assert old.vision_pooling is inspection.vision_pooling is ge.vision_pooling
    assert old.encode_images is inspection.encode_images


def test_the_package_never_imports_its_own_shims():
    """``import gemma_explore`` does not load the shim: no warning for the user."""
    code = "import gemma_explore, sys; assert 'gemma_explore.inspect' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
