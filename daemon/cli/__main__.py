"""`python -m carryd.daemon.cli`: the `carryd` command (service units and benches run it so)."""

import sys

from carryd.daemon.cli import main

sys.exit(main())
