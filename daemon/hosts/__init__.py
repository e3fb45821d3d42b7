"""Host integrations: the registry, one module per host, hook events and state, the hand-off
and its trigger, `carryd setup` and the settings files it edits, `carryd mcp`.

May import running/ (the status MCP reports), carries/, recall/, indexer/ and daemon/*.py.
"""
