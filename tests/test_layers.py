"""The package layout is layered (README, "How it works"): each part of `service` imports only the parts below it.
Read from the source with ast, so a new upward import fails here rather than in review."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import service

ROOT = Path(service.__file__).parent
LEAVES = {"config", "errors", "metrics", "_native"}
# What each part may import besides the leaves (and itself).
ALLOWED = {
    "graphs": set(),
    "modeldir": set(),
    "export": {"graphs", "modeldir"},
    "engine": {"modeldir"},
    "frontend": {"modeldir", "engine.sequence"},
    "wyoming": {"speech.api"},
    "speech": {"engine", "frontend", "modeldir"},  # the model comes resolved (service.app): no exporter
}


def _part(module: str) -> str:
    return module.split(".")[1] if module.count(".") >= 1 else ""


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names] if node.module == "service" else []
            found.update(names or [node.module])
    return {name for name in found if name.startswith("service.")}


def _allowed(part: str, imported: str) -> bool:
    inner = imported.removeprefix("service.")
    target = inner.split(".")[0]
    if target == part or target in LEAVES:
        return True
    return any(inner == rule or inner.startswith(rule + ".") for rule in ALLOWED[part])


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_each_part_imports_only_what_is_below_it(part):
    files = sorted((ROOT / part).rglob("*.py")) if (ROOT / part).is_dir() else [ROOT / f"{part}.py"]
    assert files
    upward = [f"{path.relative_to(ROOT)} imports {name}" for path in files for name in sorted(_imports(path))
              if not _allowed(part, name)]
    assert not upward


def test_the_speech_api_imports_nothing_of_the_service():
    """The server imports it: Request and Handle must not pull in the engine (OpenVINO) behind them."""
    assert _imports(ROOT / "speech" / "api.py") == set()
    assert _imports(ROOT / "speech" / "__init__.py") == set()


def test_the_leaves_import_nothing_of_the_service():
    for leaf in ("config", "errors", "metrics"):
        assert _imports(ROOT / f"{leaf}.py") == set(), leaf
