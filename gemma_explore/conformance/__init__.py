"""The conformance set: Gemma's token expansion written down for other runtimes to test
against (``golden.py``: the files, read, and the rules that rebuild each case's input;
``generate.py``: the cases and their generation by the real processors; ``probe.py``: a
running server held to the plans)."""
