"""The control socket: JSON lines, mode 0600, stale sockets, a fast None without a daemon."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.config import Settings
from carryd.daemon.control import ControlServer, answer_for, request, socket_answers
from carryd.daemon.errors import UsageError
from carryd.daemon.running.notify import notify_address, sd_notify
from carryd.index.errors import CarrydError


def settings_for(root: Path) -> Settings:
    root.mkdir(parents=True, exist_ok=True)
    return Settings(root=str(root))


def echo(params: Any) -> dict[str, Any]:
    return {"echo": dict(params)}


def usage_error(params: Any) -> dict[str, Any]:
    raise UsageError("recall: a non-empty query string is required")


def carryd_error(params: Any) -> dict[str, Any]:
    raise CarrydError("index.sqlite: corrupt")


def internal_error(params: Any) -> dict[str, Any]:
    raise ZeroDivisionError("division by zero")


HANDLERS = {
    "echo": echo,
    "usage": usage_error,
    "fails": carryd_error,
    "bug": internal_error,
}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"method": "echo", "params": {"a": 1}}', {"ok": True, "result": {"echo": {"a": 1}}}),
        (b'{"method": "echo"}', {"ok": True, "result": {"echo": {}}}),
        (b"not json", {"ok": False, "error": {"kind": "usage", "message": "request is not JSON"}}),
        (
            b'{"method": "echo", "params": [1]}',
            {"ok": False, "error": {"kind": "usage", "message": "echo: params must be an object"}},
        ),
        (
            b'{"method": "nope"}',
            {
                "ok": False,
                "error": {
                    "kind": "usage",
                    "message": "unknown method 'nope' (known: bug, echo, fails, usage)",
                },
            },
        ),
        (
            b'{"method": "fails"}',
            {"ok": False, "error": {"kind": "error", "message": "index.sqlite: corrupt"}},
        ),
        (
            b'{"method": "bug"}',
            {
                "ok": False,
                "error": {"kind": "internal", "message": "ZeroDivisionError: division by zero"},
            },
        ),
    ],
)
def test_answer_for_maps_requests_and_errors(line: bytes, expected: dict[str, Any]) -> None:
    assert answer_for(HANDLERS, line) == expected


def test_round_trip_mode_and_error_kinds(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "root")
    with ControlServer(settings.socket_path, HANDLERS):
        info = settings.socket_path.lstat()
        assert stat.S_ISSOCK(info.st_mode)
        assert stat.S_IMODE(info.st_mode) == 0o600
        assert info.st_uid == os.getuid()
        assert request(settings, "echo", {"text": "héllo"}) == {"echo": {"text": "héllo"}}
        with pytest.raises(UsageError, match="query string"):
            request(settings, "usage", {})
        with pytest.raises(CarrydError, match="corrupt"):
            request(settings, "fails", {})
        # A daemon-side bug must not break the caller: it falls back in-process.
        assert request(settings, "bug", {}) is None
    assert not settings.socket_path.exists()


def test_request_without_daemon_is_none_and_fast(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "root")
    started = time.monotonic()
    assert request(settings, "ping", {}) is None
    assert time.monotonic() - started < 0.1


def test_stale_socket_answers_none_fast_and_is_replaced(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "root")
    settings.socket_path.parent.mkdir(parents=True)
    crashed = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    crashed.bind(str(settings.socket_path))
    crashed.close()  # the file stays, nobody listens: what kill -9 leaves behind
    assert settings.socket_path.is_socket()
    assert not socket_answers(settings.socket_path)
    started = time.monotonic()
    assert request(settings, "ping", {}) is None
    assert time.monotonic() - started < 0.1
    with ControlServer(settings.socket_path, HANDLERS):
        assert request(settings, "echo", {}) == {"echo": {}}


def test_long_socket_path(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / ("deep" * 30) / "root")
    assert len(str(settings.socket_path)) > 110
    with ControlServer(settings.socket_path, HANDLERS):
        assert request(settings, "echo", {"x": 1}) == {"echo": {"x": 1}}
        assert stat.S_IMODE(settings.socket_path.lstat().st_mode) == 0o600


def test_requests_are_served_while_another_is_busy(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "root")
    entered, release = threading.Event(), threading.Event()

    def slow(params: Any) -> dict[str, Any]:
        entered.set()
        release.wait(5)
        return {"slow": True}

    answers: list[Any] = []
    with ControlServer(settings.socket_path, {**HANDLERS, "slow": slow}):
        caller = threading.Thread(target=lambda: answers.append(request(settings, "slow", {})))
        caller.start()
        assert entered.wait(5)
        assert request(settings, "echo", {"while": "busy"}) == {"echo": {"while": "busy"}}
        release.set()
        caller.join(5)
    assert answers == [{"slow": True}]


def test_stop_closes_idle_connections_and_joins(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "root")
    server = ControlServer(settings.socket_path, HANDLERS)
    server.start()
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    idle.connect(str(settings.socket_path))
    idle.sendall(
        b'{"method": "echo", "params": {"n": 1}}\n{"method": "echo", "params": {"n": 2}}\n'
    )
    reader = idle.makefile("rb")
    assert json.loads(reader.readline())["result"] == {"echo": {"n": 1}}
    assert json.loads(reader.readline())["result"] == {"echo": {"n": 2}}
    started = time.monotonic()
    server.stop()  # the idle connection's thread is blocked in recv: stop must end it
    assert time.monotonic() - started < 2
    assert reader.readline() == b""
    reader.close()
    idle.close()


def test_socket_path_that_is_not_a_socket_is_refused(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "root")
    settings.socket_path.parent.mkdir(parents=True)
    settings.socket_path.write_text("not a socket")
    with pytest.raises(CarrydError, match="not a socket"):
        ControlServer(settings.socket_path, HANDLERS).start()


# --- sd_notify ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("", None),
        ("/run/user/1000/systemd/notify", "/run/user/1000/systemd/notify"),
        ("@/org/freedesktop/systemd1/notify/123", "\0/org/freedesktop/systemd1/notify/123"),
        ("vsock:2:1234", None),
    ],
)
def test_notify_address(value: str | None, expected: str | None) -> None:
    environ = {} if value is None else {"NOTIFY_SOCKET": value}
    assert notify_address(environ) == expected


@pytest.mark.parametrize("abstract", [False, True])
def test_sd_notify_reaches_a_listening_socket(tmp_path: Path, abstract: bool) -> None:
    name = f"carryd-test-{os.getpid()}-{time.monotonic_ns()}"
    address = "\0" + name if abstract else str(tmp_path / "notify")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(address)
    listener.settimeout(5)
    try:
        value = "@" + name if abstract else address
        assert sd_notify("READY=1", "STATUS=watching", environ={"NOTIFY_SOCKET": value})
        assert listener.recv(4096) == b"READY=1\nSTATUS=watching"
    finally:
        listener.close()


def test_sd_notify_without_systemd_or_with_a_dead_socket(tmp_path: Path) -> None:
    assert sd_notify("READY=1", environ={}) is False
    missing = {"NOTIFY_SOCKET": str(tmp_path / "gone")}
    assert sd_notify("READY=1", environ=missing) is False
