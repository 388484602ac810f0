"""The KV block vLLM picks on CUDA (``kv.cuda_block_size``), held to vLLM 0.32's own
backend code with the device faked: FlashAttention's block rule for the widest head on
each GPU and KV dtype, and the TRITON_FLASHINFER composite's one kernel block."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gemma_explore.facts.released import RELEASED_IDS
from gemma_explore.serving.plan import plan_serving

fa = pytest.importorskip("vllm.v1.attention.backends.flash_attn")
torch = pytest.importorskip("torch")


def _vllms_block(monkeypatch, major: int, head_size: int, fp8: bool) -> int:
    """FlashAttention's preferred block on a GPU of this major (FA4 on 9.x and 10.x for
    512-wide heads, as vLLM's Gemma 4 hook asks for), from its own classmethods."""
    from vllm.v1.attention.backend import MultipleOf
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVQuantMode

    family = fa.current_platform.__class__
    monkeypatch.setattr(
        family,
        "is_device_capability_family",
        classmethod(lambda cls, c, device_id=0: c // 10 == major),
    )
    monkeypatch.setattr(
        fa,
        "get_flash_attn_version",
        lambda head_size=None, **_: 4 if major >= 9 and head_size == 512 else 3,
    )
    spec = FullAttentionSpec(
        block_size=16,
        num_kv_heads=1,
        head_size=head_size,
        dtype=torch.uint8 if fp8 else torch.bfloat16,
        kv_quant_mode=KVQuantMode.FP8_PER_TENSOR if fp8 else KVQuantMode.NONE,
    )
    sizes = fa.FlashAttentionBackend.get_supported_kernel_block_sizes(spec)
    fixed = [s for s in sizes if not isinstance(s, MultipleOf)]
    return max(16, *fixed) if fixed else 16


@pytest.mark.parametrize("hub_id", RELEASED_IDS)
@pytest.mark.parametrize(("gpu", "major"), [("A100 40GB", 8), ("L4", 8), ("H100 80GB", 9)])
@pytest.mark.parametrize("kv", [None, "fp8"])
def test_flash_attentions_block_is_the_plans(monkeypatch, hub_id, gpu, major, kv):
    plan = plan_serving(hub_id, gpu=gpu, max_model_len=4096, kv_cache_dtype=kv)
    widest = max(la.head_dim for la in plan.layers)
    assert plan.block_size == _vllms_block(monkeypatch, major, widest, kv == "fp8")


def _composite(name: str) -> dict[str, object]:
    """A composite backend's keyword arguments, read from vLLM's source (its module
    imports flashinfer, which vLLM's CPU build lacks)."""
    path = Path(fa.__file__).with_name(f"{name}.py")
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == (
            "create_composite_attention_backend"
        ):
            return {
                k.arg: ast.literal_eval(k.value)
                for k in node.keywords
                if k.arg != "module" and isinstance(k.value, (ast.Constant, ast.Tuple))
            }
    raise AssertionError(f"no composite backend in {path}")


@pytest.mark.parametrize("hub_id", RELEASED_IDS)
def test_blackwell_runs_the_composite_block_for_bidirectional_vision(hub_id):
    composite = _composite("triton_flashinfer")
    assert composite["device_major"] == 10
    plan = plan_serving(hub_id, gpu="B200", max_model_len=4096)
    vision = plan.model.use_bidirectional_attention == "vision"
    (kernel,) = composite["kernel_block_sizes"] if vision else (16,)
    assert plan.block_size == kernel
