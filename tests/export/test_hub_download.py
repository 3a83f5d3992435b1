"""Hub models: `--model 0.6b-custom` (or OWNER/NAME) downloads the checkpoint with huggingface_hub and exports it on
first use, and later starts are served from the export without any request.

No hub is reachable here, so a small HTTP server on 127.0.0.1 plays the hub (the API and file URLs huggingface_hub
uses, 0.36 and 2.x alike) for a tiny torch-free checkpoint in the hub layout. huggingface_hub reads HF_ENDPOINT when
it is imported, so each start runs in a fresh interpreter: also the only way to see that a cached start never
imports the hub client at all.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from wyoming_chorus.errors import SetupError
from wyoming_chorus.export import builtin, default_weights, hub

from checkpoints import write_checkpoint

REPO = "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice"
COMMIT = "4f1e2d3c" * 5
_START = """
import json, sys
from wyoming_chorus.errors import SetupError
from wyoming_chorus.export.builtin import resolve_model
try:
    path = resolve_model(sys.argv[1], sys.argv[2])
except SetupError as error:
    print(error, file=sys.stderr)
    sys.exit(2)
print(json.dumps({"path": str(path), "hub_client_imported": "huggingface_hub" in sys.modules}))
"""


class FakeHub:
    """Serves repositories (id -> directory) at the hub's URLs: /api/models/ID/revision/REV (sha and siblings),
    /api/models/ID/tree/REV (the file list of huggingface_hub 1.x+), HEAD and GET /ID/resolve/REV/PATH (ETag,
    X-Repo-Commit, ranges for resumed downloads). Every request is recorded as "METHOD PATH"."""

    def __init__(self, repos: dict[str, Path]):
        self.repos = repos
        self.requests: list[str] = []
        # Files whose download fails after their HEAD request succeeded: 403, which no huggingface_hub version retries.
        self.failing: set[str] = set()
        self.refused: list[str] = []  # "GET PATH" of each download refused that way
        hub_ = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                hub_._serve(self, body=True)

            def do_HEAD(self):
                hub_._serve(self, body=False)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def gets(self, suffix: str) -> int:
        return sum(1 for r in self.requests if r.startswith("GET ") and r.endswith(suffix))

    def arrived(self, suffix: str) -> int:
        """Downloads of the file that were served (not refused)."""
        return self.gets(suffix) - sum(1 for r in self.refused if r.endswith(suffix))

    def _files(self, repo: str) -> dict[str, Path]:
        root = self.repos[repo]
        return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}

    def _serve(self, request: BaseHTTPRequestHandler, body: bool) -> None:
        path = unquote(urlsplit(request.path).path)
        self.requests.append(f"{request.command} {path}")
        api = re.fullmatch(r"/api/models/([^/]+/[^/]+)/(revision|tree)/([^/]+)(/.*)?", path)
        resolve = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        repo = (api or resolve).group(1) if (api or resolve) else None
        if repo not in self.repos:
            return self._reply(request, 404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"})
        files = self._files(repo)
        if api and api.group(2) == "revision":
            info = {"id": repo, "modelId": repo, "sha": COMMIT, "private": False,
                    "siblings": [{"rfilename": name} for name in files]}
            return self._reply(request, 200, json.dumps(info).encode(), body=body)
        if api:
            entries = [{"type": "file", "oid": _oid(p), "size": p.stat().st_size, "path": name}
                       for name, p in files.items()]
            folders = sorted({name.rsplit("/", 1)[0] for name in files if "/" in name})
            entries += [{"type": "directory", "oid": "0" * 40, "path": folder} for folder in folders]
            return self._reply(request, 200, json.dumps(entries).encode(), body=body)
        if resolve.group(3) not in files:
            return self._reply(request, 404, b"{}", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT})
        if body and resolve.group(3) in self.failing:
            self.refused.append(f"GET {path}")
            return self._reply(request, 403, b'{"error": "Forbidden"}')
        data = files[resolve.group(3)].read_bytes()
        headers = {"ETag": f'"{_oid(files[resolve.group(3)])}"', "X-Repo-Commit": COMMIT}
        start = re.fullmatch(r"bytes=(\d+)-", request.headers.get("Range", ""))
        if start and body:
            first = int(start.group(1))
            headers["Content-Range"] = f"bytes {first}-{len(data) - 1}/{len(data)}"
            return self._reply(request, 206, data[first:], headers)
        return self._reply(request, 200, data, headers, body=body)

    @staticmethod
    def _reply(request, status: int, data: bytes, headers: dict | None = None, body: bool = True) -> None:
        request.send_response(status)
        for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
            request.send_header(key, value)
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        if body:
            request.wfile.write(data)


def _oid(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def repos(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hub")
    write_checkpoint(root / "tts")
    (root / "tts" / "README.md").write_text("not a checkpoint file: never downloaded\n")
    (root / "llm").mkdir()
    (root / "llm" / "config.json").write_text(json.dumps({"model_type": "qwen3"}))
    (root / "llm" / "model.safetensors").write_bytes(b"\0" * 64)
    return {REPO: root / "tts", "someone/not-tts": root / "llm"}


@pytest.fixture
def fake_hub(repos):
    served = FakeHub(repos)
    yield served
    served.stop()


def start(model: str, data_dir: Path, endpoint: str, tmp_path: Path, wait: bool = True):
    """One first (or later) start in a fresh interpreter, as `wyoming-chorus --model MODEL --data-dir DATA_DIR`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(HF_ENDPOINT=endpoint, HF_HOME=str(tmp_path / "hf-home"), HF_HUB_DISABLE_TELEMETRY="1", CI="true")
    # cwd: outside the checkout, which `python -c` would put first on sys.path (a source tree without _native)
    process = subprocess.Popen([sys.executable, "-c", _START, model, str(data_dir)], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    return _finish(process) if wait else process


def _finish(process: subprocess.Popen) -> tuple[int, dict | None, str]:
    # A guard against a hang, not a timing: a first start's export checks INT4 (~20 s of CPU on this tiny model),
    # which on a machine shared with other work can take minutes.
    out, err = process.communicate(timeout=1200)
    assert process.returncode != 0 or out.strip(), f"no result on stdout; stderr: {err[-3000:]}"
    return process.returncode, json.loads(out.strip().splitlines()[-1]) if process.returncode == 0 else None, err


def test_an_interrupted_download_resumes_then_exports_once_and_later_starts_make_no_request(fake_hub, tmp_path):
    """A first start whose download breaks off fails in one line; the next starts fetch only what is missing and
    export once (each export checks INT4, the costly part: one test, one export)."""
    data_dir = tmp_path / "data"
    fake_hub.failing.add("model-00002-of-00002.safetensors")
    code, _, err = start("0.6b-custom", data_dir, fake_hub.url, tmp_path)
    assert code == 2 and err.strip().splitlines()[-1].startswith(f"cannot download {REPO} from "), err
    assert not list((data_dir / "models").glob("*/chorus.json"))
    fake_hub.failing.clear()
    fetched = {name: fake_hub.gets(name) for name in ("model-00001-of-00002.safetensors", "vocab.json")}
    assert fetched == {"model-00001-of-00002.safetensors": 1, "vocab.json": 1}

    # Two servers started at once, by short name and by id: one downloads and exports, the other waits for its lock
    # and serves its export (or, when it starts late, finds the export at once).
    both = [start(model, data_dir, fake_hub.url, tmp_path, wait=False) for model in ("0.6b-custom", REPO)]
    results = [_finish(process) for process in both]
    assert [code for code, _, _ in results] == [0, 0], [err for _, _, err in results]
    path = Path(results[0][1]["path"])
    assert results[1][1]["path"] == str(path)
    weights, _ = default_weights.default_weights()
    assert path == data_dir / "models" / f"Qwen--Qwen3-TTS-12Hz-0.6B-CustomVoice-{weights}"
    manifest = json.loads((path / "chorus.json").read_text())
    assert manifest["name"] == "Qwen3-TTS-12Hz-0.6B-CustomVoice" and manifest["model_type"] == "custom_voice"
    if weights == "auto":  # the default with NNCF: INT4 checked on the downloaded checkpoint, graph by graph
        chosen = {graph: figures["weights"] for graph, figures in manifest["weights_check"]["graphs"].items()}
        assert set(chosen) == {"talker", "code_predictor"} and set(chosen.values()) <= {"int4", "int8"}
        assert manifest["weights"] == ("int4" if "int4" in chosen.values() else "int8")
        checks = [err.count("export: checking INT4 on this checkpoint: ") for _, _, err in results]
        assert sorted(checks) == [0, 2], results  # one start exported: a line for the talker, one for the predictor
    else:
        assert manifest.get("weights", "f16") == weights == "f16"
    assert {name: fake_hub.gets(name) for name in fetched} == fetched  # kept from the first attempt
    assert fake_hub.gets("model-00002-of-00002.safetensors") >= 2  # asked again after it was refused
    for name in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                 "speech_tokenizer/model.safetensors", "vocab.json"):
        # Arrived once, over the broken attempt and the two starts at once.
        assert fake_hub.arrived(f"/resolve/{COMMIT}/{name}") + fake_hub.arrived(f"/resolve/main/{name}") == 1, name
    assert fake_hub.gets("README.md") == 0
    assert {p.name for p in (data_dir / "models").iterdir()} == {path.name, f".{path.name.rsplit('-', 1)[0]}.lock"}
    assert not (data_dir / "downloads" / "Qwen--Qwen3-TTS-12Hz-0.6B-CustomVoice").exists()  # exported: removed

    before = len(fake_hub.requests)
    code, later, err = start("0.6b-custom", data_dir, fake_hub.url, tmp_path)
    assert code == 0, err
    assert later == {"path": str(path), "hub_client_imported": False}
    assert len(fake_hub.requests) == before


def test_no_network_and_no_cache_is_one_line_saying_what_to_download(tmp_path):
    unreachable = FakeHub({})
    unreachable.stop()  # nothing listens on its port any more
    code, _, err = start("1.7b-design", tmp_path / "data", unreachable.url, tmp_path)
    line = err.strip()
    assert code == 2 and "\n" not in line, err
    assert line.startswith(f"cannot download Qwen/Qwen3-TTS-12Hz-1.7B-VoiceDesign from {unreachable.url} ("), line
    assert "`hf download Qwen/Qwen3-TTS-12Hz-1.7B-VoiceDesign --local-dir CHECKPOINT`" in line
    assert "`wyoming-chorus export CHECKPOINT -o MODEL_DIR`" in line and line.endswith("pass --model MODEL_DIR")
    assert not list((tmp_path / "data").glob("models/*/chorus.json"))


@pytest.mark.parametrize(("model", "expected"), [
    ("nobody/no-such-model", "nobody/no-such-model is neither a model directory here nor a model on"),
    ("someone/not-tts", "someone/not-tts is not a Qwen3-TTS 12 Hz model"),
])
def test_a_hub_name_that_is_no_tts_model_is_one_line(fake_hub, tmp_path, model, expected):
    code, _, err = start(model, tmp_path / "data", fake_hub.url, tmp_path)
    assert code == 2 and err.strip().splitlines()[-1].startswith(expected), err
    assert fake_hub.gets("/model.safetensors") == 0  # refused after config.json
    assert not (tmp_path / "data" / "downloads" / model.replace("/", "--")).exists()


def test_model_names():
    assert hub.hub_repo("0.6b-custom") == REPO and hub.hub_repo("1.7B-Base") == "Qwen/Qwen3-TTS-12Hz-1.7B-Base"
    assert set(hub.HUB_MODELS.values()) == {f"Qwen/Qwen3-TTS-12Hz-{size}" for size in (
        "0.6B-CustomVoice", "0.6B-Base", "1.7B-CustomVoice", "1.7B-VoiceDesign", "1.7B-Base")}
    assert hub.hub_repo("my-org/my.fine-tune_2") == "my-org/my.fine-tune_2"
    for path in ("/models/chorus", "./chorus/model", "~/chorus", "chorus", "a/b/c", "../x"):
        assert hub.hub_repo(path) is None, path


def test_the_default_weights_are_auto_with_nncf_and_f16_without(monkeypatch):
    real = default_weights.importlib.util.find_spec
    monkeypatch.setattr(default_weights.importlib.util, "find_spec",
                        lambda name: object() if name == "nncf" else real(name))
    weights, why = default_weights.default_weights()
    assert weights == "auto" and "INT4 where this checkpoint's check allows" in why
    monkeypatch.setattr(default_weights.importlib.util, "find_spec",
                        lambda name: None if name == "nncf" else real(name))
    weights, why = default_weights.default_weights()
    assert weights == "f16" and "pip install 'wyoming-chorus[compress]'" in why


def test_data_dir_defaults_to_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert hub.data_root() == tmp_path / "wyoming-chorus"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert hub.data_root() == tmp_path / ".local" / "share" / "wyoming-chorus"


def test_settings_that_name_no_model_fail_with_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(builtin, "hub_model", lambda *args: pytest.fail("no hub model is named here"))
    with pytest.raises(SetupError, match=r"^unknown built-in model 'builtin:huge'; built in: builtin:tiny, "
                                         r"builtin:tiny-base, builtin:tiny-design$"):
        builtin.resolve_model("builtin:huge")
    with pytest.raises(SetupError, match=r"^/nonexistent does not exist; .*`wyoming-chorus export CHECKPOINT -o "
                                         r"MODEL_DIR`.*0\.6b-custom"):
        builtin.resolve_model("/nonexistent")
    # An existing directory is a path, even when its relative name looks like OWNER/NAME.
    (tmp_path / "owner" / "name").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SetupError, match=r"^owner/name is not a model directory \(no chorus.json\); "):
        builtin.resolve_model("owner/name")


def test_a_cached_export_in_another_mode_is_served_rather_than_downloaded_again(tmp_path, monkeypatch):
    """An export made before auto became the default (int8) is kept, not made again."""
    monkeypatch.setattr(hub, "default_weights", lambda: ("auto", "test"))
    monkeypatch.setattr(hub, "_download", lambda *args: pytest.fail("an export is cached: nothing to download"))
    cached = tmp_path / "models" / "Qwen--Qwen3-TTS-12Hz-1.7B-Base-int8"
    cached.mkdir(parents=True)
    (cached / "chorus.json").write_text("{}")
    assert builtin.resolve_model("1.7b-base", tmp_path) == cached


def test_a_data_dir_that_cannot_be_written_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(SetupError, match=r"^cannot create .*/file/models: Not a directory; pass a writable --data-dir"):
        builtin.resolve_model("0.6b-custom", tmp_path / "file")
