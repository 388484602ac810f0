"""gemma_explore: see how Gemma 3n and Gemma 4 turn pictures, sound and video into tokens.

Every entry point, in the order a lesson meets them:

- ``load(model)`` → :class:`Bundle` (real processor + model; ``"tiny-gemma4"`` offline)
- ``plan_image``, ``plan_audio``, ``plan_video`` → plans: token counts and why
- ``layout_prompt(messages, bundle=…)`` → :class:`PromptLayout`: the expanded prompt
- ``check_parity(item, family=…)`` → :class:`ParityReport`: ours vs transformers vs vLLM
- ``show_patch_grid``, ``show_pooled_mask``, ``show_mel``, ``show_video_frames``,
  ``show_layout`` → matplotlib Figures (``save_figure`` for slides)
- ``explore_image``, ``explore_audio``, ``explore_prompt`` → ipywidgets explorers
- ``vision_pooling(bundle, image)`` → :class:`PooledTokens` from the real pooler
- ``inspect_multimodal(bundle, messages)`` → :class:`EncoderReport`: encoder outputs vs placeholders
- ``Bundle.generate(messages)`` → :class:`Generation`
"""

from .families import FAMILIES, get_family
from .inspect import EncoderReport, ItemReport, PooledTokens, inspect_multimodal, vision_pooling
from .layout import NewlineMerge, Placeholder, PromptLayout, Segment, layout_prompt
from .media import MediaError, load_audio, load_image, load_video
from .models.bundle import Bundle, Generation, ModelLoadError, load
from .parity import ParityReport, ParityRow, check_parity
from .plans import AudioPlan, ImagePlan, VideoPlan, plan_audio, plan_image, plan_video
from .prompting import PreparedInputs, prepare_inputs
from .viz.audio import show_mel
from .viz.layout import show_layout
from .viz.patches import show_patch_grid
from .viz.pooling import show_pooled_mask
from .viz.save import save_figure
from .viz.video import show_video_frames
from .widgets import explore_audio, explore_image, explore_prompt

__all__ = [
    "FAMILIES",
    "NewlineMerge",
    "ParityReport",
    "ParityRow",
    "Placeholder",
    "PromptLayout",
    "Segment",
    "check_parity",
    "explore_audio",
    "explore_image",
    "explore_prompt",
    "layout_prompt",
    "AudioPlan",
    "Bundle",
    "EncoderReport",
    "ItemReport",
    "Generation",
    "ImagePlan",
    "MediaError",
    "ModelLoadError",
    "PooledTokens",
    "PreparedInputs",
    "VideoPlan",
    "get_family",
    "inspect_multimodal",
    "load",
    "load_audio",
    "load_image",
    "load_video",
    "plan_audio",
    "plan_image",
    "plan_video",
    "prepare_inputs",
    "save_figure",
    "show_layout",
    "show_mel",
    "show_patch_grid",
    "show_pooled_mask",
    "show_video_frames",
    "vision_pooling",
]
__version__ = "0.1.0"
