"""Settings: the embedded config.yaml, validation that names the key, overrides, and the CLI's exit code 2."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from wyoming_chorus.config import ConfigError, EngineSettings, Settings, default_config_path, load_settings

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_the_embedded_config_is_found_and_equals_the_defaults():
    assert default_config_path().read_text() == (REPO / "config.yaml").read_text()
    assert load_settings() == Settings()


def test_the_embedded_config_has_every_key_and_a_comment_for_each():
    raw = yaml.safe_load((REPO / "config.yaml").read_text())
    for section in dataclasses.fields(Settings):
        keys = {f.name for f in dataclasses.fields(section.default_factory) if not f.metadata.get("from_file")}
        assert set(raw[section.name]) == keys
    commented = False
    for line in (REPO / "config.yaml").read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            commented = True
        elif line.startswith("  ") and ":" in stripped:  # a key inside a section
            assert commented, f"undocumented key: {stripped}"
            commented = False


def test_a_partial_file_keeps_the_other_defaults(tmp_path):
    settings = load_settings(write(tmp_path, "engine:\n  max_batch: 4\n  device: cpu\n"))
    assert settings.engine == dataclasses.replace(EngineSettings(), max_batch=4, device="CPU")
    assert settings.server == Settings().server


def test_overrides_win_and_are_validated(tmp_path):
    path = write(tmp_path, "engine:\n  model: /somewhere\n")
    assert load_settings(path, {"engine.model": "builtin:tiny"}).engine.model == "builtin:tiny"
    with pytest.raises(ConfigError, match=r"^engine\.kv_precision: "):
        load_settings(path, {"engine.kv_precision": "q4"})


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("engine:\n  kv_precison: u8\n", "engine.kv_precison"),
        ("enigne:\n  model: x\n", "enigne"),
        ("engine: 3\n", "engine"),
        ("engine:\n  kv_precision: q4\n", "engine.kv_precision"),
        ("engine:\n  max_batch: 0\n", "engine.max_batch"),
        ("engine:\n  max_batch: 2.5\n", "engine.max_batch"),
        ("engine:\n  kv_cache_mb: true\n", "engine.kv_cache_mb"),
        ("engine:\n  device: TPU\n", "engine.device"),
        ("engine:\n  seed: -1\n", "engine.seed"),
        ("engine:\n  greedy: maybe\n", "engine.greedy"),
        ("engine:\n  policy: fifo\n", "engine.policy"),
        ("engine:\n  model: ''\n", "engine.model"),
        ("server:\n  uri: http://localhost:10200\n", "server.uri"),
        ("server:\n  uri: tcp://localhost\n", "server.uri"),
        ("server:\n  uri: stdio://\n", "server.uri"),
        ("server:\n  shutdown_timeout: 0\n", "server.shutdown_timeout"),
        ("server:\n  log_level: LOUD\n", "server.log_level"),
        ("zeroconf:\n  address: 0.0.0.0\n", "zeroconf.address"),
        ("zeroconf:\n  address: my-host\n", "zeroconf.address"),
        ("zeroconf:\n  interfaces: lo\n", "zeroconf.interfaces"),
        ("metrics:\n  port: 70000\n", "metrics.port"),
    ],
)
def test_an_invalid_value_names_its_key(tmp_path, text, key):
    with pytest.raises(ConfigError) as raised:
        load_settings(write(tmp_path, text))
    message = str(raised.value)
    assert message.startswith(f"{key}: ") and "\n" not in message


def test_unreadable_files_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(write(tmp_path, "engine:\n  model: [unclosed\n"))
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="mapping"):
        load_settings(write(tmp_path, "- a list\n"))


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m wyoming_chorus ARGS` in `cwd`: a folder outside the checkout, since `python -m` puts the working
    folder first on sys.path, and in the repository root that would be the source tree, which has no compiled runner
    unless the install is editable (pip install -e)."""
    return subprocess.run(
        [sys.executable, "-m", "wyoming_chorus", *args], capture_output=True, text=True, timeout=60, cwd=cwd
    )


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (["--kv-precision", "q4"], "engine.kv_precision"),
        (["--metrics-port", "70000"], "metrics.port"),
        (["--uri", "udp://0.0.0.0:1"], "server.uri"),
        (["--config", "{bad}"], "engine.max_batch"),
    ],
)
def test_the_cli_reports_a_bad_config_in_one_line_and_exits_2(tmp_path, args, key):
    bad = write(tmp_path, "engine:\n  max_batch: -3\n")
    result = run_cli(tmp_path, *(str(bad) if a == "{bad}" else a for a in args))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{key}: " in lines[0], result.stderr


def test_python_m_speaks_with_the_installed_runner(tmp_path):
    out = tmp_path / "hello.wav"
    result = run_cli(tmp_path, "synth", "Hello.", "-o", str(out), "--data-dir", str(tmp_path / "data"))
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 44, "a WAV with no samples"
