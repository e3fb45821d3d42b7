"""Recall and expand as a daemon service: the warm recaller and snapshot, remembered searches,
the JSON answer, and `RecallAccess` (in-process or through the running daemon's socket).

May import indexer/ and daemon/*.py (and carryd.index); never carries/, running/ or above.
"""
