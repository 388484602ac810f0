"""The conformance set: Gemma's token expansion written down for other runtimes to test
against (``golden.py``: the cases, their generation by the real processors, the files)."""
