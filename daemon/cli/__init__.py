"""The command line: the argument parser, dispatch to each command's module, the one-shot commands.

May import every other daemon layer (it is the top); nothing imports it. `main` is the entry point.
"""

from carryd.daemon.cli.dispatch import main

__all__ = ["main"]
