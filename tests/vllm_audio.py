"""vLLM's audio decode limit, run: what its transcription endpoint's decoder does with a
file, for the tests of the demo's and the command line's long-clip handling."""

from __future__ import annotations

from gemma_explore.engines.vllm_processor import vllm_available


def vllm_decode(path, monkeypatch):
    """vLLM's decode limit (envs' VLLM_MAX_AUDIO_DECODE_DURATION_S, what its
    /v1/audio/transcriptions hands load_audio) and what load_audio does with the file
    under it: the samples, or the exception. (None, None) without vLLM."""
    if not vllm_available():
        return None, None
    import vllm.envs
    from vllm.multimodal.media.audio import load_audio

    monkeypatch.delenv("VLLM_MAX_AUDIO_DECODE_DURATION_S", raising=False)
    limit = vllm.envs.VLLM_MAX_AUDIO_DECODE_DURATION_S
    try:
        return limit, load_audio(path, sr=16_000, max_duration_s=limit)[0]
    except ValueError as exc:
        return limit, exc
