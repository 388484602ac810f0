"""Facts: every number about a family, with its source, and the seven released checkpoints."""
