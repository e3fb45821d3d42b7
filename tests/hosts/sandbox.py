"""What the real-host tests share: a sandbox HOME with a real, indexed memory root, `carryd`
as a subprocess, and the real hosts installed by `npm ci --prefix tests/hosts`.

A `Sandbox` is one person's machine as the hosts see it: `home` (HOME, XDG dirs), the memory
root `home/memory` with one workspace, `shop` (ledger, plan, a note), and the project
directory `home/src/shop`, whose name maps it to that workspace. The hosts get a minimal
environment (nothing from the machine's but PATH), talk to the fake model API on 127.0.0.1,
and have that server as their HTTPS proxy, so nothing they send leaves the machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.hosts.fake_api import FakeApi

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"
CARRYD = Path(sys.executable).absolute().parent / "carryd"
WORKSPACE = "shop"
HOST_TIMEOUT = 180.0

LEDGER = """# Handoff ledger

## Task status
- refunds: the currency fix is half done

## Goal
- refund in the original currency of the order

## Tried approaches and failure reasons
- rounding in the webhook handler: failed, JPY refunds off by one yen

## Progress and next steps
- move the conversion into RefundService
"""
PLAN = """# Plan

## Current state
- refunds: RefundService takes the order's currency; the webhook still converts
"""
NOTES = """# Stripe sandbox

Refund webhooks retry three times with exponential backoff.
The sandbox account settles refunds in the order's currency after two days.
"""


def host_bin(name: str) -> Path:
    """Given a host's command name, return its installed executable (or fail, saying how)."""
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{path} is missing: install the pinned hosts: npm ci --prefix tests/hosts")
    return path


@dataclass
class Sandbox:
    home: Path
    api: FakeApi
    model_dir: Path
    env_extra: dict[str, str] = field(default_factory=dict)  # for every host run

    @property
    def root(self) -> Path:
        return self.home / "memory"

    @property
    def project(self) -> Path:
        return self.home / "src" / WORKSPACE

    @property
    def ledger(self) -> Path:
        return self.root / WORKSPACE / "handoff" / "LEDGER.md"

    @property
    def carry_path(self) -> Path:
        return self.root / ".carryd" / "carry" / f"{WORKSPACE}.md"

    def build(self, template: Path | None = None) -> Sandbox:
        """Write the memory root and the project, index the root with the real model and write
        its carry. With `template` (a root built so before), copy its files and index instead
        of embedding them again: `carryd index` then finds every file unchanged."""
        if template is not None:
            shutil.copytree(template, self.root, symlinks=True)
            shutil.rmtree(self.root / ".carryd" / "carry", ignore_errors=True)
        else:
            (self.root / WORKSPACE / "handoff").mkdir(parents=True)
            self.ledger.write_text(LEDGER, encoding="utf-8")
            (self.root / WORKSPACE / "PLAN.md").write_text(PLAN, encoding="utf-8")
            (self.root / WORKSPACE / "stripe.md").write_text(NOTES, encoding="utf-8")
            (self.root / "MEMORY.md").write_text("# Defaults\n\nPrefer small commits.\n", "utf-8")
        self.project.mkdir(parents=True)
        if template is None:
            self.carryd("index", "--root", str(self.root))
            self.carryd("carry", "--root", str(self.root))
        else:
            # In this process, where the model stays loaded between tests (a carry plans its
            # recalled memory with it): the same commands, a tenth of the time.
            assert in_process("index", "--root", str(self.root)) == 0
            assert in_process("carry", "--root", str(self.root)) == 0
        return self

    def env(self, **extra: str) -> dict[str, str]:
        """The environment a host runs with: the sandbox HOME, the real test model for the
        hooks, and the fake API as the only network."""
        home = str(self.home)
        proxy = self.api.url if self.api.running else "http://127.0.0.1:9"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": home,
            "USER": "tester",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "XDG_CONFIG_HOME": f"{home}/.config",
            "XDG_CACHE_HOME": f"{home}/.cache",
            "XDG_DATA_HOME": f"{home}/.local/share",
            "XDG_STATE_HOME": f"{home}/.local/state",
            "TMPDIR": f"{home}/tmp",
            "CARRYD_MODEL_PATH": str(self.model_dir),
            "HF_HUB_OFFLINE": "1",
            "FASTEMBED_CACHE_PATH": f"{home}/.cache/fastembed",
            "HTTPS_PROXY": proxy,
            "https_proxy": proxy,
            "HTTP_PROXY": proxy,
            "http_proxy": proxy,
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
        (self.home / "tmp").mkdir(exist_ok=True)
        return {**env, **self.env_extra, **extra}

    def carryd(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Given CLI arguments, run the installed `carryd` as the person would."""
        done = subprocess.run(
            [str(CARRYD), *args],
            capture_output=True,
            text=True,
            timeout=HOST_TIMEOUT,
            env=self.env(),
            cwd=self.project if self.project.exists() else self.home,
            stdin=subprocess.DEVNULL,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"carryd {' '.join(args)}: {done.returncode}\n{done.stderr}")
        return done

    def setup(self, host: str) -> None:
        """`carryd setup HOST --root ROOT`, the real command."""
        self.carryd("setup", host, "--root", str(self.root))

    def carry(self) -> str:
        """The carry file as it is on disk now."""
        return self.carry_path.read_text(encoding="utf-8")

    def new_ledger_item(self, text: str) -> str:
        """Add a progress item to the ledger and write the carry again; return the carry."""
        with self.ledger.open("a", encoding="utf-8") as ledger:
            ledger.write(f"- {text}\n")
        assert in_process("carry", "--root", str(self.root)) == 0
        carry = self.carry()
        assert text in carry
        return carry

    def run(
        self, argv: list[str], *, env: dict[str, str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Given a host's command line, run it in the project directory to its end."""
        return subprocess.run(
            argv,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=HOST_TIMEOUT,
            env=env,
            cwd=self.project,
        )


def in_process(*args: str) -> int:
    """Given CLI arguments, run carryd's command line in this process (CARRYD_MODEL_PATH set by
    the `use_model` fixture); return its exit code."""
    from carryd.daemon.cli.dispatch import main

    return main(list(args))


def carried_whole(carry: str, carry_path: Path, context: str) -> bool:
    """Whether the model's context holds the carry byte for byte, and the full carry's path."""
    return carry.rstrip("\n") in context and f"Full carry: {carry_path}" in context
