"""GPU check: both tiny bundles end to end on CUDA through the transformers engine.

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

``--encoder-graphs`` starts Gemma 4's tiny engine with vLLM's encoder CUDA graphs on and
holds each case of ``plan_encoder_replay`` to what the engine's image rows are (skipped,
with a line saying so, without CUDA).

``--payoff`` (with ``--real ID``) asks each real checkpoint the course's cases and records
the answers, prompt tokens and time to first token per budget where the notebooks show
them (``gemma_explore/course/recorded/``; :mod:`gemma_explore.course.real_answers`).

``--released [ID ...]`` then starts vLLM on each released checkpoint's shapes (config-only
folder, ``load_format="dummy"``, a fixed KV pool) and compares its start-up line by line
with ``plan_serving`` + ``capacity`` (all seven when no id is given; the 26B-A4B and 31B
need a large GPU).
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
        report = ge.inspect_multimodal(msgs, bundle=bundle)
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
    from gemma_explore.engines.vllm import CPU_KV_CACHE_BYTES
    from gemma_explore.models.tiny import tiny_name
    from tests.engine.conftest import LIMITS
    from tests.engine.parity import CASES, checks, media_for, run_both

    lines, failures = ["vLLM parity (float32, same saved weights):"], 0
    for family in dict.fromkeys(f for f, _ in CASES):
        with tempfile.TemporaryDirectory(prefix="gpu_check_") as folder:
            ge.load(tiny_name(family), device="cpu").save_pretrained(folder)
            hf = ge.load(folder, device=device, dtype=torch.float32)
            start = time.perf_counter()
            bundle = ge.load(
                folder,
                engine="vllm",
                dtype="float32",
                in_process=True,
                max_model_len=4096,
                limit_mm_per_prompt=LIMITS[family],
                kv_cache_memory_bytes=CPU_KV_CACHE_BYTES,
            )
            lines.append(
                f"  {family}: engine up in {time.perf_counter() - start:.1f} s on {bundle.device}"
            )
            engine = SimpleNamespace(bundle=bundle, llm=bundle.engine.llm)
            try:
                for fam, modality in CASES:
                    if fam != family:
                        continue
                    try:
                        run = run_both(engine, hf, "What is this?", **media_for(modality))
                    except Exception as exc:  # noqa: BLE001 - the engine's refusal is the result
                        failures += 1
                        lines.append(
                            f"    {modality:6s} BAD {type(exc).__name__}: {str(exc)[:120]}"
                        )
                        continue
                    for c in checks(run):
                        failures += not c.ok
                        lines.append(
                            f"    {modality:6s} {c.name:16s} {'ok ' if c.ok else 'BAD'} {c.detail}"
                        )
            finally:
                bundle.engine.llm.llm_engine.engine_core.shutdown()
    return lines, failures


# Per-request image budgets in one request, as tests/serving/test_encoder.py replays them
# on CPU with vLLM 0.32's own functions (REPLAY_CASES there).
ENCODER_GRAPH_CASES = [[280, 280], [140], [140, 140], [560]]


def encoder_graph_replay(device: str) -> tuple[list[str], int]:
    """Gemma 4's encoder on vLLM's CUDA-graph path (``cudagraph_mm_encoder``): per case,
    what ``plan_encoder_replay`` says vLLM 0.32 does, and what the engine does: its
    image rows (captured inside the engine) against transformers' eager features, and
    the manager's graph hits and misses. Needs CUDA; without it, says so and skips."""
    import torch

    if not (device.startswith("cuda") and torch.cuda.is_available()):
        return [
            "encoder CUDA graphs: skipped (needs a CUDA GPU; the CPU test "
            "tests/serving/test_encoder.py replays the same arithmetic)"
        ], 0
    import tempfile

    import numpy as np
    from PIL import Image

    import gemma_explore as ge
    from gemma_explore.serving.encoder import encoder_graph_budgets, plan_encoder_replay
    from tests.engine.facts import capture_mm_embeddings, fresh, model_runner

    lines, failures = ["encoder CUDA graphs (vLLM cudagraph_mm_encoder, tiny Gemma 4, fp32):"], 0
    with tempfile.TemporaryDirectory(prefix="gpu_check_graphs_") as folder:
        ge.load("tiny-gemma4", device="cpu").save_pretrained(folder)
        hf = ge.load(folder, device=device, dtype=torch.float32)
        start = time.perf_counter()
        bundle = ge.load(
            folder,
            engine="vllm",
            dtype="float32",
            in_process=True,
            max_model_len=4096,
            enforce_eager=False,
            limit_mm_per_prompt={"image": 2, "audio": 0, "video": 0},
            compilation_config={"cudagraph_mm_encoder": True},
        )
        llm = bundle.engine.llm
        lines.append(f"  engine up in {time.perf_counter() - start:.1f} s")
        try:
            vc = llm.llm_engine.vllm_config
            graphs = encoder_graph_budgets(
                max_num_batched_tokens=vc.scheduler_config.max_num_batched_tokens,
                max_model_len=vc.model_config.max_model_len,
                video=False,
            )
            manager = model_runner(llm).encoder_cudagraph_manager
            lines.append(
                f"  graphs at {list(graphs.token_budgets)}; manager "
                f"{'on' if manager is not None else 'OFF'}"
            )
            for budgets in ENCODER_GRAPH_CASES:
                rng = [np.random.RandomState(i) for i in range(len(budgets))]
                images = [Image.fromarray(r.randint(0, 255, (240, 320, 3), np.uint8)) for r in rng]
                prepared = ge.prepare_inputs(
                    "x", images=images, max_soft_tokens=budgets[0], bundle=hf
                )
                inputs = prepared.to_model(hf.model)
                with torch.inference_mode():
                    eager = hf.model.get_image_features(
                        inputs["pixel_values"], inputs["image_position_ids"]
                    ).pooler_output
                plan = plan_encoder_replay(
                    [budgets[0] * 9] * len(budgets),
                    graphs=graphs,
                    valid_tokens=[e.shape[0] for e in eager],
                )
                said = (
                    "right rows"
                    if plan.ok
                    else "copy fails"
                    if not all(b.fits for b in plan.batches)
                    else "wrong rows"
                )
                fresh(llm)
                calls = capture_mm_embeddings(llm)
                before = dict(manager.get_cumulative_stats()) if manager is not None else {}
                try:
                    bundle.generate(
                        "x", images=images, max_new_tokens=1, max_soft_tokens=budgets[0]
                    )
                    rows = [t for c in calls for t in c]
                    same = [
                        torch.allclose(r[: e.shape[0]].float().cpu(), e.float().cpu(), atol=1e-4)
                        for r, e in zip(rows, eager, strict=False)
                    ]
                    got = "right rows" if same and all(same) else f"rows equal: {same}"
                except Exception as exc:  # noqa: BLE001 - the engine's failure is the result
                    got = f"{type(exc).__name__}: {str(exc)[:100]}"
                after = dict(manager.get_cumulative_stats()) if manager is not None else {}
                agree = (got == "right rows") == plan.ok
                failures += not agree
                lines.append(
                    f"  budgets {budgets}: plan (0.32) says {said}; engine: {got} "
                    f"[{'agree' if agree else 'DISAGREE'}] stats {before} → {after}"
                )
        finally:
            llm.llm_engine.engine_core.shutdown()
    return lines, failures


def released_startup(
    device: str, ids: list[str], *, kv_gib: float = 8.0, max_model_len: int = 8192
) -> tuple[list[str], int]:
    """Start vLLM on each released checkpoint's *shapes* and compare its start-up with ours.

    No weights are needed: a config-only folder (``released_config(id)`` + the family's
    processor files at released settings) is started with ``load_format="dummy"`` (vLLM
    fills random weights) and a fixed ``kv_cache_memory_bytes``, so the KV pool is known
    exactly. Then the engine's own numbers (KV cache size and maximum concurrency, the
    encoder budget and cache, the per-item maxima) are held to ``plan_serving`` +
    ``ServingPlan.capacity`` line by line. A 31B in bf16 needs ~62 GiB of device memory;
    an id that does not fit is reported and skipped. ``ids`` may also name folders.
    """
    import tempfile
    from pathlib import Path

    import gemma_explore as ge
    from gemma_explore.engines.vllm import start_vllm
    from gemma_explore.facts.released import is_released, released_config
    from tests.engine.facts import engine_startup_facts, kv_line_of

    kv_bytes = int(kv_gib * 2**30)
    lines, failures = [f"vLLM start-up on released shapes ({kv_gib:g} GiB KV, dummy weights):"], 0
    for model_id in ids:
        with tempfile.TemporaryDirectory(prefix="gpu_check_released_") as tmp:
            if is_released(model_id):
                folder = Path(tmp)
                released_config(model_id).save_pretrained(folder)
                ge.load(model_id, weights=False).processor.save_pretrained(folder)
            else:
                folder = Path(model_id)
            bundle_family = ge.load(str(folder), weights=False).family
            start = time.perf_counter()
            try:
                llm = start_vllm(
                    str(folder),
                    family=bundle_family,
                    in_process=True,
                    load_format="dummy",
                    kv_cache_memory_bytes=kv_bytes,
                    max_model_len=max_model_len,
                )
            except Exception as exc:  # noqa: BLE001 - e.g. out of memory: report, go on
                failures += 1
                lines.append(
                    f"  {model_id}: BAD engine did not start: "
                    f"{type(exc).__name__}: {str(exc)[:160]}"
                )
                continue
            try:
                facts = engine_startup_facts(llm)
                vc = llm.llm_engine.vllm_config
                plan = ge.plan_serving(
                    model_id,
                    max_model_len=facts.max_model_len,
                    limit_mm_per_prompt=facts.limits,
                    max_num_batched_tokens=facts.max_num_batched_tokens,
                    max_num_seqs=facts.max_num_seqs,
                    dtype=str(vc.model_config.dtype).removeprefix("torch."),  # KV bytes/value
                )
                ours = plan.capacity(
                    kv_cache_memory_bytes=kv_bytes,
                    block_size=facts.block_size,
                    async_scheduling=vc.scheduler_config.async_scheduling,
                    hybrid_kv_cache_manager=facts.hybrid_kv_cache_manager,
                    device=facts.device.upper(),
                )
                checks = [
                    ("KV line", ours.log_line(), kv_line_of(facts)),
                    ("encoder cache", plan.encoder_cache_size, facts.encoder_cache_size),
                    ("encoder budget", plan.encoder_compute_budget, facts.encoder_compute_budget),
                    ("max tokens/item", plan.max_tokens_per_item, facts.max_tokens_per_item),
                ]
                took = time.perf_counter() - start
                lines.append(f"  {model_id}: up in {took:.0f} s on {facts.device}")
                for name, want, got in checks:
                    ok = want == got
                    failures += not ok
                    lines.append(
                        f"    {name:16s} {'ok ' if ok else 'BAD'} ours {want} | vLLM {got}"
                    )
            finally:
                llm.llm_engine.engine_core.shutdown()
                del llm
    return lines, failures


def _num(value: float | None, scale: float = 1.0) -> str:
    """A timing, or "—" where the engine could not measure it."""
    return "      —" if value is None else f"{value * scale:7.1f}"


def _receipt():
    """A printed receipt drawn here (no file to ship): its total is the answer to read."""
    from PIL import Image, ImageDraw, ImageFont

    lines = [
        "CORNER CAFE",
        "12 Market Street",
        "",
        "Flat white        3.40",
        "Croissant         2.75",
        "Orange juice      4.10",
        "Granola bowl      6.95",
        "Sparkling water   2.20",
        "",
        "Subtotal         19.40",
        "VAT 21%           4.07",
        "TOTAL            23.47",
    ]
    page = Image.new("RGB", (720, 1100), "white")
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(size=34)
    for i, text in enumerate(lines):
        draw.text((60, 60 + i * 62), text, fill="black", font=font)
    return page


def _payoff_cases(bundle) -> dict[str, dict]:
    """Every :data:`gemma_explore.course.real_answers.CASES` case this checkpoint can take:
    the messages and the generate options for each."""
    import gemma_explore as ge
    from gemma_explore.samples import sample_speech, sample_video

    question = "What is the TOTAL on this receipt? Answer with the amount only."
    receipt = _receipt()
    cases: dict[str, dict] = {}
    if bundle.spec.image.budgets:
        for budget in (70, 280, 1120):
            content = [{"type": "image", "image": receipt}, {"type": "text", "text": question}]
            cases[f"receipt@{budget}"] = {
                "messages": [{"role": "user", "content": content}],
                "max_soft_tokens": budget,
            }
    if bundle.spec.has_video:
        when = "When does the ball reach the top of the frame? Answer with a mm:ss time."
        video = sample_video()
        plan = ge.plan_video(video, family=bundle.spec)
        frames = [{"type": "image", "image": f} for f in plan.frames]
        cases["video-with-timestamps"] = {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "video", "video": video}, {"type": "text", "text": when}],
                }
            ]
        }
        cases["video-as-frames"] = {
            "messages": [{"role": "user", "content": [*frames, {"type": "text", "text": when}]}],
            "max_soft_tokens": bundle.spec.image.video_budget,
        }
    text = bundle.processor.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France? One word."}],
        tokenize=False,
        add_generation_prompt=True,
    )
    bos = bundle.processor.tokenizer.bos_token
    single = text if text.startswith(bos) else bos + text
    cases["single-bos"] = {"messages": single, "template": False}
    cases["double-bos"] = {"messages": bos + single, "template": False}
    if getattr(bundle.model.config, "audio_config", None) is not None:
        speech = [
            {"type": "audio", "audio": sample_speech()},
            {"type": "text", "text": "Transcribe this clip."},
        ]
        cases["speech-transcribed"] = {"messages": [{"role": "user", "content": speech}]}
    return cases


def payoff(names: list[str], device: str) -> tuple[list[str], int]:
    """Ask each real checkpoint the course's cases and record its answers where the
    notebooks read them (gemma_explore/course/recorded/, one JSON per checkpoint)."""
    import datetime

    import torch

    import gemma_explore as ge
    from gemma_explore.course.real_answers import record

    lines, failures = ["", "Real answers for the course (--payoff):"], 0
    gpu = torch.cuda.get_device_name() if device.startswith("cuda") else device
    for name in names:
        bundle = ge.load(name, device=device)
        out: dict[str, dict] = {}
        for case, ask in _payoff_cases(bundle).items():
            messages = ask.pop("messages")
            try:
                gen = bundle.generate(messages, max_new_tokens=48, **ask)
            except Exception as exc:  # one case's failure is reported, the rest still run
                lines.append(f"  {name} {case}: FAILED {type(exc).__name__}: {exc}")
                failures += 1
                continue
            out[case] = {
                "text": gen.text.strip(),
                "prompt_tokens": gen.prompt_tokens,
                "first_token_s": gen.prefill_s,
            }
            lines.append(
                f"  {name} {case}: {gen.prompt_tokens} prompt tokens, first token "
                f"{_num(gen.prefill_s)} s: {gen.text.strip()[:70]!r}"
            )
        when = f"{datetime.date.today().isoformat()} (gemma_explore {ge.__version__})"
        path = record(name, gpu, when, out)
        lines.append(f"  recorded in {path}")
    return lines, failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--real", nargs="*", default=[])
    parser.add_argument("--no-vllm", action="store_true", help="skip the vLLM parity checks")
    parser.add_argument(
        "--released",
        nargs="*",
        default=None,
        help="start vLLM on these released ids' shapes (dummy weights) and compare its "
        "start-up with plan_serving + capacity; no ids: all seven (a GPU day)",
    )
    parser.add_argument("--kv-gib", type=float, default=8.0, help="KV pool for --released")
    parser.add_argument(
        "--encoder-graphs",
        action="store_true",
        help="Gemma 4's encoder CUDA-graph replay against the plan (CUDA only)",
    )
    parser.add_argument(
        "--payoff",
        action="store_true",
        help="ask each --real checkpoint the course's cases (a receipt at budgets 70, 280 and "
        "1120, a video with and without timestamps, one and two <bos>, the speech clip) and "
        "record the answers where the notebooks show them (gemma_explore/course/recorded/)",
    )
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
    from gemma_explore.engines.vllm_processor import vllm_available

    if not args.no_vllm and vllm_available():
        lines, failures = vllm_parity(args.device)
        print("\n".join(lines), flush=True)
        total += failures
    if args.encoder_graphs and vllm_available():
        lines, failures = encoder_graph_replay(args.device)
        print("\n".join(lines), flush=True)
        total += failures
    if args.released is not None and vllm_available():
        from gemma_explore.facts.released import RELEASED_IDS

        ids = args.released or list(RELEASED_IDS)
        lines, failures = released_startup(args.device, ids, kv_gib=args.kv_gib)
        print("\n".join(lines), flush=True)
        total += failures
    if args.payoff and args.real:
        lines, failures = payoff(args.real, args.device)
        print("\n".join(lines), flush=True)
        total += failures
    elif args.payoff:
        print("--payoff needs --real ID (a real checkpoint: the tiny models answer noise)")
    print("GPU check:", "all cases ok" if total == 0 else f"{total} case(s) failed")
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
