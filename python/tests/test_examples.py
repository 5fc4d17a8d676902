"""The README's Python example runs as written (it needs torch and a GPU)."""
import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "quickstart.py"


def test_quickstart_example_runs():
    pytest.importorskip("torch")
    result = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=dict(os.environ),
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert "quickstart: (4096, 32, 128) (2, 32, 128, 128) (4096, 2048)" in result.stdout
