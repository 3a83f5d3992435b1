#!/usr/bin/env python3
"""Explore the scheduler's state machine (chorus_tools.scheduler.random_operations, the one
tests/engine/test_scheduler.py runs) with fresh random seeds until a time budget is spent, so that new failures are
found on purpose rather than by a CI run's luck.

    python tools/explore_scheduler.py --seconds 60          # random seeds, each printed before it runs
    python tools/explore_scheduler.py --seconds 5 --seed 7  # seed 7, then 8, 9, ...: a run to repeat

The CI test runs the state machine with one fixed seed (PROPERTY_SEED). Every seed run here is printed before it
starts; a failure prints hypothesis's falsifying steps and the seed, and exits 1. Turn what it found into an explicit
regression test in tests/engine/test_scheduler.py (hypothesis keeps no example database here).
"""
from __future__ import annotations

import argparse
import random
import sys
import time

from hypothesis import HealthCheck, seed, settings

from chorus_tools.scheduler.random_operations import RandomOperations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="time budget (a run started goes to its end)")
    parser.add_argument("--seed", type=int, help="the first seed (the next runs take the following ones)")
    parser.add_argument("--examples", type=int, default=50, help="state machine runs per seed")
    parser.add_argument("--steps", type=int, default=100, help="most operations in one state machine run")
    args = parser.parse_args()

    options = settings(max_examples=args.examples, stateful_step_count=args.steps, deadline=None, database=None,
                       suppress_health_check=[HealthCheck.too_slow])
    first = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    deadline = time.monotonic() + args.seconds
    runs = 0
    while runs == 0 or time.monotonic() < deadline:
        run_seed = first + runs
        print(f"seed {run_seed}", flush=True)
        case = seed(run_seed)(RandomOperations).TestCase("runTest")
        case.settings = options
        try:
            case.runTest()
        except Exception as error:  # hypothesis has printed the falsifying steps
            print(f"FAILED with seed {run_seed}: {type(error).__name__}: {error}\n"
                  f"repeat: python tools/explore_scheduler.py --seconds 0 --seed {run_seed} "
                  f"--examples {args.examples} --steps {args.steps}", flush=True)
            return 1
        runs += 1
    print(f"{runs} seeds, {runs * args.examples} runs of up to {args.steps} operations: no failure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
