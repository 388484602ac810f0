"""Every vLLM fact that changes between releases, one profile per supported release.

The rest of the package asks :func:`vllm_profile` and never writes a version number:
``v0_32.py``, ``v0_33.py`` and ``v0_34.py`` hold each release's defaults, tiers,
refusals, rules, strings, limits and locations, each with its source in that release.

>>> from gemma_explore.vllm_versions import SUPPORTED, vllm_profile
>>> SUPPORTED
('0.32', '0.33', '0.34')
>>> vllm_profile("0.34").label
'vLLM 0.34'
"""

from gemma_explore.vllm_versions.choice import (
    CPU_BUILD,
    PROFILES,
    SUPPORTED,
    installed_vllm,
    newest,
    profile_of,
    vllm_profile,
)
from gemma_explore.vllm_versions.release import BatchTier, VllmProfile

__all__ = [
    "CPU_BUILD",
    "PROFILES",
    "SUPPORTED",
    "BatchTier",
    "VllmProfile",
    "installed_vllm",
    "newest",
    "profile_of",
    "vllm_profile",
]
