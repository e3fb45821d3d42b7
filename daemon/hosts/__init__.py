"""Host integrations: the registry, one module per host, hook events and state, the hand-off
and its trigger, where each host compacts, per-host rendering, `carryd setup` and the settings
files it edits.

May import running/, carries/, recall/, indexer/ and daemon/*.py.
"""
