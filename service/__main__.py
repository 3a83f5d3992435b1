"""`python -m service`: the same as the `wyoming-chorus` command."""
import sys

from service.cli import main

sys.exit(main())
