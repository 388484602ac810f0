"""Modules renamed for what they hold still import for one release, with a warning, and
give the very objects of their new homes."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import gemma_explore as ge
from gemma_explore.bill import totals as bill_results
from gemma_explore.bill import walk as dataset_bill
from gemma_explore.bill import writers as bill_writers
from gemma_explore.inside import towers as inspection


def _fresh_import(name: str):
    sys.modules.pop(name, None)
    with pytest.warns(DeprecationWarning, match="goes in 0.3"):
        return importlib.import_module(name)


def test_the_inspect_module_is_now_inspection():
    old = _fresh_import("gemma_explore.inspect")
    assert old.vision_pooling is inspection.vision_pooling is ge.vision_pooling
    assert old.encode_images is inspection.encode_images


def test_the_bill_module_was_split_and_stays_callable(tmp_path):
    """(``ge.bill`` is the function until the old module is imported: see the next test,
    in a fresh interpreter; the doctest run imports the shim, which rebinds it.)"""
    assert ge.Bill is bill_results.Bill
    before = ge.bill
    old = _fresh_import("gemma_explore.bill")
    assert old.bill is dataset_bill.bill and old.BillWriter is bill_writers.BillWriter
    assert old.Bill is bill_results.Bill and old.Progress is dataset_bill.Progress
    # Importing the old module rebinds ge.bill to it; calling it still bills.
    empty = tmp_path / "empty"
    empty.mkdir()
    try:
        assert ge.bill(empty).files == old(empty).files == 0
    finally:
        ge.bill = before  # leave the session's ge.bill as this test found it


def test_the_package_never_imports_its_own_shims():
    """``import gemma_explore`` loads neither shim: no warning for the user, and ``ge.bill``
    stays the function."""
    code = (
        "import gemma_explore, sys; "
        "assert callable(gemma_explore.bill) and gemma_explore.bill.__module__.endswith("
        "'dataset_bill'); "
        "assert 'gemma_explore.inspect' not in sys.modules; "
        "assert 'gemma_explore.bill' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
