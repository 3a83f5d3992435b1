"""A source tree without the compiled runner (a checkout installed without `-e`) says what to do, in one line,
instead of "cannot import name '_native'"."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import wyoming_chorus

PACKAGE = Path(wyoming_chorus.__file__).resolve().parent


def test_a_source_tree_without_the_compiled_runner_says_how_to_install_it(tmp_path):
    shutil.copytree(PACKAGE, tmp_path / "wyoming_chorus", ignore=shutil.ignore_patterns("_native*", "__pycache__"))
    # An editable install's import hook would find the compiled module for any tree: drop it, as a plain install
    # has none.
    code = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__module__]; "
            "import wyoming_chorus.cpu")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: wyoming-chorus's compiled runner is not in ")
    assert "pip install -e ." in last

