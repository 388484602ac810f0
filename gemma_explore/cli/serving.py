"""The serving commands, each by one vLLM release's rules (``--vllm``): ``serve-args``
(the ``vllm serve`` line and its advice), ``explain`` (a vLLM error), ``processor-cache``
and ``admit`` (which requests vLLM accepts)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated, Any

import typer

from gemma_explore.cli.common import (
    _FAMILY_HELP,
    _fail,
    _release,
    _release_json,
    _Vllm,
    in_flags,
    release_line,
)
from gemma_explore.engines.serve_args import (
    ServeFit,
    engine_args,
    fit_warnings,
    lever_lines,
    serve_command,
    serve_fit,
    serving_advice,
    serving_plan_for,
)
from gemma_explore.vllm_versions import VllmProfile


def serve_args(
    model: Annotated[str, typer.Argument(help="A hub id or a local checkpoint folder.")],
    family: Annotated[
        str | None,
        typer.Option(help=_FAMILY_HELP[:-1] + " (default: from the name)."),
    ] = None,
    budget: Annotated[int | None, typer.Option(help="Gemma 4's start-up image budget.")] = None,
    max_model_len: Annotated[int | None, typer.Option(help="Context length to reserve.")] = None,
    images: Annotated[int | None, typer.Option(min=0, help="Images per prompt.")] = None,
    audios: Annotated[int | None, typer.Option(min=0, help="Clips per prompt.")] = None,
    videos: Annotated[int | None, typer.Option(min=0, help="Videos per prompt (Gemma 4).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The engine arguments as JSON.")] = False,
    workshop: Annotated[
        bool,
        typer.Option(
            "--workshop",
            help="Add the workshop flags: --enforce-eager and --gpu-memory-utilization 0.85.",
        ),
    ] = False,
    gpu: Annotated[
        str | None,
        typer.Option(
            help="The GPU: L4, A100 40GB, A100 80GB, H100 80GB, H200, B200 (its `vllm serve` "
            "defaults; else --gpu-memory-gib)."
        ),
    ] = None,
    gpu_memory_gib: Annotated[
        float | None,
        typer.Option(min=1, help="GPU memory per device, when --gpu names none (default 80)."),
    ] = None,
    save: Annotated[
        Path | None,
        typer.Option(
            "--save",
            metavar="DIR",
            help="For a tiny-* model: write it to DIR first, so the printed line runs.",
        ),
    ] = None,
    vllm: _Vllm = None,
) -> None:
    """Print a `vllm serve` command that fits (or its arguments) for a Gemma checkpoint, with
    production advice, by one vLLM release's rules (--vllm); exit 3: fits with a lever."""
    from gemma_explore.serving.kv import GPUS

    release = _release(vllm)
    if gpu is not None and gpu not in GPUS:
        _fail(f"--gpu {gpu}: use one of {', '.join(GPUS)}, or give --gpu-memory-gib instead.")
    model = _servable(model, save)
    _say_when_going_by_name(model)
    reasons: dict[str, str] = {}
    try:
        work = _workload_of(images, audios, videos, budget)
        args = engine_args(
            model,
            family=family,
            workload=work,
            max_soft_tokens=None if work is not None else budget,
            max_model_len=max_model_len,
            reasons=reasons,
            workshop=workshop,
            gpu=gpu,
            gpu_memory_gib=gpu_memory_gib,
            vllm_version=release.version,
        )
        where = dict(gpu=gpu, gpu_memory_gib=gpu_memory_gib, vllm_version=release.version)
        plan = serving_plan_for(args, **where)
        fit = serve_fit(args, plan=plan, **where)
        if fit is not None and fit.args is not None and not fit.fits:  # the lever's plan
            args = fit.args
            plan = serving_plan_for(args, **where)
        advice = serving_advice(args, plan=plan)
        levers = lever_lines(args, plan=plan) if fit is None or fit.fits else []
        warnings = fit_warnings(args, plan=plan)
    except (ValueError, RuntimeError) as exc:  # bad budget, unknown family (ModelLoadError)
        _fail(in_flags(str(exc)))
    _print_serve_args(
        args, reasons, levers, advice, warnings, release=release, as_json=as_json, fit=fit
    )
    if fit is not None and fit.exit_code:
        raise typer.Exit(fit.exit_code)


def _workload_of(
    images: int | None, audios: int | None, videos: int | None, budget: int | None
) -> Any:
    """The workload the flags state (None when no --images, --audios or --videos)."""
    from gemma_explore.serving.recipe import Workload

    if images is None and audios is None and videos is None:
        return None
    return Workload(
        images=images or 0, max_soft_tokens=budget, audio_clips=audios or 0, videos=videos or 0
    )


def _fit_lines(fit: ServeFit | None, model: str) -> list[str]:
    """What serve-args says first when the arguments as asked do not fit: the numbers, then
    the lever it took, or that none fits and the smallest GPU that would."""
    if fit is None or fit.fits:
        return []
    lines = [fit.headline]
    if fit.args is not None:
        return [*lines, f"fits with {fit.lever}: {fit.why}"]
    lines.append(
        "no single lever fits (tensor parallelism over two GPUs, FP8 KV cache, a shorter "
        "--max-model-len, each re-planned): no command printed"
    )
    if fit.smallest_gpu:
        lines.append(
            f"the smallest GPU it fits on as asked: {fit.smallest_gpu} "
            f"(gemma-explore serve-args {model} --gpu {shlex.quote(fit.smallest_gpu)}), or "
            "more of this GPU (below)"
        )
    else:
        lines.append("no GPU in the table fits it as asked: quantize the weights or use more GPUs")
    return lines


def _print_serve_args(
    args: dict[str, Any],
    reasons: dict[str, str],
    levers: list[str],
    advice: dict[str, str],
    warnings: list[str],
    *,
    release: VllmProfile,
    as_json: bool,
    fit: ServeFit | None = None,
) -> None:
    """serve-args' output, always in the same order: whether it fits (only when the
    arguments as asked do not: the numbers, then the lever taken or the smallest GPU), the
    command (runs as printed; none when nothing fits), the release and why, why each
    argument has its value, the levers (the most useful first), then the other advice."""
    said = _fit_lines(fit, str(args["model"]))
    if as_json:
        out: dict[str, Any] = {"args": args if fit is None or fit.args else None}
        out["vllm_release"] = _release_json(release)
        if fit is not None:
            out["fits"] = fit.fits
            if not fit.fits:
                out |= {"fit": said, "lever": fit.lever, "smallest_gpu": fit.smallest_gpu}
        pairs = (
            ("reasons", reasons),
            ("levers", levers),
            ("advice", advice),
            ("warnings", warnings),
        )
        for key, value in pairs:
            if value:
                out[key] = value
        typer.echo(json.dumps(out, indent=2))
        return
    for line in said:  # first: it does not fit as asked, and what was done about it
        typer.echo(f"# {line}")
    if fit is not None and fit.args is None:  # no command: the release, and more GPUs
        typer.echo(f"# {release_line(release)}")
        for flag, why in advice.items():
            if flag.startswith("--tensor-parallel-size"):
                typer.echo(f"# consider {flag}: {why}")
        return
    for line in warnings:  # on stderr, first: the command below would serve nothing of it
        typer.echo(f"# warning: {line}", err=True)
    if "mm_processor_kwargs" in args:
        # A server flag, not an engine argument: without it `vllm serve` answers 400 to a
        # request's own mm_processor_kwargs (its image budget). It trusts the clients.
        args = {**args, "trust_request_mm_kwargs": True}
    # Always the same order: the command, the release, why each argument, then advice.
    typer.echo(serve_command(args))
    typer.echo(f"# {release_line(release)}")
    for key, why in reasons.items():  # the workload recipe: why each argument
        typer.echo(f"# {key}: {why}")
    for line in levers:  # the most useful lever first, before the other advice
        typer.echo(f"# lever: {line}")
    for flag, why in advice.items():
        typer.echo(f"# consider {flag}: {why}")


def explain(
    error: Annotated[str, typer.Argument(help="vLLM's error or log line, pasted whole.")],
    model: Annotated[
        str | None,
        typer.Option(help="A hub id or checkpoint folder: the answer uses its serving plan."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The match and answer as JSON.")] = False,
    vllm: _Vllm = None,
) -> None:
    """Say what a vLLM error means and which value to set, by one vLLM release's messages
    (--vllm; docs/vllm_errors.md lists every message it knows)."""
    from gemma_explore.serving.plan import plan_serving
    from gemma_explore.serving.vllm_errors import explain as explain_error
    from gemma_explore.serving.vllm_errors import general_hint

    release = _release(vllm)
    try:
        plan = None if model is None else plan_serving(model, vllm_version=release.version)
    except (ValueError, RuntimeError) as exc:  # a model that cannot be read
        _fail(str(exc))
    try:
        found = explain_error(error, plan=plan, vllm_version=release.version)
    except ValueError as exc:  # no vLLM message matches
        hint = general_hint(error)  # no vLLM message, but a known one (CUDA's out of memory)
        if hint is None:
            _fail(str(exc))
        if as_json:
            out = {"name": hint.name, "cause": hint.cause, "answer": hint.answer}
            typer.echo(json.dumps(out | {"vllm_message": False}, indent=2))
        else:
            typer.echo(hint.text())
        return
    if as_json:
        out = {"name": found.error.name, "fields": found.fields, "answer": found.answer}
        out |= {"cause": found.error.cause, "model": found.model}
        typer.echo(json.dumps(out | {"vllm_release": _release_json(release)}, indent=2))
        return
    typer.echo(release_line(release))
    typer.echo(found.text())


def processor_cache_command(
    model: Annotated[
        str, typer.Argument(help="A hub id, checkpoint folder, or family (gemma3n, gemma4, …).")
    ],
    dtype: Annotated[str | None, typer.Option(help="float32, bfloat16 or float16.")] = None,
    vllm: _Vllm = None,
) -> None:
    """What vLLM's --mm-processor-cache-gb holds per item, how many fit per GiB, and whether
    the profiling dummy fits, by one vLLM release (--vllm)."""
    from gemma_explore.facts.families import FAMILIES
    from gemma_explore.serving.model import serving_model
    from gemma_explore.serving.processor_cache import processor_cache_table

    release = _release(vllm)
    if dtype is not None and dtype not in ("float32", "bfloat16", "float16"):
        _fail(f"--dtype {dtype}: use float32, bfloat16 or float16.")
    try:
        source = model if model in FAMILIES else serving_model(model)
        table = processor_cache_table(source, dtype=dtype, vllm_version=release.version)
        typer.echo(release_line(release))
        typer.echo(table)
    except (ValueError, RuntimeError) as exc:
        _fail(str(exc))


def admit_command(
    model: Annotated[str, typer.Argument(help="A hub id, tiny name or checkpoint folder.")],
    requests: Annotated[
        Path,
        typer.Argument(
            help='JSON Lines, one request a line, e.g. {"images": [[768, 1024]], '
            '"max_tokens": 256}.'
        ),
    ],
    max_model_len: Annotated[
        int | None, typer.Option(min=1, help="The engine's max_model_len (default 8192).")
    ] = None,
    serve: Annotated[
        bool,
        typer.Option(
            "--serve/--llm", help="vllm serve's HTTP checks first (default), or LLM(...)'s."
        ),
    ] = True,
    trust_request_mm_kwargs: Annotated[
        bool,
        typer.Option("--trust-request-mm-kwargs", help="The server was started with this flag."),
    ] = False,
    vllm: _Vllm = None,
) -> None:
    """Which requests vLLM accepts, refuses (with its message) or changes without a word,
    by one vLLM release's checks (--vllm)."""
    from gemma_explore.serving.admission import admit_jsonl_text
    from gemma_explore.serving.plan import plan_serving

    release = _release(vllm)
    if not requests.is_file():
        _fail(f"{requests}: no such file. Give a JSON Lines file, one request a line.")
    try:
        length = {"max_model_len": max_model_len} if max_model_len else {}
        plan = plan_serving(model, vllm_version=release.version, **length)
        lines = requests.read_text(encoding="utf-8").splitlines()
        entry = "serve" if serve else "LLM"
        trusted = trust_request_mm_kwargs
        text = admit_jsonl_text(plan, lines, entry_point=entry, trust_request_mm_kwargs=trusted)
        typer.echo(release_line(release))
        typer.echo(text)
    except (ValueError, RuntimeError) as exc:
        _fail(in_flags(str(exc)))


def _servable(model: str, save: Path | None) -> str:
    """A name `vllm serve` can open: a tiny model exists only inside this package, so it is
    saved to ``--save DIR`` first (and the command names that folder)."""
    from gemma_explore.models.tiny import TINY_NAMES

    if model not in TINY_NAMES:
        return model
    if save is None:
        _fail(
            f"{model} is built inside gemma_explore, so `vllm serve {model}` would find no "
            f"checkpoint: add --save DIR to write it to a folder and print the command for it."
        )
    from gemma_explore.engines.load import load

    load(model, device="cpu").save_pretrained(save)
    return str(save)


def _say_when_going_by_name(model: str) -> None:
    """Say so (on stderr) when no config is read: the arguments then follow the name only."""
    import difflib

    from gemma_explore.facts.released import BASE_IDS, RELEASED_IDS, is_released

    if Path(model).is_dir() or is_released(model):
        return
    from gemma_explore.models.checkpoints import cached_file_of

    if cached_file_of(model, "config.json") is not None:
        return
    close = difflib.get_close_matches(model, (*RELEASED_IDS, *BASE_IDS), n=1, cutoff=0.8)
    hint = f" Did you mean {close[0]}?" if close else ""
    typer.echo(
        f"# note: no config read for {model} (not a folder, not a released id, not in the "
        f"local Hugging Face cache): these arguments go by its name alone.{hint}",
        err=True,
    )
