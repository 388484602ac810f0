"""vLLM's CPU linear kernel on this machine, decided by vLLM's own code at test time.

On its CPU build vLLM gives every unquantized linear layer a kernel when its weights are
loaded (``dispatch_cpu_unquantized_gemm``, model_executor/layers/utils.py): zentorch on an
AMD Zen CPU with zentorch installed; the sgl kernel (``weight_packed_linear``) where the
CPU has AMX tiles and the weights are bfloat16/float16 (``check_cpu_sgl_kernel``:
``torch.cpu._is_amx_tile_supported()``); oneDNN (``onednn_mm``) where the build has it;
else ``torch.nn.functional.linear``. Gemma 4's audio tower hands its light convolution's
``linear_end`` a tensor whose last dimension is strided (``….transpose(1, 2)``); for one
clip (batch 1) ``onednn_mm``'s ``x.reshape(-1, k)`` keeps the stride and oneDNN refuses
it ("Expected a.stride(-1) == 1"), the sgl kernel refuses it too ("mat1must be contiguous
at last dimension"), and torch's linear takes it.

:func:`cpu_linear` runs that dispatch on a layer of the given shape and dtype and calls the
kernel it chose on such a tensor: what it says is what the engine's audio tower meets.
"""

from __future__ import annotations

from dataclasses import dataclass

# The function each kernel's closure calls (dispatch_cpu_unquantized_gemm's lambdas), in
# the order the dispatch tries them, and how a message names it.
KERNELS = {
    "zentorch_linear_unary": "zentorch (zentorch_linear_unary)",
    "weight_packed_linear_cpu": "the AMX sgl kernel (weight_packed_linear)",
    "onednn_mm": "oneDNN (onednn_mm)",
    "linear": "torch.nn.functional.linear",
}


@dataclass(frozen=True)
class CpuLinear:
    """The kernel vLLM chose here for one linear layer, and what it did with a tensor
    whose last dimension is strided (None: it took it)."""

    kernel: str  # a KERNELS value
    function: str  # a KERNELS key: the name a traceback through it shows
    error: str | None

    @property
    def takes_strided_input(self) -> bool:
        return self.error is None


def cpu_linear(n: int, k: int, dtype, *, frames: int = 25) -> CpuLinear:
    """Dispatch a ``[n, k]`` linear layer of ``dtype`` as vLLM's CPU build does, and call
    it on a ``[1, frames, k]`` tensor made by a transpose (the light convolution's output
    for one clip)."""
    import torch
    from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm

    layer = torch.nn.Module()
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(n, k, generator=generator).to(dtype)
    layer.weight = torch.nn.Parameter(weight, requires_grad=False)
    dispatch_cpu_unquantized_gemm(layer, remove_weight=False)
    names = getattr(getattr(layer.cpu_linear, "__code__", None), "co_names", ())
    function = next((f for f in KERNELS if f in names), None)
    if function is None:  # a built-in or a kernel this table does not know
        function = getattr(layer.cpu_linear, "__name__", repr(layer.cpu_linear))
    strided = torch.randn(1, k, frames, generator=generator).to(dtype).transpose(1, 2)
    try:
        out = layer.cpu_linear(strided, layer.weight, None)
    except RuntimeError as exc:
        return CpuLinear(KERNELS.get(function, function), function, str(exc))
    want = torch.nn.functional.linear(strided.float(), weight.float())
    tolerance = 1e-3 if dtype == torch.float32 else 0.1
    assert torch.allclose(out.float(), want, atol=tolerance, rtol=tolerance), function
    return CpuLinear(KERNELS.get(function, function), function, None)


def gemma4_audio_linear(dtype, *, family: str = "gemma4") -> CpuLinear | None:
    """What the kernel vLLM gives the tiny Gemma 4 audio tower's ``linear_end`` does with
    the tower's strided tensor here; None where vLLM does not run on the CPU (CUDA's GEMM
    takes any strides)."""
    from vllm.platforms import current_platform

    from gemma_explore.models.tiny import tiny_config

    if not current_platform.is_cpu():
        return None
    size = tiny_config(family).audio_config.hidden_size
    return cpu_linear(size, size, dtype)
