"""The carries: build each workspace's carry (planned, or flat on failure), write its files,
gather its sources, archive settled PLAN history, watch written carries for damage.

May import recall/, indexer/ and daemon/*.py (and carryd.carry, carryd.index).
"""
