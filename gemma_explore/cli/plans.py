"""``gemma-explore plan``: how each file becomes tokens, as text or JSON."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from gemma_explore.cli.common import _BUDGET_HELP, _FAMILY_HELP, _fail, _family, _progress, in_flags
from gemma_explore.facts.families import DEFAULT_FAMILY

# The plans' (height, width) pairs: sizes in px, grids of patches or cells, and the px of
# the original one soft token covers.
_HEIGHT_WIDTH = ("_size", "_grid", "token_area")


def _plain(value: Any) -> Any:
    """A plan as JSON-ready data: dataclasses as dicts, tuples as lists, no pixel arrays,
    and every (height, width) pair (``*_size``, ``*_grid``, ``token_area``) as ``{"width":
    …, "height": …}`` (plans hold them as (h, w), the printed tables write W×H: named keys
    can't be read the wrong way round, as the conformance set writes them too)."""
    if dataclasses.is_dataclass(value):
        heavy = {"image", "waveform", "frames", "spec"}  # pixels/samples for figures; facts
        out = {}
        for f in dataclasses.fields(value):
            if f.name in heavy:
                continue
            v = getattr(value, f.name)
            if f.name.endswith(_HEIGHT_WIDTH) and isinstance(v, tuple) and len(v) == 2:
                out[f.name] = {"width": _plain(v[1]), "height": _plain(v[0])}
            else:
                out[f.name] = _plain(v)
        if hasattr(value, "spec"):
            out["family"] = value.spec.name
        return out
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def plan(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="Images, clips or videos.")],
    family: Annotated[str, typer.Option(help=_FAMILY_HELP)] = DEFAULT_FAMILY.name,
    budget: Annotated[
        str | None,
        typer.Option(
            metavar="N|auto",
            help=_BUDGET_HELP[:-1] + ', or "auto": the smallest that does not shrink the image.',
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per file.")] = False,
) -> None:
    """Print how each file becomes tokens, with the steps of the derivation."""
    from gemma_explore.media.headers import kind_of
    from gemma_explore.media.loaders import load_image
    from gemma_explore.plans.audio import plan_audio
    from gemma_explore.plans.image import plan_image
    from gemma_explore.plans.video import plan_video

    budget = _image_budget(budget)
    spec = _family(family, [budget] if budget is not None else None)
    errors = []
    with _progress(total=len(files), desc="planning", unit="file") as bar:
        for path in files:
            kind = kind_of(path)
            try:
                if kind == "image":  # decoded, as the demo does: a truncated file is refused
                    result: Any = plan_image(
                        load_image(path), family=spec.name, max_soft_tokens=budget
                    )
                elif kind == "audio":
                    result = plan_audio(path, family=spec.name)
                elif kind == "video":
                    result = plan_video(path, family=spec.name)
                else:
                    raise ValueError(
                        f"unsupported file type {path.suffix or '(no suffix)'}: give an image, "
                        "a clip (.wav, .flac, .mp3, …) or a video (.mp4, .mov, …)"
                    )
            except ValueError as exc:  # MediaError is a ValueError
                said = str(exc)  # the file named once: the message's own name, or "This file"
                lead = next((w for w in (path.name, "This file") if said.startswith(w)), None)
                errors.append(f"{path}{said[len(lead) :]}" if lead else f"{path}: {said}")
                bar.update()
                continue
            bar.update()
            if as_json:
                typer.echo(json.dumps({"file": str(path), "kind": kind, **_plain(result)}))
            else:
                typer.echo(f"{path}\n{result!r}\n")
    if errors:
        for line in errors[:-1]:
            typer.echo(f"gemma-explore: error: {in_flags(line)}", err=True)
        _fail(errors[-1])


def _image_budget(text: str | None) -> int | str | None:
    """``--budget N`` or ``--budget auto``, said in the flag's words when it is neither."""
    if text is None or text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        _fail(f'--budget takes a budget (70, 140, 280, 560, 1120) or "auto", got {text!r}.')
