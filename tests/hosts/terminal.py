"""A host's interactive UI on a pseudo-terminal (the standard library's `pty`), read as text.

For what only the interactive UI shows, such as Claude Code's status line: the host runs
on a real terminal of a fixed size; `screen()` is everything it printed, with the terminal's
control sequences taken out.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

# CSI, OSC and the short escape sequences a terminal UI draws with.
CONTROL = re.compile(
    r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]"
    r"|\x1b[=>78DEHMNOcZ]"
)


class Terminal:
    """A command on a pseudo-terminal of `rows` x `columns`; `type` keys, read `screen()`."""

    def __init__(
        self, argv: list[str], *, env: dict[str, str], cwd: Path, rows: int = 40, columns: int = 160
    ) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.process = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
        )
        os.close(slave)
        self.master = master
        self.output = b""

    def read(self, seconds: float) -> None:
        """Read what the command prints for up to `seconds`."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.master], [], [], min(left, 0.2))
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                self.output += chunk

    def wait_for(self, pattern: str, seconds: float) -> bool:
        """Given a regular expression, read until the screen matches it (or time is up)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if re.search(pattern, self.screen()):
                return True
            self.read(0.5)
        return bool(re.search(pattern, self.screen()))

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def screen(self) -> str:
        """Everything printed so far, without control sequences."""
        return CONTROL.sub("", self.output.decode("utf-8", errors="replace"))

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        os.close(self.master)
