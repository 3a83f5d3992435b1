"""`python -m wyoming_chorus`: the same as the `wyoming-chorus` command."""
import sys

try:
    from wyoming_chorus.cli import main
except ImportError as missing:
    # Run from a checkout installed without -e: one line that says what to do, not a traceback (native_module.py).
    if "compiled runner" not in str(missing):
        raise
    sys.exit(f"wyoming-chorus: {missing}")

sys.exit(main())
