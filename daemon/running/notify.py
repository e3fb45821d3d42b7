"""Given a state line ("READY=1", "STOPPING=1", "STATUS=…"), tell systemd (sd_notify).

systemd's `Type=notify` units pass `$NOTIFY_SOCKET`: a datagram unix socket, its name
starting with "@" for the abstract namespace. Outside systemd the variable is absent and
`sd_notify` does nothing. Standard library only: no libsystemd binding.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

log = logging.getLogger(__name__)

NOTIFY_ENV = "NOTIFY_SOCKET"


def notify_address(environ: Mapping[str, str] | None = None) -> str | None:
    """Given the environment, return the notify socket's address (abstract: leading NUL) or None."""
    env = os.environ if environ is None else environ
    address = env.get(NOTIFY_ENV, "")
    if not address:
        return None
    if address.startswith("@"):
        return "\0" + address[1:]
    if not address.startswith("/"):
        # systemd also allows vsock addresses ("vsock:…"); carryd runs as a local user service.
        log.debug("ignoring unsupported %s=%r", NOTIFY_ENV, address)
        return None
    return address


def sd_notify(*lines: str, environ: Mapping[str, str] | None = None) -> bool:
    """Given state lines, send them to systemd; return whether a notify socket took them."""
    address = notify_address(environ)
    if address is None:
        return False
    message = "\n".join(lines).encode("utf-8")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(message)
    except OSError as error:
        # Never fatal: a unit without Type=notify, or a socket gone away, must not stop carryd.
        log.warning("sd_notify to %s failed: %s", address.replace("\0", "@"), error)
        return False
    return True
