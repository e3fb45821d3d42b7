"""A second secrets corpus, written by an author who had not seen carryd's code, rules or its own
corpus (`tests/secret_corpus.py`), from a brief that said only what the corpus is for.

`corpus_dev.py` is the development half: tune and test on it. `corpus_test.py` is the held-out
half: it is scored only through `bench/bench_secrets.py --split test` (one summary line) and is not read
while the rules are tuned. Both are generated from fixed seeds, so no real credential is here.
`check.py` is the author's own self-check of the files.
"""
