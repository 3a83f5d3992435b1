"""Loaded before pytest's entry-point plugins (`-p ha_harness`, with tests/ha on PYTHONPATH; .ci/home-assistant
does both): pytest-homeassistant-custom-component has no release for Home Assistant 2026.11 yet, and 0.13.375 (for
2026.10.4) runs on it once Home Assistant is imported first and one helper it imports is found where 2026.10 had it.
Does nothing on the releases the harness was made for."""
import homeassistant  # noqa: F401  (2026.11 aliases httpx to httpx2 on import: before respx, the harness's, imports it)
from homeassistant.components import logger

if not hasattr(logger, "_clear_logger_overwrites"):  # moved to logger.helpers in 2026.11
    from homeassistant.components.logger.helpers import _clear_logger_overwrites

    logger._clear_logger_overwrites = _clear_logger_overwrites
