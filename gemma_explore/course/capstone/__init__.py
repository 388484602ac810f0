"""The capstone: a workload through vLLM's processor and engine, against your predictions.

``workload.json`` (beside this module) holds eleven requests for one Gemma 4 Unified
engine: images at mixed budgets, three clips, a video, one prompt hand-edited after
expansion, one over ``max_model_len`` and one with an image too many. For each request a
learner predicts how many placeholder tokens of each modality the prompt vLLM runs holds,
or that vLLM refuses it and why; and the engine's encoder cache size. Then
:func:`run_capstone` runs the workload three ways and diffs them:

- **plan**: the package's plans, the prediction key (``vllm_image_tokens``,
  ``vllm_audio_tokens``, ``plan_video``, ``vllm_reexpand``, ``plan_serving``): what vLLM
  should do, computed without vLLM;
- **processor**: the engine's own multimodal processor (``renderer.mm_processor``) on
  each request's prompt, which is what fixes the placeholders;
- **engine**: ``LLM.generate`` with one output token, which also applies the limits of
  the engine (context length, encoder cache) and refuses in its own words.

It runs on a laptop's CPU, on the tiny Unified checkpoint (real processor, random
weights), in a few seconds once the engine is up. (One lesson on the way: a request
budget the engine has not met yet makes vLLM build a new transformers processor, tens of
seconds on a busy laptop; the workload keeps to 70, 140 and the start-up 280.)::

    bundle = ge.load("tiny-gemma4-unified", engine="vllm", **load_workload().engine)
    report = run_capstone(bundle, guesses={"photo-70": {"image": 63}, "encoder_cache": 4096})
    report            # a table: your guess, the plan, the processor, the engine

>>> work = load_workload()
>>> work.family, len(work.requests), work.requests[0].name
('gemma4_unified', 11, 'photo-70')
>>> run_capstone(bundle).agree  # doctest: +SKIP
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gemma_explore.facts.families import FamilySpec, get_family
from gemma_explore.tables import ShownAsTable, Table

__all__ = [
    "WORKLOAD",
    "Capstone",
    "Outcome",
    "CapstoneRequest",
    "CapstoneWorkload",
    "load_workload",
    "predict",
    "requests_for",
    "run_capstone",
    "run_engine",
    "run_processor",
]

WORKLOAD = Path(__file__).resolve().parent / "workload.json"  # shipped with the package


@dataclass(frozen=True)
class CapstoneRequest:
    """One request of the workload, as the JSON writes it."""

    # The row's label in the report, and the key of a learner's guess.
    name: str
    # The user's words; repeated ``repeat`` times (one request is made too long on purpose).
    text: str
    # Images as {"size": [h, w], "seed": n}: synthetic pixels, so the JSON stays small.
    images: tuple[dict, ...] = ()
    # Clips as {"samples": n, "seed": n} at 16 kHz: only the length decides a count.
    clips: tuple[dict, ...] = ()
    # One video, {"frames", "fps", "size", "seed"}, or None.
    video: dict | None = None
    # The request's own image budget (mm_processor_kwargs); None: the engine's start-up one.
    budget: int | None = None
    # A hand edit made to the expanded ids before they are sent (None: sent as rendered).
    edit: str | None = None
    # How many times ``text`` is repeated.
    repeat: int = 1


@dataclass(frozen=True)
class CapstoneWorkload:
    """The requests and the engine they are meant for."""

    family: str  # the family whose engine runs them
    # The values it sets of engine_args (gemma_explore.engines.serve_args), the one function
    # for vLLM's start-up arguments: max_model_len, limit_mm_per_prompt.
    engine: dict
    requests: tuple[CapstoneRequest, ...]  # in the order the report lists them


@dataclass(frozen=True)
class Outcome:
    """What one side says about one request."""

    # modality → placeholder tokens in the prompt vLLM runs (empty when refused).
    tokens: dict[str, int] = field(default_factory=dict)
    # None, or why it is refused: "limit_mm_per_prompt", "max_model_len", "other".
    refused: str | None = None
    # vLLM's own words when it refused (empty for the plan).
    said: str = ""

    def label(self) -> str:
        if self.refused:
            return f"refused: {self.refused}"
        return ", ".join(f"{m} {n}" for m, n in sorted(self.tokens.items())) or "no media"


def load_workload(path: str | Path | None = None) -> CapstoneWorkload:
    """The capstone's workload (``workload.json``, or your own file at ``path``)."""
    data = json.loads(Path(path or WORKLOAD).read_text(encoding="utf-8"))
    requests = tuple(
        CapstoneRequest(
            name=r["name"],
            text=r.get("text", ""),
            images=tuple(r.get("images", ())),
            clips=tuple(r.get("clips", ())),
            video=r.get("video"),
            budget=r.get("budget"),
            edit=r.get("edit"),
            repeat=int(r.get("repeat", 1)),
        )
        for r in data["requests"]
    )
    return CapstoneWorkload(data["family"], dict(data["engine"]), requests)


# ---- the media, and the request each side sees --------------------------------------------


def _media(request: CapstoneRequest) -> dict[str, list]:
    import numpy as np
    from PIL import Image

    images = [
        Image.fromarray(np.random.RandomState(i["seed"]).randint(0, 255, (*i["size"], 3), np.uint8))
        for i in request.images
    ]
    audios = []
    for c in request.clips:
        t = np.arange(c["samples"]) / 16_000
        noise = np.random.RandomState(c["seed"]).randn(t.size) * 0.05
        audios.append(((0.3 * np.sin(2 * np.pi * 330 * t) + noise).astype(np.float32), 16_000))
    videos = []
    if request.video:
        v = request.video
        shape = (v["frames"], *v["size"], 3)
        videos.append((np.random.RandomState(v["seed"]).randint(0, 255, shape, np.uint8), v["fps"]))
    return {"images": images, "audios": audios, "videos": videos}


def _prepared(request: CapstoneRequest, bundle: Any) -> Any:
    from gemma_explore.processing.inputs import prepare_inputs

    return prepare_inputs(
        request.text * request.repeat,
        bundle=bundle,
        max_soft_tokens=request.budget,
        **_media(request),
    )


def _edited(spec: FamilySpec, ids: list[int]) -> list[int]:
    """The one hand edit the workload knows: the first ``<|image|>`` of a run removed."""
    k = ids.index(spec.id_of(spec.image_token))
    return ids[:k] + ids[k + 1 :]


def _vllm_request(request: CapstoneRequest, bundle: Any) -> dict[str, Any]:
    """What ``LLM.generate`` is handed for ``request``: the rendered prompt (as text, or as
    the edited ids), the media, and the request's own budget."""
    from gemma_explore.engines.vllm import vllm_request
    from gemma_explore.engines.vllm_processor import vllm_mm_data

    prepared = _prepared(request, bundle)
    if request.edit is None:
        return vllm_request(prepared)
    out: dict[str, Any] = {
        "prompt_token_ids": _edited(bundle.spec, list(prepared.input_ids)),
        "multi_modal_data": vllm_mm_data(prepared),
    }
    if prepared.request_kwargs:
        out["mm_processor_kwargs"] = dict(prepared.request_kwargs)
    return out


def _counts(spec: FamilySpec, ids: Any) -> dict[str, int]:
    ids = list(ids)
    found = {m: ids.count(spec.id_of(t)) for m, t in spec.placeholder_tokens.items()}
    return {m: n for m, n in found.items() if n}


def _why(error: BaseException) -> str:
    said = str(error)
    if "At most" in said and "may be provided in one prompt" in said:
        return "limit_mm_per_prompt"
    if "maximum context length" in said:
        return "max_model_len"
    return "other"


# ---- the three sides ------------------------------------------------------------------------


def _image_count(spec: FamilySpec, image: dict, budget: int) -> int:
    from gemma_explore.plans.vllm import vllm_image_tokens

    return vllm_image_tokens(*image["size"], max_soft_tokens=budget, family=spec)


def _planned(
    request: CapstoneRequest, work: CapstoneWorkload, bundle: Any, startup_budget: int
) -> Outcome:
    """The plans' prediction for one request: no vLLM, no engine."""
    from gemma_explore.plans.video import plan_video
    from gemma_explore.plans.vllm import vllm_audio_tokens, vllm_reexpand

    spec = get_family(work.family)
    limits = work.engine["limit_mm_per_prompt"]
    given = {
        "image": len(request.images),
        "audio": len(request.clips),
        "video": int(bool(request.video)),
    }
    if any(n > limits.get(m, 999) for m, n in given.items()):
        return Outcome(refused="limit_mm_per_prompt")
    budget = request.budget or startup_budget
    if not any(given.values()):  # text only: the prompt's own length decides
        length = len(_prepared(request, bundle).input_ids)
        return (
            Outcome(refused="max_model_len") if length > work.engine["max_model_len"] else Outcome()
        )
    images = [_image_count(spec, i, budget) for i in request.images]
    if request.edit is not None:  # vLLM writes a fresh run and keeps the rest as text
        ids = _edited(spec, list(_prepared(request, bundle).input_ids))
        return Outcome(_counts(spec, vllm_reexpand(spec, ids, {"image": images}).ids))
    tokens = {"image": sum(images)}
    tokens["audio"] = sum(vllm_audio_tokens(c["samples"], family=spec) for c in request.clips)
    if request.video:
        v = request.video
        plan = plan_video(v["frames"], fps=v["fps"], frame_size=tuple(v["size"]), family=spec)
        tokens["video"] = plan.num_soft_tokens
    return Outcome({m: n for m, n in tokens.items() if n})


def predict(
    work: CapstoneWorkload, bundle: Any, *, max_num_batched_tokens: int, startup_budget: int
) -> tuple[dict[str, Outcome], int]:
    """The prediction key: each request's outcome and the encoder cache size, from the
    package's plans (``plan_serving`` for the cache) for an engine with the workload's
    arguments, ``max_num_batched_tokens`` and start-up budget."""
    from gemma_explore.serving.plan import plan_serving

    outcomes = {r.name: _planned(r, work, bundle, startup_budget) for r in work.requests}
    plan = plan_serving(
        bundle,
        max_model_len=work.engine["max_model_len"],
        limit_mm_per_prompt=work.engine["limit_mm_per_prompt"],
        max_num_batched_tokens=max_num_batched_tokens,
        max_soft_tokens=startup_budget,
        dtype="float32",
    )
    return outcomes, plan.encoder_cache_size


def requests_for(work: CapstoneWorkload, bundle: Any) -> dict[str, dict[str, Any]]:
    """name → what ``LLM.generate`` is handed for each request, built once (the processor
    and the engine get the very same dict)."""
    return {r.name: _vllm_request(r, bundle) for r in work.requests}


def run_processor(
    work: CapstoneWorkload, llm: Any, bundle: Any, sent: dict[str, dict[str, Any]] | None = None
) -> dict[str, Outcome]:
    """Each request through the engine's own multimodal processor (``renderer.mm_processor``):
    the placeholders it writes, or what it raises. It does not check the context length."""
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    processor = llm.llm_engine.renderer.mm_processor
    tokenizer = processor.info.ctx.tokenizer
    out: dict[str, Outcome] = {}
    for request in work.requests:
        one = (sent or {}).get(request.name) or _vllm_request(request, bundle)
        ids = one.get("prompt_token_ids") or tokenizer.encode(
            one["prompt"], add_special_tokens=False
        )
        try:
            items = processor.info.parse_mm_data(one.get("multi_modal_data", {}))
            made = processor.apply(
                ProcessorInputs(
                    list(ids), items, hf_processor_mm_kwargs=one.get("mm_processor_kwargs", {})
                ),
                TimingContext(enabled=False),
            )
        except Exception as error:  # noqa: BLE001 - vLLM's own refusal is the result
            out[request.name] = Outcome(refused=_why(error), said=str(error)[:300])
            continue
        out[request.name] = Outcome(_counts(bundle.spec, made["prompt_token_ids"]))
    return out


def run_engine(
    work: CapstoneWorkload, llm: Any, bundle: Any, sent: dict[str, dict[str, Any]] | None = None
) -> tuple[dict[str, Outcome], int]:
    """Each request through ``LLM.generate`` (one greedy token): the prompt the engine ran,
    or its refusal in its own words; and the encoder cache size the scheduler holds."""
    from vllm import SamplingParams

    params = SamplingParams(max_tokens=1, temperature=0.0)
    out: dict[str, Outcome] = {}
    for request in work.requests:
        try:
            one = (sent or {}).get(request.name) or _vllm_request(request, bundle)
            (done,) = llm.generate([one], params, use_tqdm=False)
        except Exception as error:  # noqa: BLE001 - vLLM's own refusal is the result
            out[request.name] = Outcome(refused=_why(error), said=str(error)[:300])
            continue
        out[request.name] = Outcome(_counts(bundle.spec, done.prompt_token_ids))
    core = llm.llm_engine.engine_core.engine_core  # in process: the CPU default
    return out, int(core.scheduler.encoder_cache_manager.cache_size)


# ---- the diff ----------------------------------------------------------------------------


def _matches(guess: Any, outcome: Outcome) -> bool:
    """A learner's guess against what the engine did: a dict of counts, or "refused"
    (optionally "refused: <reason>")."""
    if isinstance(guess, str):
        said = guess.strip().lower()
        return outcome.refused is not None and (
            said == "refused" or said == f"refused: {outcome.refused}"
        )
    return (
        isinstance(guess, dict)
        and outcome.refused is None
        and {m: n for m, n in guess.items() if n} == outcome.tokens
    )


@dataclass(frozen=True)
class Capstone(ShownAsTable):
    """The workload three ways, and the learner's guesses beside them."""

    names: tuple[str, ...]  # the requests, in the workload's order
    guesses: dict[str, Any]  # the learner's: name → counts or "refused…"; "encoder_cache"
    plan: dict[str, Outcome]  # the package's plans: the prediction key
    processor: dict[str, Outcome]  # vLLM's processor
    engine: dict[str, Outcome]  # vLLM's engine: what really happened
    cache: tuple[int, int]  # encoder cache size: (plan, engine)

    def disagreements(self) -> tuple[str, ...]:
        """Where the plans and the engine part (empty: the prediction key held)."""
        out = [
            n
            for n in self.names
            if self.plan[n] != Outcome(self.engine[n].tokens, self.engine[n].refused)
        ]
        return (*out, *(["encoder cache"] if self.cache[0] != self.cache[1] else []))

    @property
    def agree(self) -> bool:
        return not self.disagreements()

    def score(self) -> tuple[int, int]:
        """(right, guessed): the learner's guesses held to the engine."""
        right = sum(
            _matches(g, self.engine[n]) for n, g in self.guesses.items() if n in self.engine
        )
        right += self.guesses.get("encoder_cache") == self.cache[1]
        return right, len(self.guesses)

    def table(self) -> Table:
        rows = [
            (
                n,
                self.guesses.get(n, "—"),
                self.plan[n].label(),
                self.processor[n].label(),
                self.engine[n].label(),
            )
            for n in self.names
        ]
        rows.append(
            (
                "encoder cache",
                self.guesses.get("encoder_cache", "—"),
                *self.cache[:1],
                "—",
                self.cache[1],
            )
        )
        right, asked = self.score()
        return Table(
            ("request", "your guess", "plan", "vLLM processor", "vLLM engine"),
            tuple(rows),
            title=f"Capstone: {right}/{asked} of your guesses right; plans vs engine: "
            + ("all agree" if self.agree else f"part at {', '.join(self.disagreements())}"),
            flagged=tuple(i for i, n in enumerate(self.names) if n in self.disagreements()),
        )

    def __repr__(self) -> str:
        return self.table().text()


def run_capstone(
    bundle: Any, guesses: dict[str, Any] | None = None, workload: CapstoneWorkload | None = None
) -> Capstone:
    """Run the workload on ``bundle``'s vLLM engine (``ge.load(..., engine="vllm",
    **workload.engine)``: the one
    :func:`~gemma_explore.engines.serve_args.engine_args` with the workload's values) and diff plans, processor and engine, with ``guesses``."""
    work = workload or load_workload()
    if bundle.family != work.family:
        raise ValueError(f"The workload is for {work.family}; this engine serves {bundle.family}.")
    llm = bundle.engine.llm
    batched = int(llm.llm_engine.vllm_config.scheduler_config.max_num_batched_tokens)
    plan, cache = predict(
        work, bundle, max_num_batched_tokens=batched, startup_budget=bundle.engine.startup_budget
    )
    sent = requests_for(work, bundle)
    processor = run_processor(work, llm, bundle, sent)
    engine, engine_cache = run_engine(work, llm, bundle, sent)
    names = tuple(r.name for r in work.requests)
    return Capstone(names, dict(guesses or {}), plan, processor, engine, (cache, engine_cache))
