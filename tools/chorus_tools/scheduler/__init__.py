"""The scheduler driven without the native runner, shared by its unit tests (tests/engine/test_scheduler.py and the
playback tests) and tools/explore_scheduler.py: a fake runner that checks every cached row (`fake_runner`) and the
random state machine over it (`random_operations`)."""
