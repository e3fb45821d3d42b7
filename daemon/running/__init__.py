"""The running daemon: `carryd run` (startup, worker, watcher, scheduler, query thread, the
daemon's record), `carryd status`, and `carryd service` that installs it as a user service.

May import carries/, recall/, indexer/ and daemon/*.py; never hosts/ or cli/.
"""
