"""The household scenarios on the playback server and the FCFS server, alternated A-B-A-B in one sitting.

Both servers stay up for the whole part (their configs differ only in scheduler.policy; the one not measured idles),
and each scenario (one room and bursts of rooms, Poisson arrivals, an announcement under readers) runs on playback,
then on FCFS, `--rounds` times, before the next scenario. Load drift on a shared machine then falls on both policies
alike, where running one policy's half of the run before the other's put all of it on the ratio. Each scenario's
figures are pooled over its rounds (chorus_tools/bench/summary.pooled)."""
from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from chorus_tools.bench.figures import fmt
from chorus_tools.bench.phases import bench_server, capacity_rate, contention_figures, measured, row
from chorus_tools.bench.plan import BENCH_SEED, Plan, log
from chorus_tools.bench.summary import pooled, summarise
from chorus_tools.bench.workloads import ClientSettings, Scenario, burst_specs, contention, poisson_specs, run_specs
from chorus_tools.probes import peak_rss_mb
from chorus_tools.servers import ServerProcess

# The two continuous-batching servers, by their phase name in the report.
POLICY_SERVERS: dict[str, dict] = {"continuous": {}, "fcfs": {"scheduler": {"policy": "fcfs"}}}

ScenarioRun = Callable[[ServerProcess, str], Coroutine[Any, Any, Scenario]]


def alternation(rounds: int, names: list[str]) -> list[tuple[int, str]]:
    """(round, server) in the order they run: A, B, A, B, ... for `rounds` rounds."""
    return [(r, name) for r in range(1, rounds + 1) for name in names]


class Sitting:
    """The servers up for the part, each phase's results, and the order the scenarios ran in."""

    def __init__(self, plan: Plan, phases: dict[str, dict], servers: dict[str, ServerProcess]):
        self.plan, self.phases, self.servers = plan, phases, servers
        self.sequence = itertools.count()

    async def each(self, label: str, run: ScenarioRun) -> dict[str, list[Scenario]]:
        """`run(server, phase name)` A-B-A-B; every round's scenario by server. A server that fails is recorded and
        left out of the rounds after."""
        ran: dict[str, list[Scenario]] = {name: [] for name in self.servers}
        for round_, name in alternation(self.plan.rounds, list(self.servers)):
            server = self.servers.get(name)
            if server is None:
                continue
            try:
                scenario = await measured(server, run(server, name))
            except Exception as error:  # noqa: BLE001  (the other server's figures are still worth a report)
                self.phases[name]["error"] = f"{type(error).__name__}: {error}"
                log(f"server {name} failed in {label}: {self.phases[name]['error']}")
                del self.servers[name]
                continue
            scenario.extra.update(round=round_, sequence=next(self.sequence))
            self.phases[name]["scenarios"].append(scenario)
            ran[name].append(scenario)
            r = summarise(scenario)
            log(f"  {label}, {name}, round {round_}: first audio p50 {fmt(r['ttfa_p50_s'])} s, underrun s per reply "
                f"{fmt(r['underrun_s_per_request'])}, held {r['held']}/{r['requests']}, audio/s "
                f"{fmt(r['audio_s_per_wall_s'])}, errors {r['errors']}, wall {scenario.wall_s:.0f} s")
        return {name: rounds for name, rounds in ran.items() if rounds}


async def scenarios(sitting: Sitting, plan: Plan, client: ClientSettings) -> None:
    phases = sitting.phases
    for n in plan.rooms:
        specs = burst_specs(n, BENCH_SEED, plan.mode, plan.readout_words)

        def burst(server: ServerProcess, name: str, n: int = n, specs: list = specs):
            return run_specs(f"{name} burst {n}", server.port, specs, client)

        for name, rounds in (await sitting.each(f"burst {n}", burst)).items():
            phases[name]["texts"] += [(s.kind, s.text) for s in specs]
            phases[name]["sweep"].append(row(pooled(rounds), rooms=n))
    rate = phases["continuous"]["rate"] = capacity_rate(phases["continuous"], plan)
    if plan.poisson_requests:
        specs = poisson_specs(plan.poisson_requests, rate, plan.weights_mix, BENCH_SEED, plan.mode,
                              plan.readout_words)

        def arrivals(server: ServerProcess, name: str):
            return run_specs(f"{name} poisson", server.port, specs, client)

        for name, rounds in (await sitting.each("Poisson arrivals", arrivals)).items():
            phases[name]["texts"] += [(s.kind, s.text) for s in specs]
            phases[name]["poisson"] = row(pooled(rounds), rate_per_s=rate)
    if plan.probes:  # --probes 0: left out (its readers would run for nothing)
        def announce(server: ServerProcess, name: str):
            return contention(server.port, plan.readers, plan.probes, BENCH_SEED, plan.readout_words, client)

        for name, rounds in (await sitting.each("announcement under readers", announce)).items():
            phases[name]["contention"] = contention_figures(pooled(rounds), plan)


async def alternate(model: Path, plan: Plan, scratch: Path, client: ClientSettings) -> dict[str, dict]:
    """{phase name: results} of the playback server ("continuous") and, unless --skip-fcfs, the FCFS one."""
    names = ["continuous"] + (["fcfs"] if plan.fcfs else [])
    phases = {name: {"name": name, "overrides": POLICY_SERVERS[name], "sweep": [], "scenarios": [], "texts": [],
                     "rounds": plan.rounds} for name in names}
    async with contextlib.AsyncExitStack() as stack:
        servers: dict[str, ServerProcess] = {}
        for name in names:
            log(f"server {name} ({POLICY_SERVERS[name] or 'defaults'}): starting")
            try:
                servers[name] = await stack.enter_async_context(bench_server(
                    name, model, POLICY_SERVERS[name], scratch, plan.start_timeout, plan.inference_precision))
                phases[name]["log"] = str(servers[name].log_path)
            except Exception as error:  # noqa: BLE001  (a server that fails leaves its figures out of the report)
                phases[name]["error"] = f"{type(error).__name__}: {error}"
                log(f"server {name} failed: {phases[name]['error']} (log: {scratch / f'server-{name}.log'})")
        sitting = Sitting(plan, phases, dict(servers))
        if "continuous" in servers:
            await scenarios(sitting, plan, client)
        for name, server in servers.items():  # before they stop
            phases[name]["alive_at_end"] = server.alive()
            phases[name]["peak_rss_mb"] = peak_rss_mb(server.pid)
    return phases
