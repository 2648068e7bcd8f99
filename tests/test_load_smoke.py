"""A CI-sized run of benchmarks/load.py: concurrent sessions, mixed calls, reloads.

The real console script serves HTTP as a subprocess; 4 MCP sessions do
list/read/search/write/edit/delete for a few seconds while another reloads
the config every half second. A regression that fails a call or answers a 5xx
under concurrency fails CI here.
"""

from __future__ import annotations

from benchmarks.load import measure

TOOLS = {
    "list_directory", "read_text_file", "search_files", "search_text",
    "write_file", "edit_file", "delete", "reload_config",
}


def test_concurrent_mixed_calls_with_reloads_fail_nothing() -> None:
    # Reloads every half second: opening the sessions can take seconds on a loaded machine,
    # and at least two reloads must still land inside the window.
    fig = measure(sessions=4, seconds=6.0, reload_every=0.5)
    assert fig["failed"] == 0, fig["failure_samples"]
    assert fig["http_5xx"] == 0, fig["http_statuses"]
    assert fig["non_2xx"] == 0, fig["http_statuses"]
    assert fig["reconnects"] == 0
    assert fig["server_alive"]
    # The load really ran: every kind of call happened, reloads included, on every session.
    assert set(fig["calls_by_tool"]) == TOOLS
    assert fig["reloads"] >= 2
    assert fig["calls"] >= 4 * 9
    # Memory stays bounded: no growth worth the name after the warm-up round (the
    # benchmark's target is < 20%; measured here ~0.2% at ~80 MiB), and a sane ceiling.
    assert fig["rss_growth_pct"] < 25, fig["rss_kib"]
    assert 0 < fig["peak_rss_kib"] < 192 * 1024, fig["peak_rss_kib"]
