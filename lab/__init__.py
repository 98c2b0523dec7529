"""The lab beside the product: what measures the app, never what the app runs.

- `lab.evaluate`: needle sets over chunk strategies and retrieval modes, and the threshold sweep as a table.
- `lab.beir`: BEIR benchmarks through the app's own search; `lab.metrics`: recall, nDCG, Wilson intervals
  and sign tests.
- `lab.judge_data`, `lab.train_judge`: the judge's data and its training.

`rag eval` imports the lab only when it runs; nothing in `rag` imports it otherwise. The lab uses the
product's own rules (`rag.deciding.needles.contains`, `rag.deciding.sweep`, `rag.searching.search.hybrid_search`) rather than copies.
"""
