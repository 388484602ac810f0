"""gemma_explore: see how Gemma 3n and Gemma 4 turn pictures, sound and video into tokens.

Every entry point, in the order a lesson meets them:

- ``load(model)`` → :class:`Bundle` (real processor + model; ``"tiny-gemma4"`` offline)
- ``plan_image``, ``plan_audio``, ``plan_video`` → plans: token counts and why
- ``layout_prompt(messages, bundle=…)`` → :class:`PromptLayout`: the expanded prompt
- ``check_parity(item, family=…)`` → :class:`ParityReport`: ours vs transformers vs vLLM
- ``Bundle.generate(messages)`` → :class:`Generation`
"""

from .families import FAMILIES, get_family
from .layout import NewlineMerge, Placeholder, PromptLayout, Segment, layout_prompt
from .media import MediaError, load_audio, load_image, load_video
from .models.bundle import Bundle, Generation, ModelLoadError, load
from .parity import ParityReport, ParityRow, check_parity
from .plans import AudioPlan, ImagePlan, VideoPlan, plan_audio, plan_image, plan_video
from .prompting import PreparedInputs, prepare_inputs

__all__ = [
    "FAMILIES",
    "NewlineMerge",
    "ParityReport",
    "ParityRow",
    "Placeholder",
    "PromptLayout",
    "Segment",
    "check_parity",
    "layout_prompt",
    "AudioPlan",
    "Bundle",
    "Generation",
    "ImagePlan",
    "MediaError",
    "ModelLoadError",
    "PreparedInputs",
    "VideoPlan",
    "get_family",
    "load",
    "load_audio",
    "load_image",
    "load_video",
    "plan_audio",
    "plan_image",
    "plan_video",
    "prepare_inputs",
]
__version__ = "0.1.0"
