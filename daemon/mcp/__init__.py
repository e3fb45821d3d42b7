"""`carryd mcp`: carryd's memory as MCP tools over stdio — the JSON-RPC wire (`wire`), the
tools and the service behind them (`tools`), the command (`server`).

May import hosts/ (the carry a hook would inject), running/ (the status), carries/, recall/,
indexer/ and daemon/*.py. Kept out of hosts/ so that a hook never loads it, and written
without the MCP SDK so that the server answers `initialize` before anything heavy loads.
"""
