"""Parity: our plan, transformers, vLLM's arithmetic and vLLM's processor side by side, and one input across the three families."""
