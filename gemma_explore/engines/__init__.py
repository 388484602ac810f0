"""Engines: what answers a prompt (transformers, vLLM, an OpenAI-compatible server), how one is loaded, and `vllm serve`'s flags."""
