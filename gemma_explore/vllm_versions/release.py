"""What one vLLM release does with a Gemma checkpoint, as one frozen value.

A :class:`VllmProfile` holds every fact this package states about vLLM that can change
from one release to the next: the defaults that size the KV pool, the batch tiers per GPU,
the start-up refusals, the message templates and the files they live in, the encoder-graph
and tower-quantization rules, the placeholder strings, the per-request media limits and
where each function lives. Each field says *why* it matters in a comment, and
``sources`` says where the fact was read in that release (file, line, function).

The rest of the package asks a profile (:func:`~gemma_explore.vllm_versions.choice.vllm_profile`)
instead of writing a version number. Adding a release means one more module beside
``v0_32.py`` and its checks.

>>> from gemma_explore.vllm_versions import vllm_profile
>>> vllm_profile("0.32").kv_sizing
'utilization'
>>> vllm_profile("0.34").kv_sizing
'extensible'
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BatchTier", "VllmProfile"]


@dataclass(frozen=True)
class BatchTier:
    """One row of ``EngineArgs.get_batch_defaults`` on CUDA: the defaults a GPU gets.

    >>> BatchTier("H100-class", 70, ("a100",), (), 16384, 8192, 1024, 1024).serve_batch
    8192
    """

    name: str  # how a step names the tier ("a GPU with ≥ 70 GiB that is not an A100")
    min_memory_gib: float  # get_device_total_memory() at or above this, in GiB
    excluded_names: tuple[str, ...]  # device names (lower case) that never get this tier
    excluded_capabilities: tuple[tuple[int, int], ...]  # compute capabilities that never do
    llm_batch: int  # max_num_batched_tokens for LLM(...)
    serve_batch: int  # max_num_batched_tokens for vllm serve
    llm_seqs: int  # max_num_seqs for LLM(...)
    serve_seqs: int  # max_num_seqs for vllm serve

    def admits(self, memory_bytes: int, name: str, capability: tuple[int, int] | None) -> bool:
        """Does a GPU of this memory, name and capability get this tier?"""
        lower = name.lower()
        if any(n in lower for n in self.excluded_names):
            return False
        if capability is not None and tuple(capability) in self.excluded_capabilities:
            return False
        return memory_bytes >= self.min_memory_gib * (1 << 30)


@dataclass(frozen=True)
class VllmProfile:
    """Every version-dependent fact about one vLLM release, with its source.

    Build one with :func:`~gemma_explore.vllm_versions.choice.vllm_profile`; the modules
    ``v0_32.py``, ``v0_33.py``, ``v0_34.py`` each define one.
    """

    # -- which release -------------------------------------------------------------------
    version: str  # "0.32": the release line every surface names
    release: str  # "0.32.0": the wheel whose source the facts were read from
    transformers: str  # newest transformers that release accepts (its Requires-Dist), checked with
    # Why this profile answers (installed, asked for, or the newest); never compared.
    chosen_because: str = field(default="", compare=False)

    # -- how the KV pool is sized at start-up --------------------------------------------
    # CacheConfig.gpu_memory_utilization's default: the share of the GPU vLLM may use.
    # None: no fixed share (0.34's extensible KV cache resolves it at start-up).
    gpu_memory_utilization: float | None = 0.92
    # "utilization": pool = total × utilization − weights − activation peak (profiled).
    # "extensible": on CUDA and ROCm, utilization resolves to 1.0 and the pool is what is
    # free after warm-up, less a headroom share (extensible_kv_cache.py).
    kv_sizing: str = "utilization"
    # extensible: max(floor, fraction × the transient peak) stays free beside the peak
    kv_margin_floor_bytes: int | None = None  # KV_CACHE_MARGIN_FLOOR_BYTES on CUDA
    kv_margin_fraction: float | None = None  # KV_CACHE_MARGIN_FRACTION
    default_block_size: int = 16  # CacheConfig.DEFAULT_BLOCK_SIZE: the CUDA backends keep it

    # -- the batch defaults per GPU (EngineArgs.get_batch_defaults) ----------------------
    batch_tiers: tuple[BatchTier, ...] = ()  # first match wins; the last admits every GPU

    # -- start-up refusals ---------------------------------------------------------------
    # The one-request fit check also runs after warm-up, on the measured pool (extensible).
    checks_fit_after_warmup: bool = False
    # An explicit float16/bfloat16 --kv-cache-dtype that differs from the model's dtype.
    refuses_kv_dtype_mismatch: bool = False

    # -- Gemma 4's model file ------------------------------------------------------------
    # Encoder CUDA graphs (off unless --compilation-config '{"cudagraph_mm_encoder": true}'):
    # "budget" captures one graph per power-of-two token budget with rows of
    # min(budget, 280) soft tokens; "row-width" one per (budget, row width) up to the
    # engine's max_soft_tokens, packed greedily; "grid" the same widths on a finer budget
    # grid capped at encoder_cudagraph_max_token_budget, one replay per encoder call.
    encoder_graph_rule: str = "budget"
    encoder_graph_max_budget: int | None = None  # encoder_cudagraph_max_token_budget (None: no cap)
    # Tower quantization: "single" (one answer for every tower, judged by the vision
    # config's sizes) or "per-tower" (each tower judged on its own sizes).
    tower_quant_rule: str = "single"
    # get_placeholder_str per model class: architecture → modality → the string vLLM's chat
    # API types into the prompt for one item.
    placeholder_str: dict[str, dict[str, str]] = field(default_factory=dict)
    # mm_encoder_tp_mode="data" (each rank encodes whole items) for Gemma 4's towers.
    encoder_data_parallel: bool = False

    # -- per-request media limits --------------------------------------------------------
    max_audio_decode_s: float = 600.0  # VLLM_MAX_AUDIO_DECODE_DURATION_S: longest clip decoded
    # VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES: decoded media one request may hold (None: no cap)
    media_decode_limit_bytes: int | None = None
    audio_decode_reservation_bytes: int | None = None  # what each audio clip counts against it
    # The processor cache keeps a request's own cached items while it inserts the same
    # request's new ones (_merge_mm_kwargs reads them before the misses go in); without it,
    # a request whose items overflow the cache can evict its own later hits.
    processor_cache_keeps_request_hits: bool = False
    # The model classes (architectures) whose images vLLM normalizes on the device by
    # default: the class sets supports_mm_device_do_normalize and MultiModalConfig's
    # mm_device_do_normalize is on, so the HF processor runs with do_rescale=False and
    # do_normalize=False and the image and video pixel values reach the processor cache as
    # raw uint8 (1 B each, not cast to the model dtype). --no-mm-device-do-normalize, or
    # VLLM_USE_RUST_FRONTEND, turns it off (then they are floating, cast as the rest).
    mm_device_do_normalize: frozenset[str] = frozenset()

    # -- the CPU build ----------------------------------------------------------------------
    # The CPU linear kernels (named by the function dispatch_cpu_unquantized_gemm's closure
    # calls) that refuse an input whose last dimension is strided, as Gemma 4's audio tower
    # hands linear_end for one clip: there the engine dies on every Gemma 4 clip. Which
    # kernel a machine gets is the dispatch's choice: zentorch (an AMD Zen CPU with zentorch
    # installed), the AMX sgl kernel (bfloat16/float16 weights on a CPU with AMX tiles),
    # oneDNN (a build with it), else torch.nn.functional.linear.
    cpu_kernels_refusing_strided_input: tuple[str, ...] = ()

    # -- the messages ---------------------------------------------------------------------
    # A message key of serving/vllm_errors.py → vLLM's text in this release, its fields
    # named ({max_model_len}, …), and the file (under vllm/) that raises or logs it.
    message_templates: dict[str, str] = field(default_factory=dict)
    message_files: dict[str, str] = field(default_factory=dict)

    # -- where things live ---------------------------------------------------------------
    # A function this package follows → "file: qualified name" in this release.
    locations: dict[str, str] = field(default_factory=dict)
    # Each fact above → where it was read: "file:line (function)" in this release.
    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def label(self) -> str:
        """How every surface names the release: ``vLLM 0.32``."""
        return f"vLLM {self.version}"

    def batch_tier(
        self, memory_bytes: int, name: str = "", capability: tuple[int, int] | None = None
    ) -> BatchTier:
        """The first tier that admits this GPU.

        >>> from gemma_explore.vllm_versions import vllm_profile
        >>> vllm_profile("0.32").batch_tier(80 << 30, "NVIDIA H100 80GB HBM3").serve_batch
        8192
        """
        for tier in self.batch_tiers:
            if tier.admits(memory_bytes, name, capability):
                return tier
        raise LookupError(f"{self.label} has no batch tier for {name or 'this GPU'}")

    def message_file(self, key: str, default: str) -> str:
        """The file (under ``vllm/``) that holds message ``key`` in this release."""
        return self.message_files.get(key, default)

    def location(self, what: str) -> str:
        """Where ``what`` lives in this release ("file: qualified name")."""
        return self.locations[what]
