"""Serving: what vLLM reserves at start-up and what a request costs: budgets, KV capacity, encoder batches, FLOPs, weights."""
