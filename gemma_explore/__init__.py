"""gemma_explore: see how Gemma 3n, Gemma 4 and Gemma 4 Unified turn pictures, sound and
video into tokens.

Every entry point, in the order a lesson meets them (each modality's entry points take
the same inputs: a path, bytes, a file object, a PIL image or array, or ``(wave, rate)``):

- ``load(model)`` → :class:`Bundle` (real processor + model + engine; ``"tiny-gemma4"``,
  ``"tiny-gemma3n"`` and ``"tiny-gemma4-unified"`` offline)
- ``plan_image``, ``plan_audio``, ``plan_video`` → plans: token counts and why
- ``audio_features(clip, family=…)`` → :class:`AudioFeatures`: the real log-mel frames
- ``prepare_inputs(messages, bundle=…)`` → :class:`PreparedInputs`: the real processor's run
- ``layout_prompt(messages, bundle=…)`` → :class:`PromptLayout`: the expanded prompt
- ``check_image_parity``, ``check_audio_parity``, ``check_video_parity`` →
  :class:`ParityReport`: ours vs transformers vs vLLM (``check_parity(item, kind=…)``)
- ``compare_families(image, clip)`` → :class:`FamilyComparison`: one input, three families
- ``vision_pooling(image, bundle=…)`` → :class:`PooledTokens` from the real pooler
- ``inspect_multimodal(messages, bundle=…)`` → :class:`EncoderReport`: encoder outputs vs placeholders
- ``Bundle.generate(messages)`` → :class:`Generation`
- ``plan_serving(bundle, max_model_len=…, limit_mm_per_prompt=…)`` → :class:`ServingPlan`:
  what vLLM reserves at start-up; ``attention_mask(layout, bundle=…)`` → :class:`AttentionMasks`
- ``show_patch_grid(plan)``, ``show_budgets(image)``, ``show_pooled_mask(pooled)``,
  ``show_mel(features)``, ``show_video_frames(plan)``, ``show_layout(layout)``,
  ``show_embedder_grid(plan)`` / ``show_audio_frames(plan)`` (Unified, no encoder),
  ``show_three_way(comparison)``, ``show_serving(plan)``, ``show_attention(masks)`` →
  matplotlib Figures drawn from those results (``save_figure`` for slides); each takes
  ``ax=`` and returns its Figure; ``style("projector")`` draws them for a room (≥ 14 pt)
- ``explore_image``, ``explore_audio``, ``explore_prompt`` → ipywidgets explorers
- ``grade_exercise(guess, exercise=name)`` → :class:`Verdict`: the notebooks' exercises,
  graded against ``answer_key[name]`` (computed here); ``grade_against(guess, exercise=,
  truth=, hint=)`` grades a teacher's own exercise (``check(name, guess, …)`` is its old
  name and order)
- ``size_label((h, w))`` → ``"W×H px (W×H)"``: the one way sizes are written

Modules import downward only (docs/DESIGN.md has the picture); nothing inside the
package imports this file.
"""

from .attention import AttentionMasks, attention_mask
from .bill_results import Bill
from .comparison import FamilyComparison, compare_families
from .dataset_bill import BillRow, bill, bill_file
from .errors import BackendError, MediaError, ModelLoadError
from .exercises import Verdict, answer_key, check, grade_against, grade_exercise
from .families import FAMILIES, get_family
from .features import AudioFeatures, audio_features
from .inspection import (
    EncoderReport,
    ItemReport,
    PooledTokens,
    inspect_multimodal,
    vision_pooling,
)
from .layout import NewlineMerge, Placeholder, PromptLayout, Segment, layout_prompt
from .loading import load
from .media import load_audio, load_image, load_video
from .models.bundle import Bundle
from .parity import (
    ParityReport,
    ParityRow,
    check_audio_parity,
    check_image_parity,
    check_parity,
    check_video_parity,
)
from .plans import AudioPlan, ImagePlan, VideoPlan, plan_audio, plan_image, plan_video
from .prompting import PreparedInputs, prepare_inputs
from .results import Generation
from .serving import ServingPlan, plan_serving
from .sizes import size_label
from .transcription import Transcription, transcription_prompt
from .viz.attention import show_attention
from .viz.audio import show_mel
from .viz.bill import show_bill
from .viz.embedder import show_audio_frames, show_embedder_grid, show_three_way
from .viz.layout import show_layout
from .viz.patches import show_budgets, show_patch_grid
from .viz.pooling import show_pooled_mask
from .viz.save import save_figure
from .viz.serving import show_serving
from .viz.style import style
from .viz.video import show_video_frames
from .widgets import explore_audio, explore_image, explore_prompt

__all__ = [
    "FAMILIES",
    "AttentionMasks",
    "AudioFeatures",
    "AudioPlan",
    "BackendError",
    "Bill",
    "BillRow",
    "Bundle",
    "EncoderReport",
    "FamilyComparison",
    "Generation",
    "ImagePlan",
    "ItemReport",
    "MediaError",
    "ModelLoadError",
    "NewlineMerge",
    "ParityReport",
    "ParityRow",
    "Placeholder",
    "PooledTokens",
    "PreparedInputs",
    "PromptLayout",
    "Segment",
    "ServingPlan",
    "Transcription",
    "Verdict",
    "VideoPlan",
    "answer_key",
    "attention_mask",
    "audio_features",
    "bill",
    "bill_file",
    "check",
    "check_audio_parity",
    "check_image_parity",
    "check_parity",
    "check_video_parity",
    "compare_families",
    "explore_audio",
    "explore_image",
    "explore_prompt",
    "get_family",
    "grade_against",
    "grade_exercise",
    "inspect_multimodal",
    "layout_prompt",
    "load",
    "load_audio",
    "load_image",
    "load_video",
    "plan_audio",
    "plan_image",
    "plan_serving",
    "plan_video",
    "prepare_inputs",
    "save_figure",
    "show_attention",
    "show_audio_frames",
    "show_bill",
    "show_budgets",
    "show_embedder_grid",
    "show_layout",
    "show_mel",
    "show_patch_grid",
    "show_pooled_mask",
    "show_serving",
    "show_three_way",
    "show_video_frames",
    "size_label",
    "style",
    "transcription_prompt",
    "vision_pooling",
]
__version__ = "0.1.0"
