"""A root's policy on its own: the role ceilings (docs/security.md), the permission order, the
refusal text, and the audit record of every decision (DENY with its rule, or ALLOW)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typing_extensions import assert_type

from app.errors import DeniedName, InvalidPath, LoomError, PermissionRefused, ServerFile
from app.security.deny import DenyRules
from app.security.policy import PERMISSION_ORDER, ROLE_CEILINGS, FromPolicy, Policy, Recovery
from app.security.protected import Protected
from app.security.resolve import Root

Line = tuple[str, str, str, str, "str | None"]


def policy(permissions: list[str], *, role: str = "workspace", rules: DenyRules | None = None,
           lines: list[Line] | None = None) -> Policy:
    def audit(*line: object) -> None:
        assert lines is not None
        lines.append(line)  # type: ignore[arg-type]

    return Policy(name="docs", role=role, permissions=permissions,
                      rules=rules or DenyRules(), max_read_bytes=4096,
                      audit=None if lines is None else audit)


def test_the_role_ceilings_are_the_documented_ones() -> None:
    # docs/security.md: reference reads; sourcecode reads and writes; workspace also deletes.
    assert ROLE_CEILINGS == {
        "reference": ("read",),
        "sourcecode": ("read", "write"),
        "workspace": ("read", "write", "delete"),
    }
    assert PERMISSION_ORDER == ("read", "write", "delete")


@given(st.lists(st.sampled_from(["read", "write", "delete", "admin", "Read", ""]), max_size=8))
def test_permissions_are_kept_in_order_once_each_and_only_known_ones(granted: list[str]) -> None:
    p = policy(granted)
    assert p.permissions == tuple(x for x in ("read", "write", "delete") if x in granted)
    for perm in ("read", "write", "delete", "admin"):
        if perm in p.permissions:
            p.permit(perm)
        else:
            with pytest.raises(PermissionRefused):
                p.permit(perm)


def test_a_refusal_names_the_root_its_role_and_what_it_grants() -> None:
    with pytest.raises(PermissionRefused) as exc:
        policy(["write", "read"], role="sourcecode").permit("delete")
    assert exc.value.message == "root 'docs' (role sourcecode) grants [read, write], not delete"
    with pytest.raises(PermissionRefused) as exc:
        policy([], role="reference").permit("read")
    assert exc.value.message == "root 'docs' (role reference) grants [], not read"


def test_the_audit_record_of_each_outcome() -> None:
    lines: list[Line] = []
    p = policy(["read"], lines=lines)
    with p.audited("a.txt", "read_text_file"):
        pass
    with pytest.raises(DeniedName), p.audited(".env", "read_text_file"):
        raise DeniedName(".env")
    with pytest.raises(InvalidPath), p.audited("x", "list"):
        raise InvalidPath("bad")
    # Not a refusal (a bug, or an OS error not mapped yet): no line claims a decision.
    with pytest.raises(RuntimeError), p.audited("y", "list"):
        raise RuntimeError("boom")
    p.record("DENY", "z", "op", PermissionRefused("no"))
    assert lines == [
        ("ALLOW", "docs", "a.txt", "read_text_file", None),
        ("DENY", "docs", ".env", "read_text_file", "deny: matches deny pattern '.env'"),
        ("DENY", "docs", "x", "list", "invalid path: invalid path: bad"),
        ("DENY", "docs", "z", "op", "permission: no"),
    ]


def test_no_audit_function_records_nothing() -> None:
    p = policy(["read"])
    with p.audited("a", "op"):
        pass
    with pytest.raises(LoomError), p.audited("a", "op"):
        raise LoomError("x")
    p.record("ALLOW", "a", "op")


def test_deny_rules_are_asked_with_the_whole_path() -> None:
    p = policy(["read"], rules=DenyRules(extra=["secret*"]))
    p.check_deny(["docs", "notes.txt"])
    with pytest.raises(DeniedName) as exc:
        p.check_deny(["docs", "secrets", "a.txt"])
    assert exc.value.pattern == "secret*"
    with pytest.raises(DeniedName):
        p.check_deny(("sub", ".env"))


def test_the_servers_own_files_are_refused_by_identity(tmp_path: Path) -> None:
    mine, other = tmp_path / "config.toml", tmp_path / "a.txt"
    mine.write_text("x")
    other.write_text("y")
    protected = Protected()
    protected.hold_paths([str(mine)])
    p = policy(["read"], rules=DenyRules(identities=protected))
    with pytest.raises(ServerFile):
        p.check_identity(os.stat(mine))
    p.check_identity(os.stat(other))
    p.check_identity(None)
    policy(["read"]).check_identity(os.stat(mine))  # no identities to protect


def test_describe_tells_what_a_client_may_know() -> None:
    assert policy(["delete", "read"]).describe() == {
        "name": "docs", "role": "workspace", "permissions": ["read", "delete"],
        "max_read_bytes": 4096,
    }


@pytest.mark.parametrize(("extra", "drop"), [({"audti": None}, None), ({}, "name"),
                                            ({}, "rules")])
def test_a_misspelt_or_missing_argument_is_refused_at_run_time(
    extra: dict[str, object], drop: str | None
) -> None:
    args: dict[str, object] = {"name": "docs", "role": "workspace", "permissions": ["read"],
                               "rules": DenyRules(), "max_read_bytes": 1, **extra}
    if drop:
        del args[drop]
    with pytest.raises(TypeError) as exc:
        Policy(**args)  # type: ignore[arg-type]
    assert str(exc.value) == (
        f"Policy: unexpected or missing keyword arguments {[drop or 'audti']}")


POLICY_ATTRIBUTES = ["name", "role", "permissions", "rules", "max_read_bytes", "recovery"]


def test_a_root_reads_what_its_policy_holds_typed_as_the_policys(tmp_path: Path) -> None:
    root = Root(real=str(tmp_path), name="docs", role="reference", permissions=["read"],
                rules=DenyRules(), max_read_bytes=4096)
    # assert_type is checked by mypy: each attribute keeps the policy's type on the root.
    assert assert_type(root.name, str) == "docs"
    assert assert_type(root.role, str) == "reference"
    assert assert_type(root.permissions, tuple[str, ...]) == ("read",)
    assert assert_type(root.rules, DenyRules) is root.policy.rules
    assert assert_type(root.max_read_bytes, int) == 4096
    assert assert_type(root.recovery, Recovery) == Recovery(keep_versions=False)
    root.policy.max_read_bytes = 10
    assert root.max_read_bytes == 10  # read through, never copied
    assert isinstance(assert_type(Root.name, FromPolicy[str]), FromPolicy)


@pytest.mark.parametrize("attribute", POLICY_ATTRIBUTES)
def test_what_a_root_reads_from_its_policy_cannot_be_set_on_the_root(
        tmp_path: Path, attribute: str) -> None:
    root = Root(real=str(tmp_path), name="docs", role="workspace", permissions=["read"],
                rules=DenyRules(), max_read_bytes=4096)
    before = getattr(root, attribute)
    with pytest.raises(AttributeError) as exc:
        setattr(root, attribute, None)
    assert str(exc.value) == f"'{attribute}' is the policy's: set it on the policy"
    assert getattr(root, attribute) is before and attribute not in vars(root)
