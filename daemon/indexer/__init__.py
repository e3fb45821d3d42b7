"""Index runs: scan the root, plan and run a sync (in-process or in the indexing child), the
index lock, verify, the embedding model (fetch, load, interrupt) and semantic calibration.

May import daemon/*.py only (and carryd.index, carryd.carry); no other daemon layer.
"""
