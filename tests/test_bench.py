"""The short form of `make bench` (bench/floor.py): every phase through the server and the raw
floor on one `mcp-tasks dev`, in a few seconds; it runs, writes its JSON, markdown table and
docs page, and loses nothing. No figure is asserted: timings belong to the benchmark."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bench import floor, floor_report
from bench.floor_clients import TTL_MARGIN_S, Ledger
from bench.load_clients import LoadClient, Stats

pytestmark = pytest.mark.slow

TINY = [
    "--creates",
    "8",
    "--reads",
    "16",
    "--rounds",
    "2",
    "--lifecycle-clients",
    "2",
    "--lifecycle-tasks",
    "1",
    "--cancels",
    "2",
    "--listen-rounds",
    "2",
    "--idle-streams",
    "3",
    "--idle-seconds",
    "1",
    "--question-rounds",
    "2",
    "--parked",
    "12",
    "--parked-reads",
    "8",
    "--polling-clients",
    "2",
    "--polling-tasks",
    "2",
    "--polling-seconds",
    "6",
    "--polling-changes",
    "2",
]


def test_a_tiny_run_writes_its_results_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "benchmarks.md"
    argv = ["bench.floor", *TINY, "--out", str(tmp_path / "out"), "--docs", str(docs)]
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.delenv("BENCH_VIA_MAKE", raising=False)
    floor.main()  # exits 1 when a task is lost or wrong
    (written,) = (tmp_path / "out").glob("bench-floor-*.json")
    results = json.loads(written.read_text())
    assert results["lost"]["lost_or_wrong"] == 0, results["lost"]["detail"]
    # Every task the clients created was checked: 8 creates at 1 client, 32 at 16 (one per
    # client and round at least), 2 lifecycle, 2 cancelled, 2 answered through a listen
    # stream, 3 followed by idle streams, 12 parked, and one warm-up create of each principal
    # but the parked phase's (1 + 16 + 2 + 1 + 2).
    assert results["lost"]["checked"] == 61 + 22
    for phase in ("create_c1", "create_c16", "get_c1", "get_c16"):
        assert results[phase]["server"]["n"] > 0 and results[phase]["raw"]["n"] > 0, phase
    assert {"server", "raw_poll", "raw_push"} <= set(results["lifecycle"])
    assert {"server", "raw_poll", "raw_push"} <= set(results["cancel"])
    listen = results["listen"]
    assert listen["notify"]["server"]["n"] == 2 and listen["notify"]["raw"]["n"] == 2
    assert listen["idle"]["streams"] == 3
    assert set(listen["idle"]["streams_open"]) == set(listen["idle"]["none"])
    assert results["question"]["server"]["n"] == 2 and results["question"]["raw"]["n"] == 2
    assert results["parked"]["never_parked"] == 0
    # The raw floor parks as many (at most --raw-parked) on the same Temporal.
    assert results["parked"]["raw"]["count"] == 12
    assert results["parked"]["raw"]["never_parked"] == 0
    assert set(results["parked_rss_mib"]) == set(results["idle_rss_mib"])
    polling = results["polling"]
    for setting in ("following", "not following"):
        assert polling[setting]["tasks/get"] >= 4, polling
        assert polling[setting]["describes per tasks/get"] >= 0, polling
    assert len(polling["following"]["a change made elsewhere seen by tasks/get p50/p99 ms"]) == 2
    assert all(code == 0 for code in results["exit_codes"].values()), results["exit_codes"]
    table = written.with_suffix(".md").read_text()
    assert "| lost or wrong tasks (of 83 created) | 0 |" in table
    page = docs.read_text()
    assert table.strip() in page and "- Command: `python -m bench.floor --creates 8" in page
    # A run of another size adds its own section; one of the same size replaces it.
    larger = {**results, "sizes": {**results["sizes"], "parked": 100_000}}
    both = floor_report.document(larger, "make bench ARGS=--parked 100000", page)
    assert "## 12 parked approvals" in both and "## 100,000 parked approvals" in both
    again = floor_report.document(results, "the same size again", both)
    assert again.count("## 12 parked approvals") == 1 and "`the same size again`" in again
    assert "--creates 8" not in again and "## 100,000 parked approvals" in again
    # What the page keeps below its runs (the load runs) stays.
    kept = f"{again}\n{floor_report.KEPT}\n## Load\n\nby hand\n"
    third = floor_report.document(results, "a third run", kept)
    assert third.endswith(f"{floor_report.KEPT}\n## Load\n\nby hand\n")
    assert third.count("## 12 parked approvals") == 1 and "`a third run`" in third
    assert "written to" in capsys.readouterr().out


def test_the_ledger_expects_a_task_gone_once_its_ttl_has_passed() -> None:
    now = [1000.0]
    ledger = Ledger(clock=lambda: now[0])
    owner = LoadClient("http://127.0.0.1:1/mcp", None, Stats(), http=None)
    short = ledger.add({"taskId": "mcp-task-short", "ttlMs": 60_000}, owner, "completed:x")
    unlimited = ledger.add({"taskId": "mcp-task-forever", "ttlMs": None}, owner, "input_required")
    assert (short, unlimited) == ("mcp-task-short", "mcp-task-forever")
    assert ledger.expected[short] == (owner, "completed:x")
    assert ledger.expired(short) is False
    now[0] += 60 - TTL_MARGIN_S - 1  # still well within its TTL
    assert ledger.expired(short) is False
    now[0] += 2  # at the edge, where the server's clock may say either
    assert ledger.expired(short) is None
    now[0] += 2 * TTL_MARGIN_S  # surely past it
    assert ledger.expired(short) is True
    assert ledger.expired(unlimited) is False
