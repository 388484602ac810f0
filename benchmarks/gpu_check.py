"""GPU check: both tiny bundles end to end on CUDA through the transformers engine.

    python benchmarks/gpu_check.py [--device cuda] [--real PATH_OR_HUB_ID ...] [--no-vllm]

Runs image, audio, video (Gemma 4) and mixed prompts, checks every placeholder count
against the plans and the encoder report, and prints timings. With --real it also
runs the given checkpoints (folders or hub ids, bf16). Finishes in well under 5
minutes on one GPU; on a machine without CUDA use --device cpu for a dry run.

Then, where vLLM is installed (CUDA build, or the CPU build with --device cpu), it holds
both stacks to the same numbers, as ``tests/vllm_engine/test_parity.py`` does: each tiny
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
folder, ``load_format="dummy"``, bf16, a fixed KV pool) and compares its start-up line by
line with ``plan_serving`` + ``capacity``, and its weight memory ("Model loading took X
GiB" on a GPU) with ``vllm_loaded_weights`` (all seven when no id is given; the 26B-A4B
and 31B need a large GPU; a model that does not fit is skipped with a line saying so). On
CUDA a second start per model with ``gpu_memory_utilization`` 0.9 prints vLLM's memory
profile: the activation peak ("torch peak memory increase") the plan cannot compute.
``--released-only`` skips the tiny bundles and the parity checks. The CPU dry run:

    flock /work/logs/s3/engine.lock python benchmarks/gpu_check.py --device cpu \
        --released-only --released google/gemma-3n-E2B-it --kv-gib 1 --max-model-len 2048
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
    from gemma_explore.engines.serve_args import CPU_KV_CACHE_BYTES
    from gemma_explore.models.tiny import tiny_name
    from tests.vllm_engine.conftest import LIMITS
    from tests.vllm_engine.parity import CASES, checks, media_for, run_both

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
# on CPU with each release's own functions (REPLAY_CASES there).
ENCODER_GRAPH_CASES = [[280, 280], [140], [140, 140], [560]]


def encoder_graph_replay(device: str) -> tuple[list[str], int]:
    """Gemma 4's encoder on vLLM's CUDA-graph path (``cudagraph_mm_encoder``): per case,
    what ``plan_encoder_replay`` says the installed vLLM does, and what the engine does: its
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
    from tests.vllm_engine.facts import capture_mm_embeddings, fresh, model_runner

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
                    graphs=graphs,  # the installed vLLM's: the engine's release
                    valid_tokens=[e.shape[0] for e in eager],
                )
                said = (
                    "right rows"
                    if plan.ok
                    else "no graph or copy fails"
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
                    f"  budgets {budgets}: plan (vLLM {plan.vllm_version}) says {said}; engine: {got} "
                    f"[{'agree' if agree else 'DISAGREE'}] stats {before} → {after}"
                )
        finally:
            llm.llm_engine.engine_core.shutdown()
    return lines, failures


# The loggers whose lines gpu_check reads ("vllm" + these module names).
_LOGGERS = (
    "",
    ".v1.core.kv_cache_utils",  # "KV cache size: … tokens"
    ".v1.worker.gpu_worker",  # "Available KV cache memory", the DEBUG memory profile
    ".v1.worker.gpu_model_runner",  # "Model loading took X GiB"
)


class _Lines:
    """Keeps the messages vLLM logs (its "vllm" logger) while an in-process engine starts;
    ``debug=True`` also lowers that logger to DEBUG, where the GPU worker prints its memory
    profile ("torch peak memory increase: … GiB")."""

    def __init__(self, debug: bool = False) -> None:
        import logging

        self.lines: list[str] = []
        # vLLM may re-run its dictConfig at engine start, which replaces the "vllm"
        # logger's handlers; the module loggers that log these lines keep theirs.
        self.loggers = [logging.getLogger(f"vllm{name}") for name in _LOGGERS]
        self.levels = [x.level for x in self.loggers]
        self.debug = debug
        outer = self

        class _Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                outer.lines.append(record.getMessage())

        self.handler = _Keep(level=logging.DEBUG if debug else logging.INFO)

    def __enter__(self) -> _Lines:
        import logging

        for logger in self.loggers:
            logger.addHandler(self.handler)
            if self.debug:
                logger.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *_exc: object) -> None:
        for logger, level in zip(self.loggers, self.levels, strict=True):
            logger.removeHandler(self.handler)
            logger.setLevel(level)

    def gib(self, pattern: str) -> float | None:
        """The first GiB figure logged after ``pattern`` (a regex), or None."""
        import re

        for line in self.lines:
            found = re.search(pattern + r"\s*([\d.]+)\s*GiB", line)
            if found:
                return float(found.group(1))
        return None


def _released_folder(model_id: str, tmp: str) -> tuple[Path, str, bool]:
    """A config-only folder (released shapes, the family's processor files at released
    settings), its family and whether it has an audio tower; ``model_id`` may be a folder."""
    import gemma_explore as ge
    from gemma_explore.facts.released import is_released, released_config

    folder = Path(model_id)
    if is_released(model_id):
        folder = Path(tmp)
        released_config(model_id).save_pretrained(folder)
        ge.load(model_id, weights=False).processor.save_pretrained(folder)
    bundle = ge.load(str(folder), weights=False)
    return folder, bundle.family, getattr(bundle.model.config, "audio_config", None) is not None


def _room(device: str, need: int) -> str | None:
    """Why ``need`` bytes do not fit on ``device`` now (None: they fit)."""
    import torch

    if device.startswith("cuda"):
        free = torch.cuda.mem_get_info()[0]
    else:
        with open("/proc/meminfo") as meminfo:
            free = next(int(x.split()[1]) * 1024 for x in meminfo if x.startswith("MemAvailable"))
    if need > free:
        return f"needs ~{need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free on {device}"
    return None


def _held_bytes(model) -> int:
    """Every tensor the loaded model holds (parameters, buffers, tensor attributes such
    as the per-layer-input staging tensor), each storage once."""
    import torch

    seen: dict[int, int] = {}
    values = [*model.parameters(), *model.buffers()]
    values += [v for m in model.modules() for v in vars(m).values()]
    for t in values:
        if isinstance(t, torch.Tensor) and t.device.type != "meta":
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    return sum(seen.values())


def released_startup(
    device: str,
    ids: list[str],
    *,
    kv_gib: float = 8.0,
    max_model_len: int = 8192,
    dtype: str = "bfloat16",
) -> tuple[list[str], int]:
    """Start vLLM on each released checkpoint's *shapes* and compare its start-up with ours.

    No weights are needed: a config-only folder (``released_config(id)`` + the family's
    processor files at released settings) is started with ``load_format="dummy"`` (vLLM
    fills random weights), ``dtype`` (bfloat16: the CPU build needs AVX512-BF16 for it)
    and a fixed ``kv_cache_memory_bytes``, so the KV pool is known exactly. Then:

    * the weights: vLLM's "Model loading took X GiB" (GPU; the CPU runner logs none, so
      there the bytes the loaded model holds) against ``vllm_loaded_weights`` (2 %);
    * the engine's KV line, encoder budget and cache and per-item maxima against
      ``plan_serving`` + ``ServingPlan.capacity``, line by line;
    * on CUDA, the activation peak: a second start with ``gpu_memory_utilization`` (no
      fixed KV) runs vLLM's memory profile; its "torch peak memory increase" and
      "Available KV cache memory" are printed (:func:`_activation_peak`).

    An id that does not fit (weights + KV + 2 GiB) is reported and skipped, not failed.
    """
    import tempfile

    import vllm  # noqa: F401 - configures its "vllm" logger first (_Lines' handler survives)

    from gemma_explore.engines.vllm import start_vllm
    from gemma_explore.serving.model import serving_model
    from gemma_explore.serving.weights import vllm_loaded_weights

    kv_bytes = int(kv_gib * 2**30)
    lines = [f"vLLM start-up on released shapes ({kv_gib:g} GiB KV, dummy weights, {dtype}):"]
    failures = 0
    for model_id in ids:
        with tempfile.TemporaryDirectory(prefix="gpu_check_released_") as tmp:
            folder, family, has_audio = _released_folder(model_id, tmp)
            model = serving_model(str(folder))
            need = vllm_loaded_weights(model, max_num_batched_tokens=8192).bytes
            why = _room(device, need + kv_bytes + (2 << 30))
            if why:
                lines.append(f"  {model_id}: skipped ({why})")
                continue
            seen: dict = {}
            if not device.startswith("cuda"):
                # The CPU build logs no weight memory and then repacks the weights for
                # oneDNN (a copy of every embedding): read them as loaded, skip the repack.
                from benchmarks.bench_cpu_engine import watch_loading

                watch_loading(seen)
            start = time.perf_counter()
            try:
                with _Lines() as log:
                    llm = start_vllm(
                        str(folder),
                        family=family,
                        has_audio=has_audio,
                        in_process=True,
                        load_format="dummy",
                        dtype=dtype,
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
            took = time.perf_counter() - start
            try:
                rows, bad = _released_checks(
                    llm, model, log, kv_bytes, took, seen.get("held"), label=model_id
                )
            finally:
                llm.llm_engine.engine_core.shutdown()
                del llm
            lines += rows
            failures += bad
            if device.startswith("cuda"):
                lines += _activation_peak(folder, family, has_audio, dtype, max_model_len)
            else:
                lines.append(
                    "    activation peak  unknown on CPU (with a fixed KV size the CPU worker "
                    "runs no profile); on a GPU, gpu_check reads vLLM's memory profile"
                )
    return lines, failures


def _released_checks(
    llm, model, log: _Lines, kv_bytes: int, took: float, held: int | None, *, label: str
):
    """The started engine's numbers against the plan's: weights ("Model loading took" on a
    GPU; on CPU ``held``, the model's tensor bytes as loaded), KV line, encoder."""
    import gemma_explore as ge
    from gemma_explore.serving.weights import vllm_loaded_weights
    from tests.vllm_engine.facts import engine_startup_facts, kv_line_of, model_runner

    facts = engine_startup_facts(llm)
    vc = llm.llm_engine.vllm_config
    dtype = str(vc.model_config.dtype).removeprefix("torch.")
    plan = ge.plan_serving(
        model,
        max_model_len=facts.max_model_len,
        limit_mm_per_prompt=facts.limits,
        max_num_batched_tokens=facts.max_num_batched_tokens,
        max_num_seqs=facts.max_num_seqs,
        dtype=dtype,  # KV bytes per value
    )
    ours = plan.capacity(
        kv_cache_memory_bytes=kv_bytes,
        block_size=facts.block_size,
        async_scheduling=vc.scheduler_config.async_scheduling,
        hybrid_kv_cache_manager=facts.hybrid_kv_cache_manager,
        device=facts.device.upper(),
    )
    weights = vllm_loaded_weights(
        model,
        limit_mm_per_prompt=facts.limits,
        max_num_batched_tokens=facts.max_num_batched_tokens,
        dtype_bytes=4 if dtype == "float32" else 2,
    )
    usage = getattr(model_runner(llm), "model_memory_usage", 0)
    if facts.device == "cuda" and usage:  # what "Model loading took X GiB" prints (info_once)
        seen, source = usage, 'model_memory_usage, "Model loading took"'
    elif held is not None:
        seen, source = held, "tensors the model holds as loaded"
    else:
        seen, source = _held_bytes(model_runner(llm).model), "tensors the loaded model holds"
    off = (seen - weights.bytes) / weights.bytes
    lines = [f"  {label}: up in {took:.0f} s on {facts.device}"]
    checks = [
        ("KV line", ours.log_line(), kv_line_of(facts)),
        ("encoder cache", plan.encoder_cache_size, facts.encoder_cache_size),
        ("encoder budget", plan.encoder_compute_budget, facts.encoder_compute_budget),
        ("max tokens/item", plan.max_tokens_per_item, facts.max_tokens_per_item),
    ]
    failures = 0
    for name, want, got in checks:
        ok = want == got
        failures += not ok
        lines.append(f"    {name:16s} {'ok ' if ok else 'BAD'} ours {want} | vLLM {got}")
    ok = abs(off) <= 0.02
    failures += not ok
    lines.append(
        f"    {'weights':16s} {'ok ' if ok else 'BAD'} ours {weights.gib:.3f} GiB | vLLM "
        f"{seen / 2**30:.3f} GiB ({source}; {100 * off:+.2f} %)"
    )
    return lines, failures


def _activation_peak(folder, family: str, has_audio: bool, dtype: str, max_model_len: int):
    """CUDA only: start once more with ``gpu_memory_utilization`` 0.9 and no fixed KV, so
    vLLM profiles a forward pass at ``max_num_batched_tokens``; print its memory profile
    (DEBUG: "torch peak memory increase", "Total non KV cache memory") and "Available KV
    cache memory" — the activation peak the plan can only guess."""
    from gemma_explore.engines.vllm import start_vllm
    from tests.vllm_engine.facts import engine_core

    try:
        with _Lines(debug=True) as log:
            llm = start_vllm(
                str(folder),
                family=family,
                has_audio=has_audio,
                in_process=True,
                load_format="dummy",
                dtype=dtype,
                max_model_len=max_model_len,
                gpu_memory_utilization=0.9,
            )
        worker = engine_core(llm).model_executor.driver_worker.worker
        available = worker.available_kv_cache_memory_bytes / 2**30  # "Available KV cache memory"
        weights = worker.model_runner.model_memory_usage / 2**30
        llm.llm_engine.engine_core.shutdown()
        del llm
    except Exception as exc:  # noqa: BLE001 - report, go on
        return [f"    activation peak  not measured: {type(exc).__name__}: {str(exc)[:160]}"]
    return [
        f"    activation peak  torch peak increase {log.gib(r'torch peak memory increase:')} GiB; "
        f"non-KV {log.gib(r'Total non KV cache memory:')} GiB; weights {weights:.2f} GiB; "
        f"available KV {available:.2f} GiB (gpu_memory_utilization 0.9)"
    ]


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
        "--max-model-len", type=int, default=8192, help="max_model_len for --released"
    )
    parser.add_argument(
        "--released-only",
        action="store_true",
        help="skip the tiny bundles and the parity checks: only --released",
    )
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
    for name in [] if args.released_only else ["tiny-gemma3n", "tiny-gemma4", *args.real]:
        lines, failures = run(name, args.device)
        print("\n".join(lines), flush=True)
        total += failures
    from gemma_explore.engines.vllm_processor import vllm_available

    if not (args.no_vllm or args.released_only) and vllm_available():
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
        lines, failures = released_startup(
            args.device, ids, kv_gib=args.kv_gib, max_model_len=args.max_model_len
        )
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
