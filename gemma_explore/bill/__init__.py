"""Bill: what a dataset costs in tokens, per sample, walked locally or with Ray, written as CSV or parquet."""
