"""`wyoming-chorus synth`: one text to a WAV file (and its codes to .npy), through the real engine."""
from __future__ import annotations

import socket
import time
import wave

import numpy as np
import pytest

from wyoming_chorus.cli import main

from helpers import free_port


def test_synth_writes_a_wav_and_the_codes(tmp_path):
    out, codes = tmp_path / "out.wav", tmp_path / "codes.npy"
    assert main(["synth", "Hello there.", "-o", str(out), "--seed", "7", "--save-codes", str(codes)]) == 0
    with wave.open(str(out)) as wav:
        assert (wav.getframerate(), wav.getsampwidth(), wav.getnchannels()) == (24000, 2, 1)
        assert wav.getnframes() > 0
    frames = np.load(codes)
    assert frames.ndim == 2 and frames.shape[1] == 16 and frames.shape[0] > 0


def test_synth_with_an_unknown_voice_fails_cleanly(tmp_path, capsys):
    assert main(["synth", "Hello there.", "-o", str(tmp_path / "out.wav"), "--voice", "no-such-voice"]) == 1
    assert "no-such-voice" in capsys.readouterr().err
    assert not (tmp_path / "out.wav").exists()


# ---- a newcomer's mistakes: one line on stderr, exit code 2, before anything slow ------------------------------

def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_synth_to_a_missing_folder_fails_before_synthesising(tmp_path, capsys):
    started = time.monotonic()
    assert main(["synth", "Hello there.", "-o", str(tmp_path / "missing" / "x.wav")]) == 2
    assert "missing" in _one_line_error(capsys)
    assert time.monotonic() - started < 5, "it loaded the model first"


@pytest.mark.parametrize(("flag", "setting"), [("--uri", "server.uri"), ("--metrics-port", "metrics.port")])
def test_a_port_in_use_is_named_before_the_model_loads(flag, setting, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        value = f"tcp://127.0.0.1:{port}" if flag == "--uri" else str(port)
        others = ["--uri", f"tcp://127.0.0.1:{free_port()}"] if flag != "--uri" else []
        # A model that does not exist: were it loaded first, the error would be about the model.
        code = main([flag, value, *others, "--no-zeroconf", "--model", "/nonexistent/model"])
    assert code == 2
    err = _one_line_error(capsys)
    assert setting in err and "in use" in err and flag in err, err


def test_version_names_the_program(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("wyoming-chorus ")


@pytest.mark.parametrize(("flags", "named"), [
    (["--model", "/nonexistent/model"], "wyoming-chorus export"),
    (["--model", "builtin:huge"], "builtin:tiny"),
    (["--device", "GPU"], "devices present"),
    (["--kv-precision", "u4"], "engine.kv_precision"),
], ids=["missing-model", "unknown-builtin", "absent-gpu", "unknown-kv-precision"])
def test_a_setup_mistake_is_one_line_naming_the_fix_and_exit_code_2(flags, named, capsys):
    code = main(["--uri", f"tcp://127.0.0.1:{free_port()}", "--no-zeroconf", "--metrics-port", "0", *flags])
    assert code == 2
    assert named in _one_line_error(capsys)


def test_a_kv_precision_this_cpu_cannot_run_is_one_line_naming_what_it_can(capsys):
    from wyoming_chorus.engine.device import check_device
    from wyoming_chorus.errors import SetupError

    try:
        check_device("CPU", "bf16", "")
    except SetupError:  # the runner's own check: this CPU has no bf16
        pass
    else:
        pytest.skip("this CPU runs a bf16 KV cache")
    code = main(["--uri", f"tcp://127.0.0.1:{free_port()}", "--no-zeroconf", "--metrics-port", "0",
                 "--kv-precision", "bf16"])
    assert code == 2
    assert "it can run u8" in _one_line_error(capsys)
