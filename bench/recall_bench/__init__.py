"""The modules of `bench/bench_recall.py` (not run by CI): `sets` (the sets, their halves, the
near misses and the independent set), `baselines` (plain BM25, the lexical arm in memory,
query decomposition), `fitting` (the confidence weights, the absence weight, the gate),
`reports` (reliability and the printed tables), `harness` (one set with one model, the
independent near-miss set), `timing` (latency and P4)."""
