"""carryd's state stays in the root and talks only to its owner: a `<root>/.carryd` or
`.carryd/carry` that is a symbolic link or another user's is refused with a message naming it
(carryd used to write its index through the link and chmod what it found there, and overwrite
a user's file named like a carry); files carryd did not create keep their modes; a control
socket served by another user is not trusted, and what comes back over the socket is redacted.

The suite runs as root in CI's container, so "another user" is uid 65534 (nobody): folders
are chowned to it, and a fake daemon drops to it before it serves.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fault.conftest import carryd

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memory"
OTHER_UID = 65534
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


def example_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(EXAMPLES, root)
    return root


def users_folder(tmp_path: Path) -> Path:
    """A folder of the user's own outside the root: a script, a subfolder, a file named like
    a carry."""
    outside = tmp_path / "elsewhere"
    (outside / "sub").mkdir(parents=True)
    (outside / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (outside / "webshop.md").write_text("my own notes, not a carry\n")
    for path in (outside, outside / "sub", outside / "run.sh"):
        os.chmod(path, 0o755)
    return outside


def modes(folder: Path) -> dict[str, int]:
    return {
        str(path.relative_to(folder)): path.lstat().st_mode & 0o7777
        for path in [folder, *folder.rglob("*")]
    }


def test_a_linked_state_folder_is_refused_and_its_target_left_alone(
    tmp_path: Path, use_model: Path
) -> None:
    root = example_root(tmp_path)
    outside = users_folder(tmp_path)
    (root / ".carryd").symlink_to(outside)
    before = modes(outside)
    for command in (["index"], ["carry"], ["recall", "refund"], ["verify"]):
        result = carryd(*command, "--root", str(root))
        assert result.returncode == 1, (command, result.stdout, result.stderr)
        assert f"{root / '.carryd'}: carryd's state folder is a symbolic link" in result.stderr
        assert "Traceback" not in result.stderr
    assert modes(outside) == before
    assert sorted(path.name for path in outside.iterdir()) == ["run.sh", "sub", "webshop.md"]


def test_a_linked_carry_folder_is_refused_and_the_users_file_kept(
    tmp_path: Path, use_model: Path
) -> None:
    root = example_root(tmp_path)
    assert carryd("index", "--root", str(root)).returncode == 0
    outside = users_folder(tmp_path)
    (root / ".carryd" / "carry").symlink_to(outside)
    result = carryd("carry", "--root", str(root))
    assert result.returncode == 1, result.stderr
    assert f"{root / '.carryd' / 'carry'}: carryd's carry folder is a symbolic link" in (
        result.stderr
    )
    assert (outside / "webshop.md").read_text() == "my own notes, not a carry\n"
    assert sorted(path.name for path in outside.iterdir()) == ["run.sh", "sub", "webshop.md"]


def test_what_carryd_did_not_create_in_its_folder_keeps_its_mode(
    tmp_path: Path, use_model: Path
) -> None:
    root = example_root(tmp_path)
    state = root / ".carryd"
    (state / "sub").mkdir(parents=True)
    (state / "run.sh").write_text("#!/bin/sh\n")
    for path in (state / "sub", state / "run.sh"):
        os.chmod(path, 0o755)
    for command in (["index"], ["carry"]):
        result = carryd(*command, "--root", str(root))
        assert result.returncode == 0, result.stderr
    found = modes(state)
    assert (found["run.sh"], found["sub"]) == (0o755, 0o755)
    assert (found["."], found["index.sqlite"]) == (0o700, 0o600)


@needs_root
def test_another_users_state_folder_is_refused(tmp_path: Path, use_model: Path) -> None:
    root = example_root(tmp_path)
    (root / ".carryd").mkdir(mode=0o700)
    os.chown(root / ".carryd", OTHER_UID, OTHER_UID)
    result = carryd("index", "--root", str(root))
    assert result.returncode == 1, result.stderr
    assert f"{root / '.carryd'}: carryd's state folder belongs to uid {OTHER_UID}" in (
        result.stderr
    )
    assert list((root / ".carryd").iterdir()) == []


FAKE_DAEMON = r"""
import json, os, socket, sys
path, uid = sys.argv[1], int(sys.argv[2])
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
os.chmod(path, 0o777)
if uid != os.geteuid():
    os.setgid(uid); os.setuid(uid)
listener.listen(4)
print("ready", flush=True)
while True:
    connection, _ = listener.accept()
    connection.recv(65536)
    entry = {"id": "mem_fake", "path": "x.md", "line_start": 1, "line_end": 1,
             "text": "the deploy token is " + sys.argv[3]}
    answer = {"ok": True, "result": {"entries": [entry], "missing": []}}
    try:
        connection.sendall(json.dumps(answer).encode() + b"\n")
    except OSError:
        pass
    connection.close()
"""


def serve_fake_daemon(tmp_path: Path, root: Path, uid: int) -> subprocess.Popen[str]:
    """A process answering every request on `<root>/.carryd/carryd.sock` with an expand
    answer holding a token, running as `uid`; the socket file is then root's own, so only
    the peer's credentials tell it apart."""
    state = root / ".carryd"
    state.mkdir(mode=0o700, exist_ok=True)
    staging = tmp_path / "staging"
    staging.mkdir(mode=0o777)
    os.chmod(staging, 0o777)
    process = subprocess.Popen(
        [sys.executable, "-c", FAKE_DAEMON, str(staging / "s.sock"), str(uid), TOKEN],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    os.rename(staging / "s.sock", state / "carryd.sock")
    os.chown(state / "carryd.sock", os.geteuid(), os.getegid())
    os.chmod(state / "carryd.sock", 0o600)
    return process


@needs_root
def test_a_socket_served_by_another_user_is_not_trusted(tmp_path: Path, use_model: Path) -> None:
    root = example_root(tmp_path)
    process = serve_fake_daemon(tmp_path, root, OTHER_UID)
    try:
        probe = socket.socket(socket.AF_UNIX)
        probe.connect(str(root / ".carryd" / "carryd.sock"))  # it does answer
        probe.close()
        result = carryd("expand", "mem_fake", "--root", str(root))
    finally:
        process.kill()
        process.wait()
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert TOKEN not in result.stdout + result.stderr
    assert f"{root / '.carryd' / 'carryd.sock'}: the process answering" in result.stderr
    assert f"runs as uid {OTHER_UID}" in result.stderr


@needs_root
def test_a_socket_file_of_another_user_is_refused(tmp_path: Path, use_model: Path) -> None:
    root = example_root(tmp_path)
    process = serve_fake_daemon(tmp_path, root, os.geteuid())
    try:
        os.chown(root / ".carryd" / "carryd.sock", OTHER_UID, OTHER_UID)
        result = carryd("expand", "mem_fake", "--root", str(root))
    finally:
        process.kill()
        process.wait()
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert TOKEN not in result.stdout + result.stderr
    assert f"carryd's control socket belongs to uid {OTHER_UID}" in result.stderr


def test_what_the_socket_answers_is_redacted(tmp_path: Path, use_model: Path) -> None:
    root = example_root(tmp_path)
    process = serve_fake_daemon(tmp_path, root, os.geteuid())
    try:
        started = time.monotonic()
        result = carryd("expand", "mem_fake", "--json", "--root", str(root))
    finally:
        process.kill()
        process.wait()
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 60
    answer = json.loads(result.stdout)
    assert [entry["id"] for entry in answer["entries"]] == ["mem_fake"]  # it came from the socket
    assert TOKEN not in result.stdout
    assert "[redacted:" in answer["entries"][0]["text"]
