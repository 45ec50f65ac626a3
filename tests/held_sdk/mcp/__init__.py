"""Stands in for the `mcp` package until the test lets it go (tests/test_front.py): it blocks in
its import, reading a FIFO the test opens when it is done, then puts the real SDK in its place."""

import importlib
import os
import sys

with open(os.environ["MEMORY_GATE_TEST_HOLD_SDK"], "rb") as held:
    held.read()
here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [folder for folder in sys.path if os.path.abspath(folder or ".") != here]
del sys.modules["mcp"]
# The import machinery hands out what sys.modules holds once this module has run: the real one.
sys.modules["mcp"] = importlib.import_module("mcp")
