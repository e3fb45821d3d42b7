"""Given that the default model is not cached, decide fast whether to try downloading it, and
remember a failed download for a while (issue 11, "the first hour").

Without this, every `carryd index`, `carry`, `carry --print` and `run` on an offline machine
waited ~40 s in fastembed's retries and ended in "Could not load model … from any source".

`DownloadGuard` is the `index.embed.DownloadGuard` the daemon side hands to `FastEmbedder`:

- before a download, a remembered failure younger than `model.download_retry_minutes` answers at
  once (no network touched); HF_HUB_OFFLINE answers at once; otherwise one TCP connect to the
  hub (HF_ENDPOINT's host, or the HTTPS proxy when one is set) with a short timeout decides
  "no network" in about a second;
- a failed probe or download writes `download-failed.json` in the model cache dir (the model's
  name, when, why); a successful download removes it;
- every message says in plain words what happened and how to fix it: `CARRYD_MODEL_PATH` (or
  `model.model_path`) for a local folder, `model.allow_download = false` to stop trying.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from carryd.index.embed import ModelIdentity

log = logging.getLogger(__name__)

MARKER = "download-failed.json"
DEFAULT_HUB = "https://huggingface.co"
PROBE_TIMEOUT = 1.5  # seconds: a reachable hub answers a TCP connect far faster
FIX = (
    "To use carryd offline, point CARRYD_MODEL_PATH (or model.model_path in the config) at a "
    "local model folder; to stop trying to download, set model.allow_download = false in the "
    "config. Until then recall is lexical-only."
)


def probe_target(environ: dict[str, str] | None = None) -> tuple[str, int]:
    """Given the environment, return the (host, port) a model download connects to first: the
    proxy for the hub's scheme when one is set, else the hub (HF_ENDPOINT or huggingface.co)."""
    env = os.environ if environ is None else environ
    hub = urlsplit(env.get("HF_ENDPOINT") or DEFAULT_HUB)
    scheme = hub.scheme or "https"
    names = ("HTTPS_PROXY", "https_proxy") if scheme == "https" else ("HTTP_PROXY", "http_proxy")
    proxy = next((env[name] for name in (*names, "ALL_PROXY", "all_proxy") if env.get(name)), "")
    target = urlsplit(proxy if "://" in proxy else f"http://{proxy}") if proxy else hub
    default_port = 443 if (target.scheme or scheme) == "https" else 80
    try:
        port = target.port or default_port
    except ValueError:
        port = default_port
    return target.hostname or "huggingface.co", port


def reachable(host: str, port: int, timeout: float = PROBE_TIMEOUT) -> str | None:
    """Given a host and port, return None when a TCP connect succeeds within `timeout`, else
    what went wrong (in words). The name lookup counts against the timeout too: it runs in a
    daemon thread, since a resolver that hangs would ignore a socket timeout."""
    answer: list[str | None] = []

    def connect() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                answer.append(None)
        except TimeoutError:
            answer.append(f"{host}:{port} did not answer within {timeout:g} s")
        except OSError as error:
            answer.append(f"cannot connect to {host}:{port} ({error.strerror or error})")

    worker = threading.Thread(target=connect, name="carryd-hub-probe", daemon=True)
    worker.start()
    worker.join(timeout + 0.5)
    if not answer:
        return f"{host}:{port} did not answer within {timeout:g} s (name lookup included)"
    return answer[0]


def hf_offline(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "TRUE", "YES", "ON"}


@dataclass
class DownloadGuard:
    """Implements `index.embed.DownloadGuard` with a marker file in `cache_dir`."""

    cache_dir: Path
    retry_minutes: float = 60.0
    probe: tuple[str, int] | None = None  # None: `probe_target()` at the time of the download
    timeout: float = PROBE_TIMEOUT

    @property
    def marker(self) -> Path:
        return self.cache_dir / MARKER

    def before_download(self, identity: ModelIdentity) -> str | None:
        """Given the model about to be downloaded, return None to go ahead, or the message
        that says why not (fast: a remembered failure, HF_HUB_OFFLINE, or a failed probe)."""
        what = f"the default model {identity.name} is not downloaded yet"
        if hf_offline():
            return f"{what} and downloads are off (HF_HUB_OFFLINE is set). {FIX}"
        remembered = self.remembered_failure(identity.name)
        if remembered is not None:
            failed_at, retry_at, reason = remembered
            return (
                f"{what}: its download failed at {local_clock(failed_at)} ({reason}); carryd tries "
                f"again after {local_clock(retry_at)} (model.download_retry_minutes = "
                f"{self.retry_minutes:g}; delete {self.marker} to try now). {FIX}"
            )
        host, port = self.probe or probe_target()
        problem = reachable(host, port, self.timeout)
        if problem is None:
            # Said at WARNING so the CLI shows it: the download can take minutes.
            log.warning(
                "downloading %s (%s) once into %s; this can take a few minutes",
                identity.name,
                identity.file,
                self.cache_dir,
            )
            return None
        reason = f"no network: {problem}"
        self._remember(identity, reason)
        return (
            f"{what} and cannot be downloaded, {reason}; carryd tries again after "
            f"{self.retry_minutes:g} minutes. {FIX}"
        )

    def download_failed(self, identity: ModelIdentity, detail: str) -> str:
        """Given the model whose download just failed and why, remember it; return the
        message to show."""
        reason = "the download failed: " + " ".join(detail.split())[:300]
        self._remember(identity, reason)
        return (
            f"the default model {identity.name} could not be downloaded ({reason}); carryd "
            f"tries again after {self.retry_minutes:g} minutes. {FIX}"
        )

    def download_succeeded(self, identity: ModelIdentity) -> None:
        try:
            self.marker.unlink(missing_ok=True)
        except OSError as error:
            log.debug("cannot remove %s: %s", self.marker, error)

    def remembered_failure(self, model_name: str) -> tuple[float, float, str] | None:
        """Given a model's name, return when its last download failed, when carryd tries
        again and why — or None when no failure is remembered (or it is too old to count)."""
        remembered = self._remembered(model_name)
        if remembered is None:
            return None
        failed_at, reason = remembered
        return failed_at, failed_at + self.retry_minutes * 60, reason

    def _remembered(self, name: str) -> tuple[float, str] | None:
        try:
            data = json.loads(self.marker.read_text(encoding="utf-8"))
            failed_at = float(data["failed_at"])
            model, reason = str(data["model"]), str(data.get("reason", "unknown"))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        now = time.time()
        if model != name or not (now - self.retry_minutes * 60 < failed_at <= now + 60):
            return None
        return failed_at, reason

    def _remember(self, identity: ModelIdentity, reason: str) -> None:
        record = {
            "model": identity.name,
            "failed_at": time.time(),
            "failed_at_utc": datetime.now(UTC).isoformat(timespec="seconds"),
            "reason": reason,
        }
        try:
            self.marker.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.marker.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
            os.replace(temporary, self.marker)
        except OSError as error:  # a read-only cache only costs the memory of the failure
            log.debug("cannot write %s: %s", self.marker, error)


def guard_for(cache_dir: Path, model: Any) -> DownloadGuard:
    """Given the model cache dir and the [model] settings, return their download guard."""
    retry = getattr(model, "download_retry_minutes", 60)
    return DownloadGuard(cache_dir, retry_minutes=float(retry))


def local_clock(epoch: float) -> str:
    """Given an epoch time, return it as a person reads it: local date, minutes, zone."""
    return datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%d %H:%M %Z")
