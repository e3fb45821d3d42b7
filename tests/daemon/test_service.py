"""`carryd service`: the rendered systemd unit passes the real `systemd-analyze verify`, the plist
parses with plistlib and names the real paths, and install/uninstall drive systemctl/launchctl
with exactly the commands they should (captured by an injected runner, never run here)."""

from __future__ import annotations

import argparse
import os
import plistlib
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from carryd.daemon.config import Settings, load_settings
from carryd.daemon.errors import UsageError
from carryd.daemon.running.service import (
    CommandResult,
    carryd_command,
    cmd_service,
    load_template,
    plan_service,
    render_systemd_unit,
    systemd_escape_path,
    systemd_quote,
)
from hypothesis import given, settings
from hypothesis import strategies as st

VENV_CARRYD = Path(sys.executable).absolute().parent / "carryd"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed on this machine"
)


class Recorder:
    """A stand-in for systemctl/launchctl (external programs): records commands, answers."""

    def __init__(self, answers: dict[str, CommandResult] | None = None) -> None:
        self.commands: list[list[str]] = []
        self.answers = answers or {}

    def __call__(self, command: Sequence[str]) -> CommandResult:
        self.commands.append(list(command))
        joined = " ".join(command)
        for prefix, answer in self.answers.items():
            if joined.startswith(prefix):
                return answer
        return CommandResult(0, "", "")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    memory = tmp_path / "memory root"
    memory.mkdir()
    return memory


def settings_for(root: Path) -> Settings:
    return load_settings(None, root=root)


def args(action: str, *, instance: bool = False) -> argparse.Namespace:
    return argparse.Namespace(command="service", action=action, instance=instance)


def verify(unit_file: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # `--user` needs a runtime dir; a container without a user manager has none, and
    # verify then fails before reading the unit ("Failed to lookup RuntimeDirectory path").
    # A private XDG_RUNTIME_DIR is all it needs: verify never talks to a running manager.
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), SYSTEMD_LOG_COLOR="0")
    assert SYSTEMD_ANALYZE is not None
    return subprocess.run(
        [SYSTEMD_ANALYZE, "verify", "--user", str(unit_file)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


# --- rendering --------------------------------------------------------------------------------


def test_the_command_is_the_venvs_console_script() -> None:
    assert VENV_CARRYD.is_file(), "the test venv has its carryd console script"
    assert carryd_command() == (str(VENV_CARRYD),)


def test_without_a_console_script_the_command_is_python_dash_m(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    interpreter = tmp_path / "bin" / "python3"
    assert carryd_command(str(interpreter)) == (str(interpreter), "-m", "carryd.daemon.cli")
    # ... and that fallback really starts carryd.
    done = subprocess.run(
        [sys.executable, "-m", "carryd.daemon.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith("carryd ")


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/home/me/memory",
        "/home/me/my memory",
        "/tmp/a.b/-x_y/.hidden/ü",
        "/srv//notes/",
        "/.dot/x:y",
        "/100%/$HOME",
    ],
)
def test_instance_names_escape_like_systemd_escape(path: str) -> None:
    expected = {
        "/": "-",
        "/home/me/memory": "home-me-memory",
        "/home/me/my memory": "home-me-my\\x20memory",
        "/tmp/a.b/-x_y/.hidden/ü": "tmp-a.b-\\x2dx_y-.hidden-\\xc3\\xbc",
        "/srv//notes/": "srv-notes",
        "/.dot/x:y": "\\x2edot-x:y",
        "/100%/$HOME": "100\\x25-\\x24HOME",
    }[path]
    assert systemd_escape_path(path) == expected
    tool = shutil.which("systemd-escape")
    if tool:
        real = subprocess.run(
            [tool, "--path", path], capture_output=True, text=True, check=True
        ).stdout.strip()
        assert real == expected


@pytest.mark.skipif(shutil.which("systemd-escape") is None, reason="no systemd-escape here")
@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.text(
            st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
            min_size=1,
            max_size=12,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_instance_names_match_systemd_escape_for_any_path(parts: list[str]) -> None:
    path = "/" + "/".join(parts)
    if any(part in (".", "..") for part in parts):
        return  # systemd-escape refuses those; roots are resolved before escaping
    real = subprocess.run(
        ["systemd-escape", "--path", path], capture_output=True, text=True, check=False
    )
    if real.returncode == 0:
        assert systemd_escape_path(path) == real.stdout.strip()


@pytest.mark.parametrize(
    ("argument", "word"),
    [
        ("/usr/bin/carryd", "/usr/bin/carryd"),
        ("/home/me/my memory", '"/home/me/my memory"'),
        ("/x/100%", "/x/100%%"),
        ("/x/$HOME", "/x/$$HOME"),
        ('/x/"q"', '"/x/\\"q\\""'),
        ("/x\\y", '"/x\\\\y"'),
        (";", '";"'),
        ("", '""'),
    ],
)
def test_exec_start_words_are_quoted_for_systemd(argument: str, word: str) -> None:
    assert systemd_quote(argument) == word


def test_the_program_path_keeps_its_dollar_signs() -> None:
    # systemd expands $VAR in arguments but not in the program path (verify below proves it).
    assert systemd_quote("/opt/$X/carryd", program=True) == "/opt/$X/carryd"
    assert systemd_quote("/opt/1%/carryd", program=True) == "/opt/1%%/carryd"


def test_a_newline_in_a_path_is_refused() -> None:
    with pytest.raises(UsageError, match="control characters"):
        systemd_quote("/a\nb")


def test_the_unit_names_the_real_executable_and_root(root: Path) -> None:
    plan = plan_service(settings_for(root), platform="systemd")
    assert plan.name == "carryd.service"
    assert not re.search(r"@[A-Z_]+@", plan.text)
    exec_start = [line for line in plan.text.splitlines() if line.startswith("ExecStart=")]
    assert exec_start == [f'ExecStart={VENV_CARRYD} run --root "{root.resolve()}"']
    for line in (
        "Type=notify",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "Restart=on-failure",
        "NoNewPrivileges=yes",
        "WantedBy=default.target",
    ):
        assert line in plan.text.splitlines()
    assert "ProtectHome" not in plan.text.replace("ProtectHome= would", "")
    assert 'Environment="CARRYD_MODEL_PATH' not in plan.text


def test_config_file_and_model_path_reach_the_unit(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "carryd.toml"
    config.write_text(f'root = "{root}"\n', encoding="utf-8")
    monkeypatch.setenv("CARRYD_MODEL_PATH", str(tmp_path / "models 100%"))
    plan = plan_service(load_settings(config), platform="systemd")
    assert f"--config {config}" in plan.text
    assert f'Environment="CARRYD_MODEL_PATH={tmp_path}/models 100%%"' in plan.text


@needs_systemd_analyze
def test_the_rendered_unit_passes_systemd_analyze_verify(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CARRYD_MODEL_PATH", str(tmp_path / "model"))
    plan = plan_service(settings_for(root), platform="systemd")
    unit = tmp_path / "units" / "carryd.service"
    unit.parent.mkdir()
    unit.write_text(plan.text, encoding="utf-8")
    done = verify(unit, tmp_path)
    assert (done.returncode, done.stderr) == (0, "")


@needs_systemd_analyze
def test_verify_rejects_a_broken_unit(root: Path, tmp_path: Path) -> None:
    # The check is only worth something if verify complains about what we could get wrong.
    plan = plan_service(settings_for(root), platform="systemd")
    unit = tmp_path / "units" / "carryd.service"
    unit.parent.mkdir()
    unit.write_text(plan.text.replace("Type=notify", "Type=notifyx"), encoding="utf-8")
    assert "notifyx" in verify(unit, tmp_path).stderr
    unit.write_text(plan.text.replace(str(VENV_CARRYD), "/nonexistent/carryd"), encoding="utf-8")
    assert verify(unit, tmp_path).returncode != 0


@needs_systemd_analyze
def test_an_executable_path_with_spaces_and_percent_is_quoted_right(tmp_path: Path) -> None:
    # verify checks that ExecStart's program exists: it only finds this one if the quoting and
    # the %/$ escapes are exactly right.
    odd_bin = tmp_path / "my bin 100% $X"
    odd_bin.mkdir()
    program = odd_bin / "carryd"
    program.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    text = render_systemd_unit(
        load_template("carryd.service"), command=[str(program)], root="/srv/a b"
    )
    unit = tmp_path / "carryd.service"
    unit.write_text(text, encoding="utf-8")
    done = verify(unit, tmp_path)
    assert (done.returncode, done.stderr) == (0, "")


@needs_systemd_analyze
def test_the_template_unit_passes_verify_as_an_instance(root: Path, tmp_path: Path) -> None:
    plan = plan_service(settings_for(root), platform="systemd", instance=True)
    assert plan.path.name == "carryd@.service"
    assert plan.name == f"carryd@{systemd_escape_path(root.resolve())}.service"
    assert f"ExecStart={VENV_CARRYD} run --root %f" in plan.text
    units = tmp_path / "units"
    units.mkdir()
    (units / "carryd@.service").write_text(plan.text, encoding="utf-8")
    instance = units / plan.name
    instance.write_text(plan.text, encoding="utf-8")
    for unit in (units / "carryd@.service", instance):
        done = verify(unit, tmp_path)
        assert (done.returncode, done.stderr) == (0, "")


def test_the_plist_parses_and_names_the_real_paths(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path.home()
    plan = plan_service(settings_for(root), platform="launchd")
    agent = plistlib.loads(plan.text.encode("utf-8"))
    assert plan.path == home / "Library" / "LaunchAgents" / "com.carryd.agent.plist"
    assert agent["Label"] == "com.carryd.agent"
    assert agent["ProgramArguments"] == [str(VENV_CARRYD), "run", "--root", str(root.resolve())]
    assert Path(agent["ProgramArguments"][0]).is_file()
    assert agent["RunAtLoad"] is True
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["StandardErrorPath"] == str(home / "Library" / "Logs" / "carryd" / "carryd.log")
    assert "EnvironmentVariables" not in agent

    monkeypatch.setenv("CARRYD_MODEL_PATH", str(tmp_path / "models & <more>"))
    agent = plistlib.loads(plan_service(settings_for(root), platform="launchd").text.encode())
    assert agent["EnvironmentVariables"] == {"CARRYD_MODEL_PATH": str(tmp_path / "models & <more>")}


def test_the_instance_plist_has_its_own_label_and_log(root: Path) -> None:
    plan = plan_service(settings_for(root), platform="launchd", instance=True)
    agent = plistlib.loads(plan.text.encode("utf-8"))
    assert agent["Label"].startswith("com.carryd.agent.") and " " not in agent["Label"]
    assert plan.path.name == agent["Label"] + ".plist"
    assert agent["StandardErrorPath"] != str(
        Path.home() / "Library" / "Logs" / "carryd" / "carryd.log"
    )


# --- print, install, uninstall ----------------------------------------------------------------


def test_print_writes_the_unit_to_stdout(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cmd_service(args("print"), settings_for(root), platform="systemd") == 0
    assert capsys.readouterr().out == plan_service(settings_for(root), platform="systemd").text
    assert cmd_service(args("print"), settings_for(root), platform="launchd") == 0
    plistlib.loads(capsys.readouterr().out.encode("utf-8"))


def test_the_console_script_prints_the_unit_for_this_os(root: Path) -> None:
    done = subprocess.run(
        [str(VENV_CARRYD), "service", "print", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    if sys.platform == "darwin":
        assert plistlib.loads(done.stdout.encode())["ProgramArguments"][0] == str(VENV_CARRYD)
    else:
        assert f"ExecStart={VENV_CARRYD} run --root" in done.stdout


def test_install_writes_the_unit_then_reloads_and_enables_it(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = Recorder()
    assert cmd_service(args("install"), settings_for(root), runner=runner, platform="systemd") == 0
    unit = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user" / "carryd.service"
    assert (
        unit.read_text(encoding="utf-8")
        == plan_service(settings_for(root), platform="systemd").text
    )
    assert runner.commands == [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", "carryd.service"],
    ]
    assert "installed and started carryd.service" in capsys.readouterr().out

    # The same again changes nothing; a changed unit also restarts a running daemon.
    runner = Recorder()
    cmd_service(args("install"), settings_for(root), runner=runner, platform="systemd")
    assert ["systemctl", "--user", "try-restart", "carryd.service"] not in runner.commands
    other_root = root.parent / "other"
    other_root.mkdir()
    runner = Recorder()
    cmd_service(args("install"), settings_for(other_root), runner=runner, platform="systemd")
    assert runner.commands[-1] == ["systemctl", "--user", "try-restart", "carryd.service"]
    assert f"--root {other_root.resolve()}" in unit.read_text(encoding="utf-8")


def test_install_says_clearly_when_systemctl_is_missing(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = Recorder({"systemctl": CommandResult(127, "", "systemctl: command not found")})
    assert cmd_service(args("install"), settings_for(root), runner=runner, platform="systemd") == 1
    err = capsys.readouterr().err
    assert "systemctl is not available" in err and "carryd run --root" in err
    assert (Path(os.environ["XDG_CONFIG_HOME"]) / "systemd/user/carryd.service").is_file()


def test_install_reports_the_failing_command_and_its_stderr(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bus = CommandResult(1, "", "Failed to connect to bus: No medium found\n")
    runner = Recorder({"systemctl --user daemon-reload": bus})
    assert cmd_service(args("install"), settings_for(root), runner=runner, platform="systemd") == 1
    err = capsys.readouterr().err
    assert "`systemctl --user daemon-reload` failed with exit code 1" in err
    assert "Failed to connect to bus: No medium found" in err
    assert len(runner.commands) == 1
    # No user bus (ssh, sudo, a container): say the unit was written and what to do instead.
    unit = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user" / "carryd.service"
    assert f"the unit is written ({unit})" in err
    assert "loginctl enable-linger" in err and f"carryd run --root {root.resolve()}" in err


def test_install_refuses_a_missing_root(tmp_path: Path) -> None:
    runner = Recorder()
    with pytest.raises(UsageError, match="not a directory"):
        cmd_service(
            args("install"),
            settings_for(tmp_path / "missing"),
            runner=runner,
            platform="systemd",
        )
    assert runner.commands == []


def test_uninstall_stops_disables_and_removes(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cmd_service(args("install"), settings_for(root), runner=Recorder(), platform="systemd")
    unit = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user" / "carryd.service"
    runner = Recorder()
    assert (
        cmd_service(args("uninstall"), settings_for(root), runner=runner, platform="systemd") == 0
    )
    assert runner.commands == [
        ["systemctl", "--user", "disable", "--now", "carryd.service"],
        ["systemctl", "--user", "daemon-reload"],
    ]
    assert not unit.exists()
    # Nothing installed: nothing to run, and that is not an error.
    runner = Recorder()
    assert (
        cmd_service(args("uninstall"), settings_for(root), runner=runner, platform="systemd") == 0
    )
    assert runner.commands == []
    assert "not installed" in capsys.readouterr().out


def test_instances_share_the_template_until_the_last_one_goes(root: Path) -> None:
    other = root.parent / "second root"
    other.mkdir()
    unit_dir = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user"
    names = []
    for memory in (root, other):
        runner = Recorder()
        assert (
            cmd_service(
                args("install", instance=True),
                settings_for(memory),
                runner=runner,
                platform="systemd",
            )
            == 0
        )
        name = f"carryd@{systemd_escape_path(memory.resolve())}.service"
        assert runner.commands[-1] == ["systemctl", "--user", "enable", "--now", name]
        names.append(name)
        # What `systemctl enable` would have linked (the recorder does not run it).
        wants = unit_dir / "default.target.wants"
        wants.mkdir(exist_ok=True)
        (wants / name).symlink_to(unit_dir / "carryd@.service")
    template = unit_dir / "carryd@.service"
    assert template.is_file()

    (unit_dir / "default.target.wants" / names[0]).unlink()  # as `disable` would
    runner = Recorder()
    cmd_service(
        args("uninstall", instance=True), settings_for(root), runner=runner, platform="systemd"
    )
    assert runner.commands[0] == ["systemctl", "--user", "disable", "--now", names[0]]
    assert template.is_file(), "the second root still uses the template"
    (unit_dir / "default.target.wants" / names[1]).unlink()
    cmd_service(
        args("uninstall", instance=True), settings_for(other), runner=Recorder(), platform="systemd"
    )
    assert not template.exists()


def test_launchd_install_bootstraps_the_agent(root: Path) -> None:
    runner = Recorder(
        {"launchctl bootout": CommandResult(3, "", "Boot-out failed: 3: No such process")}
    )
    assert (
        cmd_service(args("install"), settings_for(root), runner=runner, platform="launchd", uid=501)
        == 0
    )
    plist = Path.home() / "Library" / "LaunchAgents" / "com.carryd.agent.plist"
    assert plistlib.loads(plist.read_bytes())["Label"] == "com.carryd.agent"
    assert (Path.home() / "Library" / "Logs" / "carryd").is_dir()
    assert runner.commands == [
        ["launchctl", "bootout", "gui/501/com.carryd.agent"],
        ["launchctl", "enable", "gui/501/com.carryd.agent"],
        ["launchctl", "bootstrap", "gui/501", str(plist)],
    ]

    runner = Recorder()
    assert (
        cmd_service(
            args("uninstall"), settings_for(root), runner=runner, platform="launchd", uid=501
        )
        == 0
    )
    assert runner.commands == [["launchctl", "bootout", "gui/501/com.carryd.agent"]]
    assert not plist.exists()


def test_launchd_bootstrap_failure_is_reported(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failed = CommandResult(5, "", "Bootstrap failed: 5: Input/output error")
    runner = Recorder({"launchctl bootstrap": failed})
    assert (
        cmd_service(args("install"), settings_for(root), runner=runner, platform="launchd", uid=501)
        == 1
    )
    assert "Bootstrap failed: 5: Input/output error" in capsys.readouterr().err


def test_launchctl_missing_is_reported(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runner = Recorder({"launchctl": CommandResult(127, "", "launchctl: command not found")})
    assert (
        cmd_service(args("install"), settings_for(root), runner=runner, platform="launchd", uid=501)
        == 1
    )
    assert "launchctl is not available" in capsys.readouterr().err
