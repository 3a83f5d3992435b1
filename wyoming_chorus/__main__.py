"""`python -m wyoming_chorus`: the same as the `wyoming-chorus` command."""
import sys

from wyoming_chorus.cli import main

sys.exit(main())
