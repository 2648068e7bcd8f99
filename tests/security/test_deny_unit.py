"""DenyRules.may_deny_below: which directories a whole-path rule may reach below."""

from __future__ import annotations

from app.security.deny import DenyRules


def test_without_whole_path_rules_nothing_is_denied_below_a_directory() -> None:
    rules = DenyRules(extra=[".cache"])  # a name rule, not a path rule
    assert not rules.may_deny_below(())
    assert not rules.may_deny_below(("src",))


def test_a_path_rule_may_deny_below_its_own_folders_only() -> None:
    rules = DenyRules(extra=["Config/prod.yaml"])
    assert rules.may_deny_below(())  # the root holds every path
    assert rules.may_deny_below(("config",))
    assert rules.may_deny_below(("CONFIG",))  # folded, as every deny match
    assert not rules.may_deny_below(("src",))
    assert not rules.may_deny_below(("config", "other"))


def test_a_rule_starting_with_a_wildcard_may_deny_below_anything() -> None:
    rules = DenyRules(extra=["*/secret.txt"])
    assert rules.may_deny_below(("src",)) and rules.may_deny_below(("a", "b"))
    prefixed = DenyRules(extra=["config/*.yaml"])
    assert prefixed.may_deny_below(("config",)) and not prefixed.may_deny_below(("src",))
