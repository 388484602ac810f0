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

from gemma_explore.bill.totals import Bill
from gemma_explore.bill.walk import BillRow, bill, bill_file
from gemma_explore.course.exercises import Verdict, answer_key, check, grade_against, grade_exercise
from gemma_explore.course.widgets import explore_audio, explore_image, explore_prompt
from gemma_explore.engines.load import load
from gemma_explore.errors import BackendError, MediaError, ModelLoadError
from gemma_explore.facts.families import FAMILIES, get_family
from gemma_explore.inside.attention import AttentionMasks, attention_mask
from gemma_explore.inside.towers import (
    EncoderReport,
    ItemReport,
    PooledTokens,
    inspect_multimodal,
    vision_pooling,
)
from gemma_explore.media.loaders import load_audio, load_image, load_video
from gemma_explore.models.bundle import Bundle, Generation
from gemma_explore.parity.checks import (
    ParityReport,
    ParityRow,
    check_audio_parity,
    check_image_parity,
    check_parity,
    check_video_parity,
)
from gemma_explore.parity.comparison import FamilyComparison, compare_families
from gemma_explore.plans.audio import AudioPlan, plan_audio
from gemma_explore.plans.image import ImagePlan, plan_image
from gemma_explore.plans.video import VideoPlan, plan_video
from gemma_explore.processing.features import AudioFeatures, audio_features
from gemma_explore.processing.inputs import PreparedInputs, prepare_inputs
from gemma_explore.processing.layout import (
    NewlineMerge,
    Placeholder,
    PromptLayout,
    Segment,
    layout_prompt,
)
from gemma_explore.processing.transcription import Transcription, transcription_prompt
from gemma_explore.serving.plan import ServingPlan, plan_serving
from gemma_explore.sizes import size_label
from gemma_explore.viz.attention import show_attention
from gemma_explore.viz.audio import show_mel
from gemma_explore.viz.bill import show_bill
from gemma_explore.viz.embedder import show_audio_frames, show_embedder_grid, show_three_way
from gemma_explore.viz.layout import show_layout
from gemma_explore.viz.patches import show_budgets, show_patch_grid
from gemma_explore.viz.pooling import show_pooled_mask
from gemma_explore.viz.save import save_figure
from gemma_explore.viz.serving import show_serving
from gemma_explore.viz.style import style
from gemma_explore.viz.video import show_video_frames

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
