"""tools/bench_peers.py's parts: the shared random checkpoint (`checkpoint`) and the measurements (`measure`)."""
