"""What households hear, per scenario, with the playback policy and with FCFS alternated in one sitting: the Home
Assistant 2026.11 listener model (chorus_tools/bench/listener.py) over every reply of the run. The report's tables,
report.json's "household" and "household_by_kind" sections and the targets about gaps all come from here."""
from __future__ import annotations

from chorus_tools.bench.figures import fmt
from chorus_tools.bench.summary import pooled, summarise
from chorus_tools.bench.workloads import Outcome, Scenario

POLICIES = {"continuous": "playback", "fcfs": "fcfs"}  # the two continuous-batching servers of a run


def _labelled(scenario: Scenario) -> list[tuple[str, list[Outcome]]]:
    """The replies of one scenario run by a household's name for them: one room, a burst of N rooms, Poisson arrivals,
    and the announcement (alone, under readers just started, under readers playing) with its readers apart."""
    name = scenario.name
    if name.endswith(" poisson"):
        return [("Poisson arrivals", scenario.outcomes)]
    if " burst " in name:
        rooms = int(name.rsplit(" ", 1)[1])
        return [("one room" if rooms == 1 else f"burst of {rooms} rooms", scenario.outcomes)]
    if name != "contention":
        return []
    readers = scenario.extra.get("readers", "")
    groups = []
    for label, kind in (("announcement alone", "announce (alone)"),
                        (f"announcement, {readers} rooms reading", f"announce ({readers} reading)"),
                        (f"announcement, {readers} rooms playing", f"announce ({readers} playing)"),
                        (f"the {readers} readers (cut)", "readout")):
        chosen = [o for o in scenario.outcomes if o.kind == kind]
        if chosen:
            groups.append((label, chosen))
    return groups


def scenario_groups(phase: dict) -> dict[str, list[Outcome]]:
    """The replies of each scenario a server ran, by a household's name for it, pooled over the rounds it ran
    (chorus_tools/bench/summary.pooled)."""
    rounds: dict[str, list[Scenario]] = {}
    for scenario in phase.get("scenarios", []):
        for label, outcomes in _labelled(scenario):
            rounds.setdefault(label, []).append(Scenario(label, outcomes))
    return {label: pooled(scenarios).outcomes for label, scenarios in rounds.items()}


def household(phases: dict) -> dict[str, dict[str, dict]]:
    """{policy: {scenario: its summary}} for the playback and FCFS servers that ran."""
    out = {}
    for name, policy in POLICIES.items():
        if phases.get(name, {}).get("scenarios"):
            out[policy] = {label: {k: v for k, v in summarise(Scenario(label, outcomes)).items() if k != "rtfs"}
                           for label, outcomes in scenario_groups(phases[name]).items()}
    return out


def held(by_scenario: dict[str, dict], labels: list[str]) -> int | None:
    """Replies heard with no gap over `labels`; None if none of them ran."""
    rows = [by_scenario[label] for label in labels if label in by_scenario]
    return sum(r["held"] for r in rows) if rows else None


def gap_free_rooms(by_scenario: dict[str, dict]) -> int:
    """The largest N of the mixed burst at which every room heard its reply with no gap (0: not even one room)."""
    best = 0
    for label, r in by_scenario.items():
        rooms = 1 if label == "one room" else int(label.split()[2]) if label.startswith("burst of ") else 0
        if rooms and r["errors"] == 0 and r["held"] == r["requests"]:
            best = max(best, rooms)
    return best


def household_table(heard: dict[str, dict[str, dict]]) -> list[str]:
    if not heard:
        return []
    policies = list(heard)
    labels = list(dict.fromkeys(label for p in policies for label in heard[p]))

    def cells(label: str, show) -> str:
        return " · ".join(show(heard[p][label]) if label in heard[p] else "-" for p in policies)

    lines = ["## What a household hears (Home Assistant 2026.11)", "",
             "Every reply through the listener model of chorus_tools/bench/listener.py: Home Assistant 2026.11 plays "
             "from the first 0.08 s of audio, 0.1 s after it arrives (conversion and the hop to the satellite), then "
             "at 1x; every moment the server falls behind is a gap (an underrun), and a satellite that has heard "
             "nothing 2 s after the request gives up. *First sound* counts from the first text sent; *held*: replies "
             "heard with no gap and not given up on, of the replies without an error. Cut read-outs count over the "
             f"part they ran. Each cell: {' · '.join(policies)}, same workload, alternated A-B-A-B in one sitting "
             "(chorus_tools/bench/alternate.py) and pooled over the rounds.", "",
             "| scenario | first sound p50 / p95 (s) | gave up (> 2 s) | underrun s per reply (mean / max) "
             "| held / replies | audio s per wall s |", "|---|---|---|---|---|---|"]
    columns = (lambda r: f"{fmt(r['first_sound_p50_s'])} / {fmt(r['first_sound_p95_s'])}",
               lambda r: str(r["gave_up"]),
               lambda r: f"{fmt(r['underrun_s_per_request'])} / {fmt(r['underrun_s_max'])}",
               lambda r: f"{r['held']} / {r['requests'] - r['errors']}",
               lambda r: fmt(r["audio_s_per_wall_s"]))
    for label in labels:
        lines.append(f"| {label} | " + " | ".join(cells(label, show) for show in columns) + " |")
    return lines + [""]


def bursts_by_kind(phases: dict) -> dict[str, dict[str, dict[str, dict]]]:
    """{policy: {burst: {kind: its summary}}} for every burst of two rooms or more: a policy's total gaps hide whom
    it gave them to (0.6b INT4 on 2 Zen 3 cores, a burst of 2: playback 1.38 s per reply against FCFS's 1.00, but the
    announcement 0.24 s against 0.94 and the assistant's reply 2.53 against 1.07)."""
    out: dict[str, dict[str, dict[str, dict]]] = {}
    for name, policy in POLICIES.items():
        for label, outcomes in scenario_groups(phases.get(name, {})).items():
            if not label.startswith("burst of "):
                continue
            for kind in dict.fromkeys(o.kind for o in outcomes):
                summary = summarise(Scenario(label, outcomes), keep=lambda o, kind=kind: o.kind == kind)
                out.setdefault(policy, {}).setdefault(label, {})[kind] = {
                    k: v for k, v in summary.items() if k != "rtfs"}
    return out


def bursts_by_kind_table(by_kind: dict[str, dict[str, dict[str, dict]]]) -> list[str]:
    if not by_kind:
        return []
    policies = list(by_kind)
    rows = list(dict.fromkeys((label, kind) for p in policies for label in by_kind[p] for kind in by_kind[p][label]))

    def cells(label: str, kind: str, show) -> str:
        return " · ".join(show(by_kind[p][label][kind]) if kind in by_kind[p].get(label, {}) else "-"
                          for p in policies)

    lines = ["### Bursts by kind of reply", "",
             "The same bursts, each kind of reply apart: who a policy gave its gaps to (a burst's own mix: assistant "
             f"replies, announcements and from 8 rooms on read-outs). Each cell: {' · '.join(policies)}.", "",
             "| burst | kind | first sound p50 (s) | underrun s per reply (mean / max) | held / replies |",
             "|---|---|---|---|---|"]
    columns = (lambda r: fmt(r["first_sound_p50_s"]),
               lambda r: f"{fmt(r['underrun_s_per_request'])} / {fmt(r['underrun_s_max'])}",
               lambda r: f"{r['held']} / {r['requests'] - r['errors']}")
    for label, kind in rows:
        lines.append(f"| {label} | {kind} | " + " | ".join(cells(label, kind, show) for show in columns) + " |")
    return lines + [""]
