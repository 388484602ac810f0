"""GPU check: both tiny bundles end to end on CUDA through the transformers backend.

    python benchmarks/gpu_check.py [--device cuda] [--real PATH_OR_HUB_ID ...] [--no-vllm]

Runs image, audio, video (Gemma 4) and mixed prompts, checks every placeholder count
against the plans and the encoder report, and prints timings. With --real it also
runs the given checkpoints (folders or hub ids, bf16). Finishes in well under 5
minutes on one GPU; on a machine without CUDA use --device cpu for a dry run.

Then, where vLLM is installed (CUDA build, or the CPU build with --device cpu), it holds
both stacks to the same numbers, as ``tests/engine/test_parity.py`` does: each tiny
family saved once in float32, one in-process vLLM engine per family, and per modality
the prompt ids, 8 greedy tokens and the multimodal embeddings vLLM gathers (captured
inside the engine) against transformers' (``--no-vllm`` skips it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def run(name: str, device: str) -> list[str]:
    import torch

    import gemma_explore as ge
    from gemma_explore.samples import sample_photo, sample_speech, sample_video

    start = time.perf_counter()
    bundle = ge.load(name, device=device)
    load_s = time.perf_counter() - start
    photo, speech, video = sample_photo(), sample_speech(), sample_video()
    cases = {
        "image": [{"type": "image", "image": photo}, {"type": "text", "text": "Describe."}],
        "audio": [{"type": "audio", "audio": speech}, {"type": "text", "text": "Transcribe."}],
        "mixed": [
            {"type": "image", "image": photo},
            {"type": "audio", "audio": speech},
            {"type": "text", "text": "What do you see and hear?"},
        ],
    }
    if bundle.family == "gemma4":
        cases["video"] = [
            {"type": "video", "video": video},
            {"type": "text", "text": "What happens?"},
        ]
    lines = [
        f"{name}: {bundle!r}, loaded in {load_s:.1f} s on {device}"
        + (f" ({torch.cuda.get_device_name()})" if device.startswith("cuda") else "")
    ]
    failures = 0
    for case, content in cases.items():
        msgs = [{"role": "user", "content": content}]
        report = ge.inspect_multimodal(bundle, msgs)
        bundle.generate(msgs, max_new_tokens=4)  # warm-up (CUDA kernels, caches)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        gen = bundle.generate(msgs, max_new_tokens=32)
        ok = report.agrees and gen.generated_tokens > 0
        failures += not ok
        lines.append(
            f"  {case:6s} {'ok ' if ok else 'BAD'} prompt {gen.prompt_tokens:5d} tok "
            f"({gen.multimodal_tokens} mm) | preprocess {_num(gen.preprocess_s, 1e3)} ms | "
            f"encoders {_num(gen.encoder_s, 1e3)} ms | prefill {_num(gen.prefill_s, 1e3)} ms | "
            f"decode {_num(gen.decode_tokens_per_s)} tok/s"
        )
        if not report.agrees:
            lines += [f"    {m}" for m in report.mismatches]
    if device.startswith("cuda"):
        lines.append(f"  peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")
    return lines, failures


def vllm_parity(device: str) -> tuple[list[str], int]:
    """transformers vs vLLM's engine on each tiny family: the parity table's rows."""
    import tempfile
    from types import SimpleNamespace

    import torch

    import gemma_explore as ge
    from gemma_explore.inference.vllm_backend import CPU_KV_CACHE_BYTES
    from gemma_explore.models.tiny import tiny_name
    from tests.engine.conftest import LIMITS
    from tests.engine.parity import CASES, checks, media_for, run_both

    lines, failures = ["vLLM parity (float32, same saved weights):"], 0
    for family in dict.fromkeys(f for f, _ in CASES):
        with tempfile.TemporaryDirectory(prefix="gpu_check_") as folder:
            ge.load(tiny_name(family), device="cpu").save_pretrained(folder)
            hf = ge.load(folder, device=device, dtype=torch.float32)
            start = time.perf_counter()
            bundle = ge.load(folder, backend="vllm", dtype="float32", in_process=True,
                             max_model_len=4096, limit_mm_per_prompt=LIMITS[family],
                             kv_cache_memory_bytes=CPU_KV_CACHE_BYTES)  # fmt: skip
            lines.append(f"  {family}: engine up in {time.perf_counter() - start:.1f} s "
                         f"on {bundle.device}")  # fmt: skip
            engine = SimpleNamespace(bundle=bundle, llm=bundle.engine.llm)
            try:
                for fam, modality in CASES:
                    if fam != family:
                        continue
                    try:
                        run = run_both(engine, hf, "What is this?", **media_for(modality))
                    except Exception as exc:  # noqa: BLE001 - the engine's refusal is the result
                        failures += 1
                        lines.append(f"    {modality:6s} BAD {type(exc).__name__}: "
                                     f"{str(exc)[:120]}")  # fmt: skip
                        continue
                    for c in checks(run):
                        failures += not c.ok
                        lines.append(f"    {modality:6s} {c.name:16s} {'ok ' if c.ok else 'BAD'} "
                                     f"{c.detail}")  # fmt: skip
            finally:
                bundle.engine.llm.llm_engine.engine_core.shutdown()
    return lines, failures


def _num(value: float | None, scale: float = 1.0) -> str:
    """A timing, or "—" where the backend could not measure it."""
    return "      —" if value is None else f"{value * scale:7.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--real", nargs="*", default=[])
    parser.add_argument("--no-vllm", action="store_true", help="skip the vLLM parity checks")
    args = parser.parse_args()
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("No CUDA GPU visible; run with --device cpu for a dry run.")
        return 2
    total = 0
    for name in ["tiny-gemma3n", "tiny-gemma4", *args.real]:
        lines, failures = run(name, args.device)
        print("\n".join(lines), flush=True)
        total += failures
    from gemma_explore.inference.vllm_processor import vllm_available

    if not args.no_vllm and vllm_available():
        lines, failures = vllm_parity(args.device)
        print("\n".join(lines), flush=True)
        total += failures
    print("GPU check:", "all cases ok" if total == 0 else f"{total} case(s) failed")
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
