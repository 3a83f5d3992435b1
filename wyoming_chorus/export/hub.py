"""Qwen3-TTS models from the Hugging Face hub: downloaded and exported on first use, served from disk afterwards.

    DATA_DIR/downloads/<owner>--<name>/         the checkpoint while it downloads (resumed after an interruption);
                                                removed once exported, since the server reads only the export
    DATA_DIR/models/<owner>--<name>-<weights>/  the model directory, renamed into place when complete; <weights>
                                                is the mode asked for (default_weights.py: auto, whose chorus.json
                                                says which graphs the check kept at INT4)

A model that has an export is served from it without importing huggingface_hub, so later starts never touch the
network. First starts of the same model are serialised by a lock file (the second waits, then finds the export), so
two servers started at once download and export once; the rename keeps a crash from leaving a half-written model.
The hub is huggingface_hub's: HF_ENDPOINT selects a mirror, HF_TOKEN a login.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from wyoming_chorus.errors import SetupError
from wyoming_chorus.export.default_weights import default_weights

_LOG = logging.getLogger(__name__)

# Short names for the released Qwen3-TTS 12 Hz checkpoints; any other OWNER/NAME is tried on the hub as is.
HUB_MODELS = {
    "0.6b-custom": "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice",
    "0.6b-base": "Qwen/Qwen3-TTS-12Hz-0.6B-Base",
    "1.7b-custom": "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice",
    "1.7b-design": "Qwen/Qwen3-TTS-12Hz-1.7B-VoiceDesign",
    "1.7b-base": "Qwen/Qwen3-TTS-12Hz-1.7B-Base",
}
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
# What the exporter reads (configs, tokenizer files, weights, speech_tokenizer/ alike), not READMEs or images.
_CHECKPOINT_FILES = ["*.json", "*.txt", "*.safetensors"]


def hub_repo(spec: str) -> str | None:
    """The hub repository a model setting names: a short name's, or OWNER/NAME itself; None if it names none."""
    if spec.lower() in HUB_MODELS:
        return HUB_MODELS[spec.lower()]
    return spec if _REPO_ID.fullmatch(spec) else None


def data_root() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "wyoming-chorus"


def hub_model(repo_id: str, data_dir: Path | str | None = None, log=sys.stderr) -> Path:
    """The model directory of hub repository `repo_id`, downloaded and exported into `data_dir` if not there yet.

    Raises SetupError with one line naming the problem and the fix. `log` receives the export's progress."""
    models = Path(data_dir or data_root()).expanduser() / "models"
    key = repo_id.replace("/", "--")
    weights, why = default_weights()
    found = _exported(models, key, weights)
    if found is not None:
        return found
    try:
        models.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SetupError(f"cannot create {models}: {error.strerror}; pass a writable --data-dir (engine.data_dir)") \
            from None
    with _exclusive(models / f".{key}.lock", repo_id):
        found = _exported(models, key, weights)  # made by the process that held the lock before us
        if found is not None:
            return found
        checkpoint = _download(repo_id, models.parent / "downloads" / key)
        _LOG.info("%s: exporting with %s weights: %s", repo_id, weights, why)
        final = models / f"{key}-{weights}"
        _export(repo_id, checkpoint, final, weights, log)  # written beside `final`, renamed into place when complete
        shutil.rmtree(checkpoint, ignore_errors=True)
        with suppress(OSError):  # kept while another model downloads
            checkpoint.parent.rmdir()
    _LOG.info("%s: model directory %s", repo_id, final)
    return final


def _exported(models: Path, key: str, weights: str) -> Path | None:
    """An export of `key`: in `weights` if there is one, else in any mode, so that installing NNCF later does not
    make the next start download the checkpoint again (delete the directory to re-export)."""
    from wyoming_chorus.export.convert import WEIGHT_MODES  # only a tuple, but export.py imports the graph builders

    for mode in (weights, *(mode for mode in WEIGHT_MODES if mode != weights)):
        path = models / f"{key}-{mode}"
        if (path / "chorus.json").is_file():
            if mode != weights:
                _LOG.info("serving %s (%s weights); delete it to export again with %s weights", path, mode, weights)
            return path
    return None


@contextmanager
def _exclusive(lock_file: Path, repo_id: str) -> Iterator[None]:
    """Hold an exclusive lock on `lock_file`; the kernel releases it if the process dies."""
    with open(lock_file, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _LOG.info("%s: another wyoming-chorus is downloading or exporting it; waiting", repo_id)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _download(repo_id: str, local_dir: Path) -> Path:
    # Imported here: a start that finds its export needs no hub client, so it has no path to the network.
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    from wyoming_chorus.export.convert import SUPPORTED_MODEL_TYPES

    _LOG.info("%s: downloading from %s into %s (an interrupted download resumes at the next start)",
              repo_id, constants.ENDPOINT, local_dir)
    try:
        # config.json first: a repository that is no Qwen3-TTS model fails before gigabytes are fetched. Through
        # snapshot_download, whose first request fails at once without a network (hf_hub_download retries for 23 s).
        snapshot_download(repo_id, local_dir=local_dir, allow_patterns=["config.json"])
        config = json.loads((local_dir / "config.json").read_text())
        if config.get("tts_model_type") not in SUPPORTED_MODEL_TYPES:
            shutil.rmtree(local_dir)
            raise SetupError(f"{repo_id} is not a Qwen3-TTS 12 Hz model (its config.json has tts_model_type "
                             f"{config.get('tts_model_type')!r}); choose one of: {', '.join(HUB_MODELS)}")
        snapshot_download(repo_id, local_dir=local_dir, allow_patterns=_CHECKPOINT_FILES)
    except SetupError:
        raise
    except (RepositoryNotFoundError, GatedRepoError):
        raise SetupError(f"{repo_id} is neither a model directory here nor a model on {constants.ENDPOINT} that "
                         f"this machine may read; check the name, or log in with `hf auth login` if it is private "
                         f"or gated") from None
    except Exception as error:  # noqa: BLE001
        # huggingface_hub raises its own errors, OSError, and its HTTP client's (requests or httpx, by version):
        # each means the checkpoint did not arrive.
        if isinstance(error, OSError) and error.errno is not None:  # the disk, not the network: full, read-only
            raise SetupError(f"cannot write {local_dir}: {error.strerror}; free some space or pass another "
                             f"--data-dir (engine.data_dir)") from None
        raise SetupError(f"cannot download {repo_id} from {constants.ENDPOINT} ({_root_cause(error)}); connect "
                         f"this machine, or download it elsewhere with `hf download {repo_id} --local-dir "
                         f"CHECKPOINT`, make a model directory with `wyoming-chorus export CHECKPOINT -o MODEL_DIR` "
                         f"and pass --model MODEL_DIR") from None
    return local_dir


def _root_cause(error: BaseException) -> str:
    """The innermost error under huggingface_hub's wrappers, on one line: "ConnectError: [Errno 111] ..."."""
    while (inner := error.__cause__ or error.__context__) is not None:
        error = inner
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def _export(repo_id: str, checkpoint: Path, out: Path, weights: str, log) -> None:
    from wyoming_chorus.export.convert import ExportError, export_checkpoint

    try:
        export_checkpoint(checkpoint, out, weights=weights, name=repo_id.split("/", 1)[1], log=log)
    except ExportError as error:
        raise SetupError(f"cannot export {repo_id} (downloaded to {checkpoint}): {error}; if the download is "
                         f"incomplete, start again with network access to finish it") from None
