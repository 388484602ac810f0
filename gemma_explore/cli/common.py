"""What every command of ``gemma-explore`` shares: its one error line (``_fail``), the
library's advice written as flags (``in_flags``), the ``--family``, ``--budget`` and
``--vllm`` flags' help and checks, the release line, and the progress bar."""

from __future__ import annotations

import re
import sys
from typing import Annotated, Any, NoReturn

import typer

from gemma_explore.facts.families import DEFAULT_FAMILY, FAMILIES
from gemma_explore.vllm_versions import SUPPORTED, VllmProfile, vllm_profile


def _plain_metavars() -> None:
    """Help writes ``FILE`` and ``--family FAMILY``, not typer 0.29's Python type labels
    (``FILE <list[Path]>``, ``--family <str>``)."""
    from typer import core

    core.TyperArgument.display_type_rich = lambda self, ctx: None  # the name says it
    core.TyperOption.display_type_rich = lambda self, ctx: self.metavar or self.name.upper()


_plain_metavars()


def _fail(message: str) -> NoReturn:
    """One line on stderr saying what to fix, and exit code 2 (bad input)."""
    typer.echo(f"gemma-explore: error: {in_flags(message)}", err=True)
    raise typer.Exit(2)


# The library's messages name Python arguments (``family='gemma4'``, ``videos=0``); on the
# command line the same advice names the flag the user types.
_FLAG_OF = {
    "family": "--family",
    "max_soft_tokens": "--budget",
    "budget": "--budget",
    "images": "--images",
    "audios": "--audios",
    "audio_clips": "--audios",
    "videos": "--videos",
    "max_model_len": "--max-model-len",
    "vllm_version": "--vllm",
}
_ARGUMENT = re.compile(r"\b(" + "|".join(_FLAG_OF) + r")=('?)([\w.\-/]+)\2")


def in_flags(message: str) -> str:
    """A message on one line, its Python arguments written as this command line's flags.

    >>> in_flags("Gemma 3n serves no video: set videos=0. Use family='gemma4'.")
    'Gemma 3n serves no video: set --videos 0. Use --family gemma4.'
    """
    text = " ".join(str(message).split())
    return _ARGUMENT.sub(lambda m: f"{_FLAG_OF[m.group(1)]} {m.group(3)}", text)


_FAMILY_HELP = " or ".join([", ".join(list(FAMILIES)[:-1]), list(FAMILIES)[-1]]) + "."
_BUDGETS = DEFAULT_FAMILY.image.budgets
_BUDGET_HELP = (
    f"{DEFAULT_FAMILY.display_name} image budget: {', '.join(map(str, _BUDGETS[:-1]))} or "
    f"{_BUDGETS[-1]} (default {DEFAULT_FAMILY.image.default_budget})."
)


# The releases are the profiles' (gemma_explore/vllm_versions), never written here.
_VLLM_HELP = (
    f"The vLLM release whose rules apply: {', '.join(SUPPORTED[:-1])} or {SUPPORTED[-1]} "
    f"(default: the installed vLLM, else {SUPPORTED[-1]}; a newer release gets "
    f"{SUPPORTED[-1]}'s rules, said unchecked)."
)
_Vllm = Annotated[str | None, typer.Option("--vllm", metavar="VERSION", help=_VLLM_HELP)]


def _release(version: str | None) -> VllmProfile:
    """The profile of ``--vllm VERSION`` (None: the installed vLLM, else the newest), or
    one line naming ``--vllm`` and the supported releases (exit 2)."""
    try:
        return vllm_profile(version)
    except ValueError:
        _fail(
            f"--vllm {version}: not a vLLM release this package was checked on; use one of "
            f"{', '.join(SUPPORTED)} (a newer one gets {SUPPORTED[-1]}'s rules, unchecked), "
            "or leave --vllm out for the installed vLLM."
        )


def release_line(profile: VllmProfile) -> str:
    """The one line every command that states a vLLM fact prints: which release's rules,
    and why that one (asked with ``--vllm``, installed, or the newest; a release newer
    than the newest profile says its numbers are unchecked).

    >>> from gemma_explore.vllm_versions import vllm_profile, SUPPORTED
    >>> release_line(vllm_profile(SUPPORTED[0])) == f"vLLM {SUPPORTED[0]}'s rules (--vllm {SUPPORTED[0]})"
    True
    """
    return in_flags(f"{profile.label}'s rules ({profile.chosen_because})")


def _release_json(profile: VllmProfile) -> dict[str, str]:
    """The release, for a command's ``--json`` (its key ``vllm_release``): version, label
    and why."""
    return {
        "version": profile.version,
        "label": profile.label,
        "because": in_flags(profile.chosen_because),
    }


def _progress(**kwargs: Any) -> Any:
    from tqdm import tqdm

    return tqdm(file=sys.stderr, disable=None, dynamic_ncols=True, **kwargs)


def _family(name: str, budgets: list[int | str] | None = None, flag: str = "--budget") -> Any:
    """The spec for ``--family NAME``, with ``budgets`` checked against it: every
    problem said in this command line's own flags."""
    from gemma_explore.facts.families import FAMILIES, get_family

    try:
        spec = get_family(name)
    except ValueError:
        _fail(f"--family {name!r} is not a family: use {', '.join(FAMILIES)}.")
    allowed = spec.image.budgets
    for b in budgets or []:
        if b == "auto" and allowed:
            continue  # the plan picks one of them
        if not allowed:
            _fail(
                f"{spec.display_name} has no image budget (every image is "
                f"{spec.image.fixed_soft_tokens} soft tokens): drop {flag}."
            )
        if b not in allowed:
            _fail(
                f"{flag} {b} is not a {spec.display_name} budget: use "
                f"{', '.join(map(str, allowed))} (default {spec.image.default_budget})."
            )
    return spec
