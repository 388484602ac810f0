"""gemma_explore: see how Gemma 3n, Gemma 4 and Gemma 4 Unified turn pictures, sound and
video into tokens.

This namespace holds what a lesson calls, in the order the lessons meet it. Every entry
point for a modality takes the same inputs: a path, bytes, a file object, a PIL image or
array, or ``(wave, rate)``.

1. ``load(model)`` → a :class:`Bundle`: the real processor, the model and the engine that
   answers (``"tiny-gemma4"``, ``"tiny-gemma3n"`` and ``"tiny-gemma4-unified"`` offline).
2. ``load_image`` / ``load_audio`` / ``load_video`` and the bundled ``sample_photo``,
   ``sample_speech``, ``sample_video``.
3. ``plan_image``, ``plan_audio``, ``plan_video``: token counts and why, step by step;
   ``audio_features``: the real log-mel frames.
4. ``prepare_inputs(messages, bundle=…)``: the real processor's run;
   ``layout_prompt(messages, bundle=…)``: the expanded prompt, token by token;
   ``transcription_prompt``: Gemma 3n's fixed speech-to-text prompt.
5. ``check_image_parity``, ``check_audio_parity``, ``check_video_parity``: ours vs
   transformers vs vLLM; ``compare_families``: one input, three families.
6. ``vision_pooling``, ``inspect_multimodal``, ``attention_mask``: inside the model.
7. ``plan_serving``: what vLLM reserves at start-up; ``engine_args``: the arguments to
   start it with (``workload=`` sizes them); ``released_config``: a released
   checkpoint's config, offline; ``bill``: what a dataset costs.
8. ``show_*``: each draws one result on an ``ax=`` and returns its Figure;
   ``save_figure`` for slides; ``style("projector")`` for a room.
9. ``explore_image``, ``explore_audio``, ``explore_prompt``: ipywidgets explorers.
10. ``grade_exercise`` and ``answer_key``: the notebooks' exercises; ``real_answers``: what
    a real checkpoint answered, recorded on a GPU; ``get_family``, ``size_label`` and the
    errors.

The result types these return live in :mod:`gemma_explore.results`. ``dir(ge)`` lists
this namespace only; the folders (``gemma_explore.plans``, ``gemma_explore.serving``, …)
hold the rest (``docs/DESIGN.md`` draws them).

>>> import gemma_explore as ge
>>> ge.plan_image((1080, 1920), family="gemma4", max_soft_tokens=280).num_soft_tokens
264
"""

from gemma_explore.bill.walk import bill
from gemma_explore.conformance.probe import probe
from gemma_explore.course.exercises import answer_key, grade_exercise
from gemma_explore.course.real_answers import real_answers
from gemma_explore.course.widgets import explore_audio, explore_image, explore_prompt
from gemma_explore.engines.load import load
from gemma_explore.engines.serve_args import engine_args
from gemma_explore.errors import EngineError, MediaError, ModelLoadError
from gemma_explore.facts.families import get_family
from gemma_explore.facts.released import released_config
from gemma_explore.inside.attention import attention_mask
from gemma_explore.inside.towers import inspect_multimodal, vision_pooling
from gemma_explore.media.loaders import load_audio, load_image, load_video
from gemma_explore.models.bundle import Bundle
from gemma_explore.parity.checks import check_audio_parity, check_image_parity, check_video_parity
from gemma_explore.parity.comparison import compare_families
from gemma_explore.plans.audio import plan_audio
from gemma_explore.plans.image import plan_image
from gemma_explore.plans.long_audio import plan_long_audio
from gemma_explore.plans.video import plan_video
from gemma_explore.processing.features import audio_features
from gemma_explore.processing.inputs import prepare_inputs
from gemma_explore.processing.layout import layout_prompt
from gemma_explore.processing.transcription import transcription_prompt
from gemma_explore.samples import sample_photo, sample_speech, sample_video
from gemma_explore.serving.plan import plan_serving
from gemma_explore.sizes import size_label
from gemma_explore.viz.attention import show_attention
from gemma_explore.viz.audio import show_mel
from gemma_explore.viz.bill import show_bill
from gemma_explore.viz.embedder import show_audio_frames, show_embedder_grid, show_three_way
from gemma_explore.viz.flops import show_flops
from gemma_explore.viz.layout import show_layout
from gemma_explore.viz.patches import show_budgets, show_patch_grid
from gemma_explore.viz.pooling import show_pooled_mask
from gemma_explore.viz.probe import show_probe
from gemma_explore.viz.save import save_figure
from gemma_explore.viz.serving import show_serving
from gemma_explore.viz.style import style
from gemma_explore.viz.video import show_video_frames

# In lesson order, several to a line: the formatter would put one name per line and lose
# the lesson's sections, so it leaves this table alone.
# fmt: off
__all__ = [
    # 1 a model
    "load", "Bundle",
    # 2 inputs
    "load_image", "load_audio", "load_video", "sample_photo", "sample_speech", "sample_video",
    # 3 plans
    "plan_image", "plan_audio", "plan_video", "plan_long_audio", "audio_features",
    # 4 the processor and the prompt
    "prepare_inputs", "layout_prompt", "transcription_prompt",
    # 5 parity
    "check_image_parity", "check_audio_parity", "check_video_parity", "compare_families",
    # 6 inside the model
    "vision_pooling", "inspect_multimodal", "attention_mask",
    # 7 serving
    "plan_serving", "engine_args", "released_config", "bill", "probe",
    # 8 figures
    "show_patch_grid", "show_budgets", "show_pooled_mask", "show_mel", "show_video_frames",
    "show_layout", "show_embedder_grid", "show_audio_frames", "show_three_way",
    "show_serving", "show_attention", "show_flops", "show_bill", "show_probe", "save_figure",
    "style",
    # 9 explorers
    "explore_image", "explore_audio", "explore_prompt",
    # 10 exercises, facts, sizes and errors
    "grade_exercise", "answer_key", "real_answers", "get_family", "size_label",
    "MediaError", "ModelLoadError", "EngineError",
]
# fmt: on
__version__ = "0.1.0"


def __dir__() -> list[str]:
    """``dir(ge)`` is the lesson's namespace: importing a name binds its folder here too
    (Python sets ``gemma_explore.plans`` when ``gemma_explore.plans.image`` loads), and a
    learner tabbing through ``ge.`` should meet the curated names, not the folders."""
    return sorted([*__all__, "__version__"])
