"""Layering: the gate depends on calibration, never the other way round."""

import subprocess
import sys


def test_calibration_does_not_import_the_gate():
    code = ("import sys, agentic_rag.calibration; "
            "print('agentic_rag.gate' in sys.modules, 'agentic_rag.retrievers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]
