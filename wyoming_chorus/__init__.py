"""wyoming-chorus: a Wyoming text-to-speech server (Qwen3-TTS on OpenVINO, continuous batching, paged U8 KV cache).

Importing this package makes the process private before anything imports OpenVINO:

- OpenVINO's telemetry never runs. `import openvino` imports `openvino.tools.ovc`, which sends a usage event through
  `openvino_telemetry`, forks a child to do it, and counts every run in ~/intel/stats. A voice service for a home
  sends nothing anywhere. Marking the module absent in `sys.modules` makes every `import openvino_telemetry` fail,
  and OpenVINO (and NNCF) then use their own no-op stand-ins: nothing is sent, forked or written.
- No signal that a forked child receives can stop the server. asyncio delivers signals through a wakeup socket
  (`signal.set_wakeup_fd`); a child forked without exec inherits that socket and the C signal handler, so a SIGTERM
  sent to the child (OpenVINO's telemetry SIGTERMs its sender after 3 s on a network that drops traffic) would be
  read by the server's loop as its own. In every forked child the wakeup socket is detached at once.
- Memory freed on one thread is reused by the others: glibc's malloc arenas are capped at two (malloc_arenas).
"""
import os
import signal
import sys

sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]


def _detach_signal_wakeup() -> None:
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:  # not the main thread of the main interpreter: that child cannot have asyncio's handlers
        pass


os.register_at_fork(after_in_child=_detach_signal_wakeup)

# Before any thread starts: the arenas a thread gets are fixed when it first allocates (malloc_arenas says why).
from wyoming_chorus.malloc_arenas import cap_malloc_arenas  # noqa: E402

cap_malloc_arenas()
