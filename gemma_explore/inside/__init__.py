"""Inside the model: the towers and embedders run on real inputs, per-layer inputs, logits and attention masks."""
