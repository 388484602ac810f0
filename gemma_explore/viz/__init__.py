"""Visualisers: each takes a plan, layout or report and returns a matplotlib Figure."""
