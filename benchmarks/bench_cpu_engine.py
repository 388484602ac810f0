"""vLLM's CPU engine on released shapes, with dummy weights: what it allocates and the KV
line it logs, held to the plan (issue 37, item 3).

For each checkpoint (default: Gemma 4 E2B and Gemma 3n E2B) a fresh process builds the
released config offline (``released_config``) into a folder with the tiny bundle's
tokenizer and processor files, and starts ``vllm.LLM`` in process on it with
``load_format="dummy"``, bfloat16, ``max_model_len`` 2048, a 1 GiB KV cache
(``VLLM_CPU_KVCACHE_SPACE=1`` and ``kv_cache_memory_bytes``) and eager mode (so the CPU
worker runs no warm-up forward). It prints:

* the weights: vLLM's CPU model runner logs no "Model loading took X GiB" (only the GPU
  runner does), so two measurements stand in for it, both taken when the loader has
  filled the weights, just before ``process_weights_after_loading``: the bytes of every
  tensor the model holds then (parameters, buffers and tensor attributes, each storage
  once), and the process's resident memory growth since before ``LLM(...)``; both against
  :func:`gemma_explore.serving.weights.vllm_loaded_weights` (target: within 2 %);
* the start-up KV line vLLM logged ("CPU KV cache size: N tokens, Maximum concurrency …")
  against ``plan_serving(...).capacity(...)`` with the engine's own settings;
* the start-up seconds.

On CPU, ``process_weights_after_loading`` then repacks every Linear weight for oneDNN
(``dispatch_cpu_unquantized_gemm``, layers/utils.py) and keeps a packed *copy* of every
vocabulary embedding (``remove_weight=False`` in vocab_parallel_embedding.py, so the tied
embedding can serve as lm_head): on E2B that copy includes the 4.4 GiB per-layer
embedding table, and the process reached ~20 GiB. That step is CPU-only (a GPU keeps the
weights as loaded) and needs no measuring here, so the benchmark replaces it with plain
``F.linear`` dispatch, which keeps a model at weights + KV + ~1 GiB.

It needs about 13 GiB free per model (E2B's bf16 weights are 9.7 GiB) and skips a model,
saying why, when less than 14 GiB is available. Run it under the engine lock:

    flock /work/logs/s3/engine.lock timeout 1500 .venv/bin/python benchmarks/bench_cpu_engine.py
    .venv/bin/python benchmarks/bench_cpu_engine.py --model google/gemma-3n-E2B-it
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("google/gemma-4-E2B-it", "google/gemma-3n-E2B-it")
NEED_GIB = 14.0
KV_GIB = 1
MAX_MODEL_LEN = 2048
KV_LINE = re.compile(r"\S+ KV cache size: [\d,]+ tokens, Maximum concurrency for .*x")


def available_gib() -> float:
    """MemAvailable from /proc/meminfo (what ``free -g`` shows as available)."""
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024 / 2**30
    return 0.0


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def released_folder(model_id: str, root: Path) -> tuple[Path, str, bool]:
    """The released config and the tiny bundle's tokenizer/processor files, offline."""
    from gemma_explore.facts.released import released_config
    from gemma_explore.models.checkpoints import family_from_config
    from gemma_explore.models.tiny import build_tiny_processor

    config = released_config(model_id)
    family = family_from_config(config, model_id)
    folder = root / model_id.replace("/", "_")
    config.save_pretrained(folder)
    build_tiny_processor(family).save_pretrained(folder)
    return folder, family, getattr(config, "audio_config", None) is not None


def model_tensor_bytes(model) -> int:
    """Every tensor the loaded model holds, each storage once: parameters, buffers and
    tensor attributes (Gemma's per-layer-input staging tensor)."""
    import torch

    seen: dict[int, int] = {}

    def add(t) -> None:
        if isinstance(t, torch.Tensor) and t.device.type != "meta":
            storage = t.untyped_storage()
            seen[storage.data_ptr()] = storage.nbytes()

    for p in model.parameters():
        add(p)
    for b in model.buffers():
        add(b)
    for module in model.modules():
        for value in vars(module).values():
            add(value)
    return sum(seen.values())


def watch_loading(seen: dict) -> None:
    """Record the loaded model's tensor bytes and the process's memory when the loader has
    filled the weights, and skip the CPU-only oneDNN repack (see the module docstring)."""
    import torch
    import vllm.model_executor.layers.utils as layer_utils
    import vllm.model_executor.model_loader.base_loader as base_loader

    real = base_loader.process_weights_after_loading

    def recorded(model, *args, **kwargs):
        seen["held"] = model_tensor_bytes(model)
        seen["rss"] = rss_bytes()
        seen["loaded_at"] = time.perf_counter()
        return real(model, *args, **kwargs)

    def plain(layer, remove_weight: bool) -> None:
        layer.cpu_linear = torch.nn.functional.linear

    base_loader.process_weights_after_loading = recorded
    layer_utils.dispatch_cpu_unquantized_gemm = plain


def measure(model_id: str) -> dict:
    """Start the engine once on ``model_id``'s released shape and read what it did."""
    os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(KV_GIB)
    import vllm  # noqa: F401 - configures its "vllm" logger first: a handler added before is dropped

    import gemma_explore as ge
    from gemma_explore.engines.vllm import start_vllm
    from gemma_explore.serving.model import serving_model
    from gemma_explore.serving.weights import vllm_loaded_weights

    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    keep = Keep(level=logging.INFO)  # the module logger keeps it if vLLM re-configures "vllm"
    logging.getLogger("vllm").addHandler(keep)
    logging.getLogger("vllm.v1.core.kv_cache_utils").addHandler(keep)
    with tempfile.TemporaryDirectory() as tmp:
        folder, family, has_audio = released_folder(model_id, Path(tmp))
        seen: dict = {}
        watch_loading(seen)
        before = rss_bytes()
        t0 = time.perf_counter()
        llm = start_vllm(
            str(folder),
            family=family,
            has_audio=has_audio,
            dtype="bfloat16",
            load_format="dummy",
            max_model_len=MAX_MODEL_LEN,
            kv_cache_memory_bytes=KV_GIB << 30,
        )
        start_s = time.perf_counter() - t0
        vc = llm.llm_engine.vllm_config
        core = llm.llm_engine.engine_core.engine_core
        cc, sc = vc.cache_config, vc.scheduler_config
        limits = dict(vc.model_config.get_multimodal_config().limit_per_prompt or {})
        limits = {m: getattr(v, "count", v) for m, v in limits.items()}
        groups = core.scheduler.kv_cache_config.kv_cache_groups
        hybrid = any(getattr(g.kv_cache_spec, "sliding_window", None) for g in groups)
        model = serving_model(str(folder))
        weights = vllm_loaded_weights(
            model, limit_mm_per_prompt=limits, max_num_batched_tokens=sc.max_num_batched_tokens
        )
        plan = ge.plan_serving(
            model,
            max_model_len=vc.model_config.max_model_len,
            limit_mm_per_prompt=limits,
            max_num_batched_tokens=sc.max_num_batched_tokens,
            max_num_seqs=sc.max_num_seqs,
            dtype="bfloat16",
        )
        fits = plan.capacity(
            kv_cache_memory_bytes=int(cc.kv_cache_memory_bytes),
            async_scheduling=bool(sc.async_scheduling),
            block_size=int(cc.block_size),
            device="CPU",
            hybrid_kv_cache_manager=hybrid,
        )
        kv_line = next((x for x in lines if KV_LINE.search(x)), None)
        held_line = (  # the engine's own numbers, as update_kv_cache_capacity formats them
            f"CPU KV cache size: {int(cc.kv_cache_size_tokens):,} tokens, Maximum concurrency "
            f"for {vc.model_config.max_model_len:,} tokens per request: "
            f"{float(cc.kv_cache_max_concurrency):.2f}x"
        )
        return {
            "model": model_id,
            "start_s": round(start_s, 1),
            "load_s": round(seen["loaded_at"] - t0, 1),
            "held_bytes": seen["held"],
            "rss_growth_bytes": seen["rss"] - before,
            "plan_bytes": weights.bytes,
            "plan_steps": list(weights.steps),
            "kv_line": kv_line and KV_LINE.search(kv_line)[0],
            "engine_line": held_line,
            "engine_tokens": int(cc.kv_cache_size_tokens),
            "engine_concurrency": float(cc.kv_cache_max_concurrency),
            "capacity_line": fits.log_line(),
            "capacity_tokens": fits.num_tokens,
            "capacity_concurrency": fits.max_concurrency,
            "block_size": int(cc.block_size),
            "max_num_batched_tokens": int(sc.max_num_batched_tokens),
            "limits": limits,
            "loading_lines": [x for x in lines if "took" in x],
        }


def report(row: dict) -> str:
    gib = 2**30
    plan = row["plan_bytes"]
    held, grown = row["held_bytes"], row["rss_growth_bytes"]
    same_kv = row["capacity_line"] == row["engine_line"] and row["kv_line"] in (
        None,
        row["engine_line"],
    )
    return "\n".join(
        [
            f"{row['model']}: started in {row['start_s']} s, weights filled after "
            f"{row['load_s']} s (dummy weights, bf16, "
            f"max_model_len {MAX_MODEL_LEN}, {KV_GIB} GiB KV, block {row['block_size']})",
            f"  weights held by the loaded model: {held / gib:.3f} GiB; plan "
            f"(vllm_loaded_weights): {plan / gib:.3f} GiB; off by {100 * (held - plan) / plan:+.2f} %",
            f"  process memory growth up to the loaded weights: {grown / gib:.3f} GiB "
            f"({100 * (grown - plan) / plan:+.2f} % against the plan)",
            f"  vLLM logged:  {row['kv_line'] or '(not captured)'}",
            f"  engine holds: {row['engine_line']}",
            f"  capacity():   {row['capacity_line']}  ({'same' if same_kv else 'DIFFERENT'})",
            *(f"  vLLM: {x}" for x in row["loading_lines"]),
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", help="released id (repeatable)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child process: one model
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(measure(args.one)), flush=True)
        return 0
    failed = 0
    for model_id in args.model or MODELS:
        free = available_gib()
        if free < NEED_GIB:
            print(f"{model_id}: skipped, {free:.1f} GiB available (needs {NEED_GIB:.0f} GiB)")
            continue
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, __file__, "--one", model_id],
            env=env,
            capture_output=True,
            text=True,
        )
        rows = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
        if done.returncode or not rows:
            failed += 1
            print(f"{model_id}: the engine did not start (rc {done.returncode}):")
            print("\n".join((done.stdout + done.stderr).splitlines()[-30:]))
            continue
        row = json.loads(rows[0][len("RESULT ") :])
        logged = KV_LINE.search(done.stderr + done.stdout)  # vLLM's own log output
        row["kv_line"] = row["kv_line"] or (logged[0] if logged else None)
        print(report(row), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
