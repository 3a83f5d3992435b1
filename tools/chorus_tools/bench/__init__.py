"""tools/bench.py's parts: the plan, the workloads and scenarios, the phases against real servers, the engine level, KV
capacity, the figures, the report and its plots."""
