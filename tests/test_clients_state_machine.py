"""`[[clients]]`: calls by several clients with reloads in between, drawn by hypothesis.

Three roots, each with a planted file whose name and content are its own; three clients
whose grants are drawn again at each reload. Whatever the sequence, a client is never
answered with, never writes into, and never hears the name of a root outside its grant
(a root it named itself is echoed in the `unknown root` refusal, and nothing else is).
Calls go through the tools in process (`Client(server)`, the server serving one client as
stdio's `--client` does), so the grant comes from the same view code HTTP uses.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule
from mcp import Client

from app.registry import Registry
from app.server import LoomServer
from tests.kit import roots_toml

ROOTS = {"r-docs": "reference", "r-src": "sourcecode", "r-work": "workspace"}
CEILING = {"reference": ["read"], "sourcecode": ["read", "write"],
           "workspace": ["read", "write", "delete"]}
CLIENTS = ("c-one", "c-two", "c-three")
Grant = dict[str, list[str]]


def secret(root: str) -> str:
    return f"SECRET-{root.upper()}"


def plant(root: str) -> str:
    return f"plant-{root}.txt"


@st.composite
def grant_st(draw: st.DrawFn) -> Grant:
    roots = draw(st.lists(st.sampled_from(sorted(ROOTS)), min_size=1, max_size=3, unique=True))
    out: Grant = {}
    for r in sorted(roots, key=list(ROOTS).index):
        ceiling = CEILING[ROOTS[r]]
        perms = draw(st.lists(st.sampled_from(ceiling), min_size=1, unique=True))
        out[r] = [p for p in ceiling if p in perms]
    return out


grants_st = st.fixed_dictionaries({c: grant_st() for c in CLIENTS})


def text_of(res: Any) -> str:
    return "".join(getattr(c, "text", "") for c in res.content) + json.dumps(
        res.structured_content or {})


class ClientsNeverSeeOutside(RuleBasedStateMachine):
    @initialize(grants=grants_st)
    def start(self, grants: dict[str, Grant]) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="loom-clients-sm-"))
        self.specs = []
        for name, role in ROOTS.items():
            (self.tmp / name).mkdir()
            (self.tmp / name / plant(name)).write_text(f"{secret(name)} needle\n")
            self.specs.append((name, self.tmp / name, role))
        self.config = self.tmp / "roots.toml"
        self.n = 0
        self.write_config(grants)
        self.registry = Registry(str(self.config), audit=False)
        self.server = LoomServer(self.registry)

    def teardown(self) -> None:
        if hasattr(self, "tmp"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    def write_config(self, grants: dict[str, Grant]) -> None:
        self.grants = grants
        lines = []
        for c, g in grants.items():
            lines += ["[[clients]]", f'name = "{c}"',
                      "roots = { " + ", ".join(f'"{r}" = {json.dumps(p)}' for r, p in g.items())
                      + " }"]
        self.config.write_text(roots_toml(*self.specs, audit_log=None,
                                          extra="search_fetch_tools = true")
                               + "\n".join(lines) + "\n")

    def calls(self, client: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
        self.registry.serves_client = client

        async def go() -> list[Any]:
            async with Client(self.server) as c:
                return [await c.call_tool(name, args) for name, args in calls]

        return anyio.run(go)

    def check_nothing_foreign(self, client: str, said: str, named: str | None = None) -> None:
        for root in ROOTS:
            if root in self.grants[client]:
                continue
            assert secret(root) not in said, (client, root, said)
            assert plant(root) not in said, (client, root, said)
            if root != named:
                assert root not in said, (client, root, said)

    @rule(grants=grants_st)
    def reload(self, grants: dict[str, Grant]) -> None:
        self.write_config(grants)
        anyio.run(self.server.reload)

    @rule(client=st.sampled_from(CLIENTS), root=st.sampled_from(sorted(ROOTS)))
    def read_list_and_search(self, client: str, root: str) -> None:
        grant = self.grants[client]
        listed, read, found, text = self.calls(
            client, ("list_roots", {}),
            ("read_text_file", {"root": root, "path": plant(root)}),
            ("search", {"query": "needle"}),
            ("search_text", {"root": root, "query": "needle"}),
        )
        assert [r["name"] for r in listed.structured_content["roots"]] == list(grant)
        for res in (listed, found):
            self.check_nothing_foreign(client, text_of(res))
        hits = {r["id"].split("/", 1)[0] for r in found.structured_content["results"]}
        assert hits <= set(grant)
        reads = any("read" in perms for perms in grant.values())
        for tool, res in (("read_text_file", read), ("search_text", text)):
            said = text_of(res)
            self.check_nothing_foreign(client, said, named=root)
            first = res.content[0].text
            if not reads:  # no root of its grant reads: no read tool
                assert first.startswith(f"unknown tool '{tool}'"), first
            elif root not in grant:
                assert first == f"unknown root '{root}'; known roots: {', '.join(grant)}"
            elif "read" not in grant[root]:
                assert res.is_error and "not read" in first, first
            else:
                assert secret(root) in said

    @rule(client=st.sampled_from(CLIENTS), root=st.sampled_from(sorted(ROOTS)))
    def write_a_file(self, client: str, root: str) -> None:
        self.n += 1
        name = f"w{self.n}.txt"
        (res,) = self.calls(client, ("write_file", {"root": root, "path": name,
                                                     "content": "written"}))
        said = text_of(res)
        self.check_nothing_foreign(client, said, named=root)
        may = "write" in self.grants[client].get(root, [])
        assert (self.tmp / root / name).exists() == may, (client, root, said)
        assert res.is_error != may, said


ClientsNeverSeeOutside.TestCase.settings = settings(
    max_examples=15, stateful_step_count=10, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_no_sequence_of_calls_and_reloads_crosses_a_grant = ClientsNeverSeeOutside.TestCase
