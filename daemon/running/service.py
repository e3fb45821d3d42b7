"""`carryd service install|uninstall|print`: carryd as a systemd user service or launchd agent.

The unit and plist templates ship in `carryd.service` (`service/` in the source tree) and are
rendered here with the real absolute executable, root, config file and log path. Rendering is
pure (strings in, a string out); installing writes the file and drives `systemctl --user` or
`launchctl` through an injectable runner, so tests capture the commands without running them.
carryd never daemonises itself: systemd/launchd own its lifecycle.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal
from xml.sax.saxutils import escape as xml_escape

from carryd.daemon.config import MODEL_PATH_ENV, Settings
from carryd.daemon.errors import UsageError
from carryd.daemon.files import write_atomic

SYSTEMD_UNIT = "carryd.service"
SYSTEMD_TEMPLATE = "carryd@.service"
LAUNCHD_LABEL = "com.carryd.agent"
LAUNCHD_TEMPLATE = "com.carryd.agent.plist"
# Environment variables a service needs but a service manager does not inherit from your shell.
PASSED_ENVIRONMENT = (MODEL_PATH_ENV,)

Platform = Literal["systemd", "launchd"]
_PLACEHOLDER = re.compile(r"@[A-Z_]+@")
# Characters a systemd unit file or an XML 1.0 document cannot carry in a value.
_UNREPRESENTABLE = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str


Runner = Callable[[Sequence[str]], CommandResult]


@dataclass(frozen=True)
class ServicePlan:
    """What `install`/`uninstall` act on: one file, its rendered text and the unit/label name."""

    platform: Platform
    path: Path  # where the unit or plist is written
    text: str
    name: str  # systemd unit to enable (carryd.service, carryd@….service) or launchd label
    root: Path | None  # None: uninstalling the single unit/agent, which needs no root
    instance: bool
    log_file: Path | None = None  # launchd only: where the agent's stderr goes


# --- rendering (pure) -------------------------------------------------------------------------


def carryd_command(executable: str | None = None) -> tuple[str, ...]:
    """Given the running interpreter, return the absolute command that starts carryd.

    The console script next to the interpreter wins (a venv's own `carryd`), then `carryd` on
    PATH, then `<python> -m carryd.daemon.cli`. Symlinks are not resolved: resolving a venv's
    python would escape the venv.
    """
    interpreter = Path(executable or sys.executable).absolute()
    script = interpreter.parent / "carryd"
    if script.is_file() and os.access(script, os.X_OK):
        return (str(script),)
    found = shutil.which("carryd")
    if found:
        return (str(Path(found).absolute()),)
    return (str(interpreter), "-m", "carryd.daemon.cli")


def systemd_escape_path(path: str | os.PathLike[str]) -> str:
    """Given an absolute path, return it escaped like `systemd-escape --path` (an instance name)."""
    text = os.path.normpath(os.fspath(path)).strip("/")
    if not text:
        return "-"
    out: list[str] = []
    for position, byte in enumerate(text.encode("utf-8")):
        char = chr(byte)
        if char == "/":
            out.append("-")
        elif (char.isascii() and (char.isalnum() or char in ":_.")) and not (
            position == 0 and char == "."
        ):
            out.append(char)
        else:
            out.append(f"\\x{byte:02x}")
    return "".join(out)


def systemd_quote(argument: str, *, program: bool = False) -> str:
    """Given one command-line argument, return it as a systemd ExecStart= word.

    `%` (specifiers) is doubled, and `$` (variable expansion) too except in the program path,
    which systemd does not expand (`systemd-analyze verify` confirms both); an argument with
    spaces, quotes, backslashes or a lone `;` is double-quoted with C-style escapes.
    """
    _check_representable(argument)
    text = argument.replace("%", "%%")
    if not program:
        text = text.replace("$", "$$")
    if text and not re.search(r"[\s\"'\\]", text) and text != ";":
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_systemd_unit(
    template: str,
    *,
    command: Sequence[str],
    root: str | None,
    config_file: str = "",
    environment: Mapping[str, str] | None = None,
) -> str:
    """Given the unit template, return the unit with real paths.

    `root=None` renders the template unit: the root comes from the instance name (`%f`).
    """
    words = [systemd_quote(part, program=position == 0) for position, part in enumerate(command)]
    words += ["run", "--root"]
    words.append("%f" if root is None else systemd_quote(root))
    if config_file:
        words += ["--config", systemd_quote(config_file)]
    environment_lines = []
    for name, value in sorted((environment or {}).items()):
        _check_representable(value)
        assignment = f"{name}={value}".replace("%", "%%")
        environment_lines.append(
            'Environment="' + assignment.replace("\\", "\\\\").replace('"', '\\"') + '"'
        )
    description_root = "%f" if root is None else _checked(root).replace("%", "%%")
    return _fill(
        template,
        {
            "EXEC_START": " ".join(words),
            "ROOT": description_root,
            "ENVIRONMENT": "\n".join(environment_lines),
        },
    )


def render_launchd_plist(
    template: str,
    *,
    command: Sequence[str],
    root: str,
    label: str = LAUNCHD_LABEL,
    log_file: str,
    config_file: str = "",
    environment: Mapping[str, str] | None = None,
) -> str:
    """Given the plist template, return the launchd agent with real paths."""
    arguments = [*command, "run", "--root", root]
    if config_file:
        arguments += ["--config", config_file]
    program_arguments = "\n".join(f"\t\t<string>{_xml(part)}</string>" for part in arguments)
    environment_block = ""
    if environment:
        rows = "".join(
            f"\t\t<key>{_xml(name)}</key>\n\t\t<string>{_xml(value)}</string>\n"
            for name, value in sorted(environment.items())
        )
        environment_block = (
            "\n\t<!-- A service does not inherit your shell's environment. -->\n"
            f"\t<key>EnvironmentVariables</key>\n\t<dict>\n{rows}\t</dict>"
        )
    return _fill(
        template,
        {
            "LABEL": _xml(label),
            "PROGRAM_ARGUMENTS": program_arguments,
            "ROOT": _xml(root),
            "LOG_FILE": _xml(log_file),
            "ENVIRONMENT": environment_block,
        },
    )


def load_template(name: str) -> str:
    """Given a template's file name, return its text from the installed `carryd.service`."""
    return resources.files("carryd.service").joinpath(name).read_text(encoding="utf-8")


def _fill(template: str, values: Mapping[str, str]) -> str:
    lines = []
    for line in template.splitlines():
        stripped = line.strip()
        # A placeholder alone on its line that renders empty leaves no blank line behind.
        if _PLACEHOLDER.fullmatch(stripped) and not values.get(stripped.strip("@")):
            continue
        lines.append(_PLACEHOLDER.sub(lambda match: values[match.group(0).strip("@")], line))
    text = "\n".join(lines) + "\n"
    return text


def _xml(text: str) -> str:
    return xml_escape(_checked(text))


def _checked(text: str) -> str:
    _check_representable(text)
    return text


def _check_representable(text: str) -> None:
    if _UNREPRESENTABLE.search(text):
        raise UsageError(
            f"{text!r}: a service file cannot hold control characters (newline, tab, …); "
            "use a path without them"
        )


# --- planning: which file, for which platform --------------------------------------------------


def plan_service(
    settings: Settings,
    *,
    platform: Platform,
    instance: bool = False,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    command: Sequence[str] | None = None,
) -> ServicePlan:
    """Given the settings and the platform, return the service file to write and its name.

    Without a root (none given, none configured) only the single unit/agent can be named, not
    rendered: the plan has no text, which is all `uninstall` needs.
    """
    env = os.environ if environ is None else environ
    home = home or Path.home()
    unit_dir = Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "systemd" / "user"
    agent_dir = home / "Library" / "LaunchAgents"
    if not settings.root and not instance:
        if platform == "systemd":
            return ServicePlan(platform, unit_dir / SYSTEMD_UNIT, "", SYSTEMD_UNIT, None, False)
        return ServicePlan(
            platform, agent_dir / f"{LAUNCHD_LABEL}.plist", "", LAUNCHD_LABEL, None, False
        )
    root = settings.root_path.resolve()
    command = tuple(command or carryd_command())
    config_file = str(Path(settings.config_file).absolute()) if settings.config_file else ""
    environment = {name: env[name] for name in PASSED_ENVIRONMENT if env.get(name)}
    if platform == "systemd":
        template_name = SYSTEMD_TEMPLATE if instance else SYSTEMD_UNIT
        text = render_systemd_unit(
            load_template(template_name),
            command=command,
            root=None if instance else str(root),
            config_file=config_file,
            environment=environment,
        )
        name = f"carryd@{systemd_escape_path(root)}.service" if instance else SYSTEMD_UNIT
        return ServicePlan(platform, unit_dir / template_name, text, name, root, instance)
    label = LAUNCHD_LABEL
    log_name = "carryd.log"
    if instance:
        slug = re.sub(r"[^A-Za-z0-9.-]+", "-", str(root)).strip("-") or "root"
        label = f"{LAUNCHD_LABEL}.{slug}"
        log_name = f"carryd-{slug}.log"
    log_file = home / "Library" / "Logs" / "carryd" / log_name
    text = render_launchd_plist(
        load_template(LAUNCHD_TEMPLATE),
        command=command,
        root=str(root),
        label=label,
        log_file=str(log_file),
        config_file=config_file,
        environment=environment,
    )
    path = agent_dir / f"{label}.plist"
    return ServicePlan("launchd", path, text, label, root, instance, log_file)


def current_platform() -> Platform:
    """Return the service manager of this OS: launchd on macOS, systemd elsewhere."""
    return "launchd" if sys.platform == "darwin" else "systemd"


# --- the imperative shell -----------------------------------------------------------------------


def run_command(command: Sequence[str]) -> CommandResult:
    """Given a command, run it and return its exit code and output (127 when not installed)."""
    try:
        completed = subprocess.run(
            list(command), capture_output=True, text=True, timeout=60, check=False
        )
    except FileNotFoundError:
        return CommandResult(127, "", f"{command[0]}: command not found")
    except subprocess.TimeoutExpired:
        return CommandResult(124, "", f"{command[0]}: timed out after 60 s")
    except OSError as error:
        return CommandResult(126, "", f"{command[0]}: {error.strerror}")
    return CommandResult(completed.returncode, completed.stdout, completed.stderr)


def cmd_service(
    args: argparse.Namespace,
    settings: Settings,
    *,
    runner: Runner = run_command,
    platform: Platform | None = None,
    uid: int | None = None,
) -> int:
    """Given `carryd service ACTION`, print, install or uninstall the service; return exit code."""
    platform = platform or current_platform()
    if args.action != "uninstall":
        settings.root_path  # noqa: B018 — raises ConfigError naming --root when there is none
    plan = plan_service(settings, platform=platform, instance=bool(getattr(args, "instance", 0)))
    if args.action == "print":
        sys.stdout.write(plan.text)
        return 0
    if args.action == "install":
        return _install(plan, runner, uid)
    return _uninstall(plan, runner, uid)


def _install(plan: ServicePlan, runner: Runner, uid: int | None) -> int:
    assert plan.root is not None  # cmd_service asked for the root
    if not plan.root.is_dir():
        raise UsageError(
            f"{plan.root}: the memory root is not a directory; create it or pass --root DIR"
        )
    previous = plan.path.read_text(encoding="utf-8") if plan.path.is_file() else None
    write_atomic(plan.path, plan.text.encode("utf-8"), mode=0o644)
    print(f"carryd: wrote {plan.path}")
    if plan.platform == "systemd":
        steps = [
            ["systemctl", "--user", "daemon-reload"],
            ["systemctl", "--user", "enable", "--now", plan.name],
        ]
        if previous is not None and previous != plan.text:
            # `enable --now` leaves a running old daemon alone; make it pick up the new unit.
            steps.append(["systemctl", "--user", "try-restart", plan.name])
        follow = f"journalctl --user -u {plan.name} -f"
    else:
        assert plan.log_file is not None
        # launchd does not create the log folder; without it the agent dies at start.
        plan.log_file.parent.mkdir(parents=True, exist_ok=True)
        domain = f"gui/{os.getuid() if uid is None else uid}"
        # An agent loaded earlier must be booted out first, or bootstrap fails with EIO.
        bootout = runner(["launchctl", "bootout", f"{domain}/{plan.name}"])
        if bootout.returncode == 127:
            return _unavailable(plan, bootout)
        steps = [
            ["launchctl", "enable", f"{domain}/{plan.name}"],
            ["launchctl", "bootstrap", domain, str(plan.path)],
        ]
        follow = f"tail -f {plan.log_file}"
    for step in steps:
        result = runner(step)
        if result.returncode == 127:
            return _unavailable(plan, result)
        if result.returncode != 0:
            _report_failure(step, result)
            if _no_user_bus(result):
                _no_bus_advice(plan)
            return 1
    print(f"carryd: installed and started {plan.name} for {plan.root}")
    print(f"carryd: follow it with `{follow}`; check it with `carryd status`")
    return 0


def _uninstall(plan: ServicePlan, runner: Runner, uid: int | None) -> int:
    if plan.platform == "systemd":
        wants = plan.path.parent / "default.target.wants"
        enabled_link = wants / plan.name
        if not plan.path.is_file() and not enabled_link.is_symlink():
            print(f"carryd: {plan.name} is not installed (no {plan.path})")
            return 0
        status = 0
        stop = ["systemctl", "--user", "disable", "--now", plan.name]
        result = runner(stop)
        if result.returncode == 127:
            status = _unavailable(plan, result, installing=False)
        elif result.returncode != 0:
            _report_failure(stop, result)
            status = 1
        # The template unit stays while other roots still use it.
        others = sorted(
            link.name for link in wants.glob("carryd@*.service") if link.name != plan.name
        )
        if plan.instance and others:
            print(f"carryd: kept {plan.path}: still used by {', '.join(others)}")
        else:
            plan.path.unlink(missing_ok=True)
            print(f"carryd: removed {plan.path}")
        if status == 0:
            reload = ["systemctl", "--user", "daemon-reload"]
            result = runner(reload)
            if result.returncode != 0:
                _report_failure(reload, result)
                status = 1
        if status == 0:
            print(f"carryd: stopped and disabled {plan.name}")
        return status
    if not plan.path.is_file():
        print(f"carryd: {plan.name} is not installed (no {plan.path})")
        return 0
    domain = f"gui/{os.getuid() if uid is None else uid}"
    stop = ["launchctl", "bootout", f"{domain}/{plan.name}"]
    result = runner(stop)
    status = 0
    if result.returncode == 127:
        status = _unavailable(plan, result, installing=False)
    elif result.returncode != 0 and not _not_loaded(result):
        _report_failure(stop, result)
        status = 1
    plan.path.unlink(missing_ok=True)
    print(f"carryd: removed {plan.path}")
    if status == 0:
        print(f"carryd: stopped and unloaded {plan.name}")
    return status


def _not_loaded(result: CommandResult) -> bool:
    """Given a failed `launchctl bootout`, return whether it only says the agent was not loaded."""
    text = (result.stderr + result.stdout).lower()
    return result.returncode in (3, 113) or "no such process" in text or "could not find" in text


def _unavailable(plan: ServicePlan, result: CommandResult, *, installing: bool = True) -> int:
    tool = "systemctl" if plan.platform == "systemd" else "launchctl"
    print(f"carryd: {tool} is not available ({result.stderr.strip()}).", file=sys.stderr)
    if installing:
        print(
            f"carryd: the service file is written to {plan.path}; load it with your service "
            f"manager, or run `carryd run --root {plan.root}` in the foreground.",
            file=sys.stderr,
        )
    else:
        print(f"carryd: could not stop {plan.name}; stop it yourself.", file=sys.stderr)
    return 1


def _no_user_bus(result: CommandResult) -> bool:
    """Given a failed systemctl --user, return whether there was no user bus to talk to (a
    shell over ssh or sudo, a container: no `systemd --user` session)."""
    text = (result.stderr + result.stdout).lower()
    return "failed to connect to bus" in text or "no medium found" in text


def _no_bus_advice(plan: ServicePlan) -> None:
    print(
        f"carryd: the unit is written ({plan.path}), but this shell reaches no user service "
        f"manager (no systemd --user session: ssh, sudo or a container). Log in to a desktop or "
        f"run `loginctl enable-linger $USER` and a new login shell, then `systemctl --user "
        f"daemon-reload && systemctl --user enable --now {plan.name}`; or run "
        f"`carryd run --root {plan.root}` in the foreground meanwhile.",
        file=sys.stderr,
    )


def _report_failure(command: Sequence[str], result: CommandResult) -> None:
    detail = (result.stderr or result.stdout).strip() or "(no output)"
    print(
        f"carryd: `{' '.join(command)}` failed with exit code {result.returncode}: {detail}",
        file=sys.stderr,
    )
