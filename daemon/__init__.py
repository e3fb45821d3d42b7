"""The only place with long-lived IO: the command line, the running daemon, the hosts' hooks.

Layers, lowest first; a module imports only from its own layer or lower ones
(tests/test_architecture.py checks every import, function-level ones too):

    daemon/*.py   the ground every layer stands on: errors, settings (config), atomic files,
                  the state folder's records (state), the root's layout, the control socket
    indexer/      index runs: scan, plan, sync (in-process or in a child), verify, the model
    recall/       recall and expand over the index, warm, in-process or through the daemon
    carries/      building, writing and archiving each workspace's carry
    running/      the running daemon: run, worker, watcher, scheduler, queries, status, service
    hosts/        host integrations: hook events, the hand-off, setup, MCP, one module per host
    cli/          the command line: parsing, dispatch, the one-shot commands

docs/layout.md says which files a change touches.
"""
