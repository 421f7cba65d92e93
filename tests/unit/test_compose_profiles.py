"""Compose profiles (#41): a service under an inactive profile is not started by Compose, so the
stack neither waits for it nor gates it; ``COMPOSE_PROFILES`` (environment, ``env=`` or ``.env``)
turns profiles on as Compose does."""

from __future__ import annotations

from pathlib import Path

from pytest_netperf.runtime.compose import profiles
from pytest_netperf.runtime.compose import project as P
from pytest_netperf.starter.survey import classify

CONFIG = {
    "services": {
        "app": {"image": "team/app:1", "expose": ["8080"]},
        "edge": {"image": "nginx:1.27", "ports": ["80:80"], "depends_on": ["app"]},
        "debug-proxy": {"image": "nginx:1.27", "ports": ["8081:80"], "profiles": ["debug"]},
        "tools": {"image": "busybox", "profiles": ["tools", "ops"]},
    }
}


def test_up_without_services_starts_only_services_of_active_profiles() -> None:
    assert P.started_services(CONFIG, None) == ["app", "edge"]
    assert P.started_services(CONFIG, None, {"debug"}) == ["app", "debug-proxy", "edge"]
    assert P.started_services(CONFIG, None, {"ops"}) == ["app", "edge", "tools"]
    assert P.started_services(CONFIG, None, {"*"}) == ["app", "debug-proxy", "edge", "tools"]
    # a service named in services= starts whatever its profile, as Compose starts it
    assert P.started_services(CONFIG, ["debug-proxy"]) == ["debug-proxy"]


def test_active_profiles_come_from_the_environment_else_the_dotenv_file(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("# settings\nexport COMPOSE_PROFILES='debug, tools'\nOTHER=1\n")
    assert profiles.active_profiles({}, dotenv) == {"debug", "tools"}
    assert profiles.active_profiles({"COMPOSE_PROFILES": "ops"}, dotenv) == {"ops"}
    assert profiles.active_profiles({"COMPOSE_PROFILES": ""}, dotenv) == set()
    assert profiles.active_profiles({}, tmp_path / "missing.env") == set()


def test_the_note_for_an_inactive_service_names_its_profile_and_the_way_to_start_it() -> None:
    note = profiles.inactive_note("debug-proxy", CONFIG["services"]["debug-proxy"])
    assert "service 'debug-proxy' is in profile(s) debug" in note
    assert "COMPOSE_PROFILES=debug" in note


def test_init_does_not_gate_a_proxy_under_an_inactive_profile_and_says_why() -> None:
    stack = classify(CONFIG, Path("compose.yml"))
    assert [s.name for s in stack.proxies] == ["edge"]
    (skipped,) = stack.inactive
    assert (skipped.name, skipped.profiles) == ("debug-proxy", ("debug",))


def test_init_gates_a_proxy_whose_profile_is_active_and_keeps_the_profile_on() -> None:
    stack = classify(CONFIG, Path("compose.yml"), active_profiles={"debug"})
    assert [s.name for s in stack.proxies] == ["debug-proxy", "edge"]
    assert stack.profiles_needed == ("debug",)


def test_the_gates_turn_on_the_profile_of_a_gated_proxy() -> None:
    from pytest_netperf.starter import render

    stack = classify(CONFIG, Path("compose.yml"), active_profiles={"debug"})
    text = render.test_module(render.StarterPlan(survey=stack, compose_path="compose.yml"))
    assert 'return netperf_compose(COMPOSE_FILE, env={"COMPOSE_PROFILES": "debug"})' in text
    plain = render.test_module(render.StarterPlan(survey=classify(CONFIG, Path("c.yml")), compose_path="c.yml"))
    assert "return netperf_compose(COMPOSE_FILE)\n" in plain and "debug_proxy" not in plain
