"""One frozen spec per model family: token strings and ids, processor settings, budgets.

Everything here is a *fact* about the released models, with where it comes from.
Nothing here imports torch, so plans and docs can use it cheaply.

>>> from gemma_explore.facts.families import get_family
>>> get_family("gemma4").image_token
'<|image|>'
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "AUDIO_SAMPLING_RATE",
    "AudioSpec",
    "DEFAULT_FAMILY",
    "FAMILIES",
    "FamilySpec",
    "GEMMA3N",
    "GEMMA4",
    "GEMMA4_UNIFIED",
    "ImageSpec",
    "SPEECH_TO_TEXT_FAMILY",
    "TransformersClasses",
    "WRAPPER",
    "family_from_name",
    "get_family",
]


@dataclass(frozen=True)
class ImageSpec:
    """How a family's image processor cuts an image into patches and soft tokens."""

    patch_size: int  # px per patch side (3n: one token covers 48 px of the 768 squash)
    pooling_kernel: int  # patches per pooled cell side (4: 3 → 3×3 patches = 1 token)
    resample: int  # PIL filter the processor resizes with (3n 2 = bilinear, 4 3 = bicubic)
    fixed_size: tuple[int, int] | None  # 3n squashes every image to this (h, w)
    fixed_soft_tokens: int | None  # 3n: always 256
    budgets: tuple[int, ...]  # Gemma 4's allowed max_soft_tokens
    default_budget: int | None  # Gemma 4's default max_soft_tokens
    video_budget: int | None  # Gemma 4 video frames use this budget
    max_video_frames: int | None  # Gemma 4 samples at most this many frames

    @property
    def cell_px(self) -> int:
        """Side in px of the square one soft token covers (patch × pooling kernel)."""
        return self.patch_size * self.pooling_kernel

    @property
    def patches_per_token(self) -> int:
        """Patches pooled into one soft token (Gemma 4: 3×3 = 9; 3n: 1)."""
        return self.pooling_kernel**2


@dataclass(frozen=True)
class AudioSpec:
    """How a family's feature extractor turns a waveform into mel frames and tokens."""

    sampling_rate: int  # Hz the feature extractor expects
    mel_bins: int  # mel filters per frame
    frame_length: int  # samples per analysis window (3n 32 ms, 4 20 ms)
    hop_length: int  # samples between frames (10 ms for both)
    fft_length: int  # FFT size
    min_hz: float
    max_hz: float
    # Longest clip the extractor keeps (its __call__'s max_length=480_000 with
    # truncation=True: 30 s; later samples are dropped without a word). Unified: no cut.
    max_samples: int | None
    pad_to_multiple_of: int | None  # 3n and 4 pad to 128 samples; Unified to one 640 frame
    conv_layers: int  # kernel-3 stride-2 convolutions over mel frames (2 → ÷4; Unified 0)
    conformer_reduction: int  # 3n's conformer then keeps every 4th step; Gemma 4: 1
    fixed_placeholders: int | None  # 3n: always 188 audio placeholders
    max_tokens: int  # cap on audio soft tokens per clip (3n 188, 4 750; Unified: vLLM's only)
    # Encoder-free (Unified): no mel at all; the raw waveform is cut into frames of this
    # many samples, one token each (640 = 40 ms). None: a mel spectrogram and a tower.
    samples_per_token: int | None = None
    # The audio tower's mask says True = padding (3n: Gemma3nModel.forward passes it
    # ~input_features_mask); False: True = valid frame, as the extractor writes it (Gemma 4).
    tower_mask_is_padding: bool = False

    @property
    def frame_ms(self) -> float:
        """One analysis window in ms (3n 32, Gemma 4 20, Unified's raw frame 40)."""
        return self.frame_length * 1000 / self.sampling_rate

    @property
    def hop_ms(self) -> float:
        """Time between frame starts in ms (10 for the mel families, 40 for Unified)."""
        return self.hop_length * 1000 / self.sampling_rate

    @property
    def subsampling(self) -> int:
        """Mel frames per audio token: 2**conv_layers × conformer_reduction (3n 16, 4 4)."""
        return 2**self.conv_layers * self.conformer_reduction

    @property
    def ms_per_token(self) -> int:
        """Audio time one token stands for (3n 160 ms, Gemma 4 40 ms)."""
        return self.subsampling * self.hop_length * 1000 // self.sampling_rate

    @property
    def max_seconds(self) -> float | None:
        """Longest clip the feature extractor keeps (30 s; None: Unified keeps it all)."""
        return None if self.max_samples is None else self.max_samples / self.sampling_rate

    @property
    def has_mel(self) -> bool:
        """Whether the audio goes through a mel spectrogram (Unified: raw frames)."""
        return self.samples_per_token is None


@dataclass(frozen=True)
class TransformersClasses:
    """The transformers classes one family is built from, by name (looked up only when
    needed, so this module never imports transformers).

    The towers are not named: the model builds them with ``AutoModel.from_config`` from
    the vision and audio configs, and code that needs them does the same. An encoder-free
    family has none; its embedders are the whole path.

    >>> GEMMA4.classes.resolve("model").__name__
    'Gemma4ForConditionalGeneration'
    """

    module: str  # transformers.models.<module>.modeling_<module> holds the model classes
    config: str  # the top-level config (text_config, vision_config, audio_config inside)
    text_config: str
    vision_config: str
    audio_config: str
    model: str  # the …ForConditionalGeneration class a checkpoint's config.json names
    text_model: str  # the language model alone (prefill FLOPs)
    # Projects the vision tower's rows (Unified: raw 48 px blocks) into the language
    # model, built as cls(vision_config, text_config); the same for audio.
    vision_embedder: str
    audio_embedder: str
    processor: str
    image_processor: str  # 3n reuses SigLIP's resize-and-rescale processor
    feature_extractor: str
    video_processor: str | None  # None: the family takes no video

    def resolve(self, role: str) -> type:
        """The class named by field ``role`` ("model", "feature_extractor", …): from
        ``transformers`` when it exports it, else from the family's modeling module."""
        import importlib

        # Looked up by name at call time: the facts hold names, and the pure layers that
        # read them (plans, media) never load transformers (pyproject's forbidden contract).
        transformers = importlib.import_module("transformers")
        name = getattr(self, role)
        if name is None:
            raise ValueError(f"This family has no {role.replace('_', ' ')}.")
        if hasattr(transformers, name):
            return getattr(transformers, name)
        modeling = importlib.import_module(
            f"transformers.models.{self.module}.modeling_{self.module}"
        )
        return getattr(modeling, name)


@dataclass(frozen=True)
class FamilySpec:
    """The facts for one family. Ids are the released checkpoints' ids."""

    name: str  # "gemma3n", "gemma4" or "gemma4_unified" (the config's model_type)
    display_name: str
    has_video: bool
    bos_token: str
    eos_token: str
    pad_token: str
    turn_start: str  # opens a chat turn
    turn_end: str  # closes a chat turn
    boi_token: str  # begin-of-image marker
    eoi_token: str  # end-of-image marker
    image_token: str  # one image placeholder
    boa_token: str
    eoa_token: str
    audio_token: str
    video_token: str | None  # Gemma 4 video frames use their own placeholder
    classes: TransformersClasses  # what transformers builds this family from
    tiny_name: str  # the offline random-weight bundle of this family (gemma_explore.load)
    token_ids: dict[str, int] = field(hash=False)  # token string → real id
    wraps_in_newlines: bool = False  # 3n wraps each image/audio run in "\n\n" … "\n\n"
    # Gemma 4 E-models look placeholders up as <pad> in their per-layer embeddings, so
    # only the soft tokens carry the image/audio at those positions.
    pads_placeholders_per_layer: bool = False
    # vLLM's get_default_tok_params: Gemma 4 tokenizes text prompts without special tokens
    # when the checkpoint has a chat template (its text already starts with <bos>);
    # Gemma 3n keeps vLLM's default and prepends <bos>.
    vllm_bos_off_with_template: bool = False
    text_vocab_size: int = 262_144  # ids of the text vocabulary
    vocab_size: int = 262_144  # embedding rows of the language model
    image: ImageSpec | None = None
    audio: AudioSpec | None = None
    hub_ids: tuple[str, ...] = ()  # released checkpoints that load with this family
    # Released checkpoints whose config has no audio_config (image and video only).
    hub_ids_without_audio: tuple[str, ...] = ()
    source: str = ""  # where these facts were read
    # Unified has no vision or audio tower: a small embedder projects raw pixels and
    # raw samples straight into the language model.
    encoder_free: bool = False
    image_encoder: str = ""  # what turns pixels into soft tokens, in words
    audio_encoder: str = ""  # what turns samples into soft tokens, in words
    # The vision_config key vLLM reads the default image budget from (3n: none).
    budget_config_field: str | None = None
    # vLLM counts this family's audio placeholders with another family's formula
    # (Unified inherits Gemma 4's mel-based count, which is not what its embedder does).
    vllm_audio_rule: str | None = None
    # vLLM's model class for this family is a speech-to-text model (SupportsTranscription,
    # with get_generation_prompt), so vLLM serves /v1/audio/transcriptions for it. False:
    # no such interface, so vLLM serves none. The longest clip that endpoint takes is a
    # fact of the vLLM release, not of the family: its decoder's
    # VLLM_MAX_AUDIO_DECODE_DURATION_S (vllm_profile(v).max_audio_decode_s).
    transcribes: bool = False
    # get_speech_to_text_config's max_audio_clip_s. With chunking off it is neither a split
    # point nor a limit: serving.py's do_split_audio needs allow_audio_chunking, and
    # nothing else in the endpoint compares a clip with it.
    transcription_clip_s: int | None = None
    # get_speech_to_text_config's min_energy_split_window_size: samples of the window vLLM
    # searches for a quiet point to split a clip longer than transcription_clip_s. Gemma
    # 3n: None, chunking off, so every clip is sent whole (its extractor keeps 30 s).
    transcription_split_window: int | None = None

    def id_of(self, token: str) -> int:
        """The real id of a special token string."""
        return self.token_ids[token]

    @property
    def markers_per_item(self) -> int:
        """Prompt tokens around one item's placeholders: BOI/EOI (or BOA/EOA), plus 3n's
        two ``"\n\n"`` wrappers."""
        return 2 + (2 if self.wraps_in_newlines else 0)

    @property
    def placeholder_tokens(self) -> dict[str, str]:
        """Modality → its soft-token placeholder string."""
        out = {"image": self.image_token, "audio": self.audio_token}
        if self.video_token:
            out["video"] = self.video_token
        return out

    def count_placeholders(self, ids: list[int]) -> int:
        """Soft-token placeholders (image, audio and video) among ``ids``."""
        mm = {self.id_of(t) for t in self.placeholder_tokens.values()}
        return sum(1 for i in ids if i in mm)


AUDIO_SAMPLING_RATE = 16_000  # Hz: both families' feature extractors expect 16 kHz mono
WRAPPER = "\n\n"  # Gemma 3n writes this before and after every image and clip run

# Newline runs are single tokens in Gemma's vocabulary: "\n" is 107, "\n\n" 108, …
NEWLINE_BASE_ID = 106  # id of "\n" * k is NEWLINE_BASE_ID + k
MAX_NEWLINE_RUN = 31  # the vocabulary has single tokens up to 31 newlines

_COMMON_IDS = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "<mask>": 4}
_NEWLINES = {"\n" * k: NEWLINE_BASE_ID + k for k in range(1, MAX_NEWLINE_RUN + 1)}

GEMMA3N = FamilySpec(
    name="gemma3n",
    display_name="Gemma 3n",
    has_video=False,
    bos_token="<bos>",
    eos_token="<eos>",
    pad_token="<pad>",
    turn_start="<start_of_turn>",
    turn_end="<end_of_turn>",
    boi_token="<start_of_image>",
    eoi_token="<end_of_image>",
    image_token="<image_soft_token>",
    boa_token="<start_of_audio>",
    eoa_token="<end_of_audio>",
    audio_token="<audio_soft_token>",
    video_token=None,
    classes=TransformersClasses(
        module="gemma3n",
        config="Gemma3nConfig",
        text_config="Gemma3nTextConfig",
        vision_config="Gemma3nVisionConfig",
        audio_config="Gemma3nAudioConfig",
        model="Gemma3nForConditionalGeneration",
        text_model="Gemma3nTextModel",
        vision_embedder="Gemma3nMultimodalEmbedder",
        audio_embedder="Gemma3nMultimodalEmbedder",
        processor="Gemma3nProcessor",
        image_processor="SiglipImageProcessor",
        feature_extractor="Gemma3nAudioFeatureExtractor",
        video_processor=None,
    ),
    tiny_name="tiny-gemma3n",
    token_ids={
        **_COMMON_IDS,
        "<start_of_turn>": 105,
        "<end_of_turn>": 106,
        **_NEWLINES,
        "<start_of_image>": 255_999,
        "<start_of_audio>": 256_000,
        "<end_of_image>": 262_144,
        "<image_soft_token>": 262_145,
        "<end_of_audio>": 262_272,
        "<audio_soft_token>": 262_273,
    },
    wraps_in_newlines=True,
    text_vocab_size=262_144,
    vocab_size=262_400,  # 262 144 text + 128 vision + 128 audio hard tokens
    image=ImageSpec(
        patch_size=48,
        pooling_kernel=1,
        resample=2,
        fixed_size=(768, 768),
        fixed_soft_tokens=256,
        budgets=(),
        default_budget=None,
        video_budget=None,
        max_video_frames=None,
    ),
    audio=AudioSpec(
        sampling_rate=AUDIO_SAMPLING_RATE,
        mel_bins=128,
        frame_length=512,
        hop_length=160,
        fft_length=1024,  # 2 ** ceil(log2(512)), doubled by fft_overdrive
        min_hz=125.0,
        max_hz=7600.0,
        max_samples=480_000,
        pad_to_multiple_of=128,
        conv_layers=2,
        conformer_reduction=4,
        fixed_placeholders=188,
        max_tokens=188,
        tower_mask_is_padding=True,
    ),
    hub_ids=("google/gemma-3n-E2B-it", "google/gemma-3n-E4B-it"),
    source="transformers Gemma3nProcessor / Gemma3nAudioFeatureExtractor / SiglipImageProcessor",
    image_encoder="MobileNet-V5 CNN tower (timm) on a 768×768 px squash",
    audio_encoder="USM Conformer tower on 128-bin mel frames",
    # vLLM gemma3n_mm.py: Gemma3nForConditionalGeneration is SupportsTranscription, and its
    # get_speech_to_text_config says max_audio_clip_s=30, min_energy_split_window_size=None
    # (chunking off), so the decoder's limit is the only one.
    transcribes=True,
    transcription_clip_s=30,
    transcription_split_window=None,
)

GEMMA4 = FamilySpec(
    name="gemma4",
    display_name="Gemma 4",
    has_video=True,
    bos_token="<bos>",
    eos_token="<eos>",
    pad_token="<pad>",
    turn_start="<|turn>",
    turn_end="<turn|>",
    boi_token="<|image>",
    eoi_token="<image|>",
    image_token="<|image|>",
    boa_token="<|audio>",
    eoa_token="<audio|>",
    audio_token="<|audio|>",
    video_token="<|video|>",
    classes=TransformersClasses(
        module="gemma4",
        config="Gemma4Config",
        text_config="Gemma4TextConfig",
        vision_config="Gemma4VisionConfig",
        audio_config="Gemma4AudioConfig",
        model="Gemma4ForConditionalGeneration",
        text_model="Gemma4TextModel",
        vision_embedder="Gemma4MultimodalEmbedder",
        audio_embedder="Gemma4MultimodalEmbedder",
        processor="Gemma4Processor",
        image_processor="Gemma4ImageProcessor",
        feature_extractor="Gemma4AudioFeatureExtractor",
        video_processor="Gemma4VideoProcessor",
    ),
    tiny_name="tiny-gemma4",
    token_ids={
        **_COMMON_IDS,
        "<|turn>": 105,
        "<turn|>": 106,
        **_NEWLINES,
        "<|image>": 255_999,
        "<|audio>": 256_000,
        "<|image|>": 258_880,
        "<|audio|>": 258_881,
        "<image|>": 258_882,
        "<audio|>": 258_883,
        "<|video|>": 258_884,
    },
    wraps_in_newlines=False,
    pads_placeholders_per_layer=True,
    vllm_bos_off_with_template=True,
    text_vocab_size=262_144,
    vocab_size=262_144,
    image=ImageSpec(
        patch_size=16,
        pooling_kernel=3,
        resample=3,
        fixed_size=None,
        fixed_soft_tokens=None,
        budgets=(70, 140, 280, 560, 1120),
        default_budget=280,
        video_budget=70,
        max_video_frames=32,
    ),
    audio=AudioSpec(
        sampling_rate=AUDIO_SAMPLING_RATE,
        mel_bins=128,
        frame_length=320,
        hop_length=160,
        fft_length=512,
        min_hz=0.0,
        max_hz=8000.0,
        max_samples=480_000,
        pad_to_multiple_of=128,
        conv_layers=2,
        conformer_reduction=1,
        fixed_placeholders=None,
        max_tokens=750,
    ),
    hub_ids=("google/gemma-4-E2B-it", "google/gemma-4-E4B-it"),
    hub_ids_without_audio=("google/gemma-4-26B-A4B-it", "google/gemma-4-31B-it"),
    source="transformers Gemma4Processor / Gemma4ImageProcessor / Gemma4AudioFeatureExtractor",
    image_encoder="ViT tower on 16 px patches, then a 3×3 average pooler",
    audio_encoder="Conformer tower on 128-bin mel frames",
    budget_config_field="default_output_length",
)

# Gemma 4 12B "Unified": the Gemma 4 tokens, budgets and resize, with no towers.
GEMMA4_UNIFIED = replace(
    GEMMA4,
    name="gemma4_unified",
    display_name="Gemma 4 Unified",
    classes=TransformersClasses(
        module="gemma4_unified",
        config="Gemma4UnifiedConfig",
        text_config="Gemma4UnifiedTextConfig",
        vision_config="Gemma4UnifiedVisionConfig",
        audio_config="Gemma4UnifiedAudioConfig",
        model="Gemma4UnifiedForConditionalGeneration",
        text_model="Gemma4UnifiedTextModel",
        vision_embedder="Gemma4UnifiedVisionEmbedder",  # LN → Dense → LN → +pos → LN → RMSNorm → Linear
        audio_embedder="Gemma4UnifiedMultimodalEmbedder",  # RMSNorm → Linear
        processor="Gemma4UnifiedProcessor",
        image_processor="Gemma4UnifiedImageProcessor",
        feature_extractor="Gemma4UnifiedAudioFeatureExtractor",
        video_processor="Gemma4UnifiedVideoProcessor",
    ),
    tiny_name="tiny-gemma4-unified",
    # The language model has no per-layer embeddings (no PLE fields in its config).
    pads_placeholders_per_layer=False,
    audio=AudioSpec(
        sampling_rate=AUDIO_SAMPLING_RATE,
        mel_bins=0,  # no mel: raw samples
        frame_length=640,  # one frame = one token = 40 ms
        hop_length=640,  # frames do not overlap
        fft_length=0,
        min_hz=0.0,
        max_hz=0.0,
        max_samples=None,  # transformers keeps every sample: ceil(n / 640) tokens, no cap
        pad_to_multiple_of=640,  # zero-pads the last partial frame
        conv_layers=0,
        conformer_reduction=1,
        fixed_placeholders=None,
        max_tokens=750,  # audio_seq_length: documented, applied by vLLM's count only
        samples_per_token=640,
    ),
    hub_ids=("google/gemma-4-12B-it",),
    hub_ids_without_audio=(),
    source=(
        "transformers Gemma4UnifiedProcessor / Gemma4UnifiedImageProcessor / "
        "Gemma4UnifiedAudioFeatureExtractor; vLLM gemma4_unified.py"
    ),
    encoder_free=True,
    image_encoder="no tower: each 48×48 px block (3×3 patches of 16 px, 6912 raw values) "
    "goes through LayerNorm → Dense → LayerNorm → + position (x, y) → LayerNorm → RMSNorm → "
    "Linear (Gemma4UnifiedVisionEmbedder)",
    audio_encoder="no tower: each 640-sample frame (40 ms of raw waveform) goes through "
    "RMSNorm → Linear",
    budget_config_field="num_soft_tokens",
    vllm_audio_rule="gemma4",
)

FAMILIES: dict[str, FamilySpec] = {f.name: f for f in (GEMMA3N, GEMMA4, GEMMA4_UNIFIED)}

# Why a default at all: a learner who calls plan_video(clip) or bill(folder) without naming a
# family should get the family with every modality and a budget. This is the one place that
# choice is made; everything else reads DEFAULT_FAMILY (never writes "gemma4" itself).
DEFAULT_FAMILY: FamilySpec = GEMMA4

# The family vLLM serves /v1/audio/transcriptions for (the one that transcribes); what
# transcription_prompt and transcription_request default to.
SPEECH_TO_TEXT_FAMILY: FamilySpec = next(f for f in FAMILIES.values() if f.transcribes)

# Substrings of a checkpoint's name that say its family, tried in this order: Unified's
# names ("gemma-4-12b", "…unified…") also contain Gemma 4's markers, so they come first.
_NAME_MARKERS: tuple[tuple[str, FamilySpec], ...] = (
    ("gemma-3n", GEMMA3N),
    ("unified", GEMMA4_UNIFIED),
    ("gemma-4-12b", GEMMA4_UNIFIED),
    ("gemma-4", GEMMA4),
)


def family_from_name(name: str) -> FamilySpec | None:
    """The family a checkpoint's *name* suggests (for a model we cannot open), or None.

    >>> family_from_name("my-org/Gemma4_Unified-finetune").name
    'gemma4_unified'
    >>> family_from_name("my-org/llama") is None
    True
    """
    low = str(name).lower().replace("_", "-")
    for marker, spec in _NAME_MARKERS:
        if marker in low or marker.replace("-", "") in low:
            return spec
    return None


def get_family(family: str | FamilySpec | Any) -> FamilySpec:
    """Return the spec for ``"gemma3n"``, ``"gemma4"`` or ``"gemma4_unified"``; also
    accepts a spec, or a loaded bundle (anything with a ``.spec``), so every ``family=``
    takes all three.

    >>> get_family("unified").audio.samples_per_token
    640
    """
    if isinstance(family, FamilySpec):
        return family
    if isinstance(getattr(family, "spec", None), FamilySpec):  # a Bundle (a higher layer)
        return family.spec
    key = str(family).lower().replace(" ", "").replace("-", "").replace("_", "")
    aliases = {
        "gemma3n": "gemma3n",
        "3n": "gemma3n",
        "gemma4": "gemma4",
        "4": "gemma4",
        "gemma4unified": "gemma4_unified",
        "unified": "gemma4_unified",
        "gemma412b": "gemma4_unified",
    }
    if key not in aliases:
        raise ValueError(
            f"Unknown model family {family!r}. Choose one of: {', '.join(FAMILIES)} "
            "(or pass a loaded bundle, whose .family says which it is)."
        )
    return FAMILIES[aliases[key]]
