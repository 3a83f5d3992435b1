"""The package layout is layered (docs/architecture.md): each part of the package imports only the parts below it.
Read from the source tree (not the installed copy) with ast, relative imports resolved, so a new upward import fails
here rather than in review; every module of the package belongs to a part, so none escapes the check."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "wyoming_chorus"
LEAVES = {"config", "config_checks", "cpu", "errors", "inbox", "lm_precision", "malloc_arenas", "metrics",
          "playback_clock", "native_module", "_native"}
# Leaf modules inside a part: speech/api (a Request in, a Handle out) is the seam every layer shares, so the engine,
# the front end and the protocol side import Request, Handle and RequestInfo from it instead of copying them.
SHARED = {"speech.api"}
# Speaking a text sentence by sentence, free of the engine behind it (no OpenVINO): the protocol side speaks its
# replies through it, the studio its previews, both to a SpeechEngine.
SPEAKING = {"speech.speech_engine", "speech.sentence_audio", "speech.sentences", "speech.utterances"}
# The composition root and the command line put the parts together: they may import any of them.
TOP = {"__init__", "__main__", "app", "cli"}
# What each part may import besides the leaves (and itself).
ALLOWED = {
    "graphs": set(),
    "modeldir": set(),
    # The exporter checks compressed weights on prompts built exactly as the server builds them (frontend.prompt).
    "export": {"graphs", "modeldir", "frontend.prompt"},
    "engine": {"modeldir"},
    "frontend": {"modeldir", "engine.sequence"},
    "wyoming": SPEAKING,
    "speech": {"engine", "frontend", "modeldir"},  # the model comes resolved (wyoming_chorus.app): no exporter
    "metrics_http": set(),
    # The voice studio: its page on metrics_http's server, previews spoken as Wyoming replies are (not through the
    # protocol), voices written where the front end reads them.
    "studio": {"metrics_http", "frontend", "modeldir"} | SPEAKING,
}


def _part(module: str) -> str:
    return module.split(".")[1] if module.count(".") >= 1 else ""


def _module_of(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, source: str | None = None) -> set[str]:
    """The service modules `path` imports, absolute; `from .x import y` and `from .. import z` resolved."""
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            if "." not in base:  # `from wyoming_chorus import speech`, `from .. import engine`: the names are modules
                found.update(f"{base}.{alias.name}" for alias in node.names)
            else:  # `from wyoming_chorus.x.y import Name`: the module is x.y
                found.add(base)
    return {name for name in found if name.startswith("wyoming_chorus.")}


def _allowed(part: str, imported: str) -> bool:
    inner = imported.removeprefix("wyoming_chorus.")
    target = inner.split(".")[0]
    if target == part or target in LEAVES or inner in SHARED:
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
    assert _imports(ROOT / "speech" / "api.py") <= {"wyoming_chorus.playback_clock"}  # a leaf, plain Python
    assert _imports(ROOT / "speech" / "__init__.py") == set()


def test_speaking_needs_no_engine():
    """The server and the studio import these: they must not pull in the engine (OpenVINO) either."""
    for module in SPEAKING:
        imported = _imports(ROOT.joinpath(*module.split(".")).with_suffix(".py"))
        assert {name.removeprefix("wyoming_chorus.") for name in imported} <= SPEAKING | SHARED, module


def test_no_protocol_copies_the_speech_api():
    """Request and Handle are imported where they are used, not written out again as a Protocol of a lower layer
    (speech/api is a leaf, so nothing stops importing it): a Protocol outside speech/ naming two or more of their
    members is such a copy."""
    api = ast.parse((ROOT / "speech" / "api.py").read_text(encoding="utf-8"))
    shared = {_members(node) for node in api.body if isinstance(node, ast.ClassDef)
              and node.name in ("Request", "Handle", "RequestInfo")}
    names = set().union(*shared) - {"__init__"}
    copies = [f"{path.relative_to(ROOT)}: {node.name}" for path in ROOT.rglob("*.py") if path.parent.name != "speech"
              for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              if isinstance(node, ast.ClassDef) and any(ast.unparse(base).endswith("Protocol") for base in node.bases)
              and len(_members(node) & names) >= 2]
    assert not copies


def _members(node: ast.ClassDef) -> frozenset[str]:
    """The names a class defines: its methods and its annotated fields."""
    return frozenset(item.name if isinstance(item, ast.FunctionDef) else ast.unparse(item.target)
                     for item in node.body if isinstance(item, (ast.FunctionDef, ast.AnnAssign)))


def test_every_module_of_the_package_belongs_to_a_checked_part():
    parts = set(ALLOWED) | LEAVES | TOP
    strays = [str(path.relative_to(ROOT)) for path in ROOT.rglob("*.py")
              if path.relative_to(ROOT).parts[0].removesuffix(".py") not in parts]
    assert not strays


def test_relative_imports_are_resolved():
    """An upward import written relatively (`from ..frontend import requests` in the engine) is seen, not dropped."""
    engine_module = ROOT / "engine" / "core.py"
    upward = _imports(engine_module, "from ..frontend.requests import RequestBuilder")
    assert upward == {"wyoming_chorus.frontend.requests"}
    assert _imports(engine_module, "from .. import speech") == {"wyoming_chorus.speech"}
    assert _imports(engine_module, "from .scheduler import Scheduler") == {"wyoming_chorus.engine.scheduler"}
    assert not _allowed("engine", "wyoming_chorus.frontend.requests")


def test_the_leaves_import_nothing_of_the_service():
    # config's value checks live beside it (config_checks.py), a leaf below it; the CPU's ISA comes from CPUID, which
    # the native module reads (through native_module, which only imports it)
    below = {"config": {"wyoming_chorus.config_checks"}, "cpu": {"wyoming_chorus.native_module"},
             "native_module": {"wyoming_chorus._native"}}
    for leaf in ("config", "config_checks", "cpu", "errors", "inbox", "metrics", "playback_clock", "native_module"):
        assert _imports(ROOT / f"{leaf}.py") <= below.get(leaf, set()), leaf
