"""The released Gemma 3n / Gemma 4 checkpoints as cited facts: every number with its source.

The hub is not needed: each checkpoint's text, vision and audio configs, its processor
settings and its token ids are written here as the upstream conversion scripts in
transformers wrote them (``convert_gemma3n_weights.py``, ``convert_gemma4_weights.py``,
``convert_gemma4_unified_weights.py``), plus the transformers 5.19 class defaults those
scripts rely on. Each value is a :class:`Fact` whose ``source`` names where it was read;
where two sources disagree, the source note says so.

:func:`released_config` turns the facts into the real transformers config (offline), so
the meta-device builds, the serving plan and vLLM's ``ModelConfig`` see the released
shapes. Audio presence is a fact of the config (``audio_config`` present or not), never
of the name.

>>> "google/gemma-4-31B-it" in RELEASED_IDS
True
>>> released("google/gemma-4-31B-it").has_audio
False
>>> released("google/gemma-4-31B").text["num_hidden_layers"].value
60
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from gemma_explore.facts.families import GEMMA3N, GEMMA4, GEMMA4_UNIFIED, get_family

__all__ = [
    "BASE_IDS",
    "RELEASED",
    "RELEASED_IDS",
    "SOURCES",
    "Fact",
    "Released",
    "is_released",
    "released",
    "released_config",
]

# Where the facts were read. A Fact's source is one or more of these keys ("+"-joined),
# optionally followed by ": " and a note (a corroboration or a disagreement).
SOURCES: dict[str, str] = {
    "conv3n": "huggingface/transformers src/transformers/models/gemma3n/"
    "convert_gemma3n_weights.py @f360a89b, _VARIANTS (gemma3n_e2b: intermediate_size "
    "2048 * 4, 30 layers, activation_sparsity 0.95 x10 + 0.0 x20, 10 KV-shared layers; "
    "gemma3n_e4b: Gemma3nTextConfig() defaults)",
    "cfg3n": "transformers 5.19.0 models/gemma3n/configuration_gemma3n.py class defaults "
    "(the 3n converter passes only what differs from them)",
    "proc3n": "transformers 5.19.0 processing_gemma3n.py (image_seq_length 256, "
    "audio_seq_length 188), Gemma3nAudioFeatureExtractor() and the converter's "
    "SiglipImageProcessorFast (768×768 px (W×H), bilinear)",
    "conv4": "huggingface/transformers src/transformers/models/gemma4/"
    "convert_gemma4_weights.py @0f3f0632, _VARIANTS (gemma-4-e2b, gemma-4-e4b, "
    "gemma-4-26b-a4b, gemma-4-31b), _ON_DEVICE_VISION_CONFIG, _LARGE_MODEL_VISION_CONFIG, "
    "_DEFAULT_AUDIO_CONFIG; large variants get no audio_config",
    "cfg4": "transformers 5.19.0 models/gemma4/configuration_gemma4.py class defaults "
    "(Gemma4TextConfig: global_head_dim popped with default 512, sliding_window 512, "
    "max_position_embeddings 131072, vocab 262144; Gemma4AudioConfig(); Gemma4Config "
    "token ids)",
    "proc4": "convert_gemma4_weights.py @0f3f0632 main(): Gemma4ImageProcessor("
    "image_seq_length=default_output_length, max_soft_tokens=default_output_length, "
    "pooling_kernel_size=3, do_normalize=False), Gemma4AudioFeatureExtractor(), "
    "Gemma4VideoProcessor(), saved for every variant (the large ones too); transformers "
    "5.19.0 processing_gemma4.py / feature_extraction_gemma4.py defaults",
    "tok4": "convert_gemma4_weights.py @0f3f0632 main(): ids re-read from the tokenizer "
    "(native <|image> 255999, <|audio> 256000, <image|> 258882, <audio|> 258883); "
    "eos_token_id [1, 106] with --include_chat_template (instruction-tuned)",
    "convU": "huggingface/transformers src/transformers/models/gemma4_unified/"
    "convert_gemma4_unified_weights.py, _VARIANTS gemma-4-12b (3840 wide, 48 layers, "
    "5 sliding + 1 full x8, 16 heads, 8 KV heads, 1 global KV head, attention_k_eq_v, "
    "Gemma4UnifiedVisionConfig() and Gemma4UnifiedAudioConfig() defaults)",
    "cfgU": "transformers 5.19.0 models/gemma4_unified/configuration_gemma4_unified.py "
    "class defaults (sliding_window 1024, max_position_embeddings 262144, "
    "mm_embed_dim 3840, mm_posemb_size 1120, audio_embed_dim 640)",
    "procU": "transformers 5.19.0 processing_gemma4_unified.py / "
    "feature_extraction_gemma4_unified.py / image_processing_gemma4_unified.py defaults",
    "vllmU": "vLLM model_executor/models/gemma4_unified.py (every supported release) reads "
    "vision_config.num_soft_tokens (280) as the default image budget",
    "copies": "published copies of the released config.json seen in the search corpora "
    "(EasyDeL/gemma-4-E2B config page; third-party fixtures of the large Gemma 4 vision "
    "config: hidden 1152, 27 layers, 16 heads, head_dim 72, standardize true; mlx ports of "
    "the 12B TextConfig)",
    "ids": "released repository names: transformers auto_docstring checkpoints and vLLM "
    "tests/models/registry.py (-it ids); base ids without -it as listed by third-party "
    "download scripts (google/gemma-4-E2B, -E4B, -26B-A4B, -31B; google/gemma-4-12B; "
    "google/gemma-3n-E2B, -E4B)",
}


class Fact(NamedTuple):
    """One released number and where it was read."""

    value: Any  # the value the released config.json (or processor config) holds
    source: str  # SOURCES keys joined by "+", then optionally ": a note"


def _facts(source: str, **values: Any) -> dict[str, Fact]:
    """Several fields read from the same place."""
    return {k: Fact(v, source) for k, v in values.items()}


def _read_again(source: str, block: dict[str, Fact], *names: str) -> dict[str, Fact]:
    """``names`` of ``block`` with the same values, as read at ``source`` (a family that
    shares another's numbers cites its own file for them)."""
    return {name: block[name]._replace(source=source) for name in names}


def _pattern(sliding: int, repeats: int) -> list[str]:
    """``sliding`` sliding layers then one full layer, ``repeats`` times (the converters'
    ``["sliding_attention"] * n + ["full_attention"]`` lists)."""
    return (["sliding_attention"] * sliding + ["full_attention"]) * repeats


@dataclass(frozen=True)
class Released:
    """One released checkpoint, as facts."""

    id: str  # the hub id
    base_id: str  # the pretrained (not instruction-tuned) id of the same architecture
    model_type: str  # "gemma3n", "gemma4" or "gemma4_unified": the family
    architecture: str  # transformers class the config.json names
    text: dict[str, Fact] = field(hash=False)  # text_config fields
    vision: dict[str, Fact] = field(hash=False)  # vision_config fields
    audio: dict[str, Fact] | None = field(hash=False)  # audio_config fields; None: no tower
    audio_presence: Fact = field(hash=False)  # why there is (or is not) an audio_config
    processor: dict[str, Fact] = field(hash=False)  # processor / feature extractor settings
    token_ids: dict[str, Fact] = field(hash=False)  # top-level config token ids
    notes: str = ""  # disagreements and caveats, in words

    @property
    def has_audio(self) -> bool:
        """Whether the config has an ``audio_config`` (an audio tower or embedder)."""
        return self.audio is not None

    def facts(self) -> dict[str, Fact]:
        """Every fact, keyed ``block.field`` (``text.hidden_size``, ``token_ids.…``)."""
        out: dict[str, Fact] = {"audio_presence": self.audio_presence}
        for block in ("text", "vision", "audio", "processor", "token_ids"):
            for key, fact in (getattr(self, block) or {}).items():
                out[f"{block}.{key}"] = fact
        return out


# ----------------------------------------------------------------------------- Gemma 3n

_3N_VISION = _facts(
    "cfg3n+conv3n",
    architecture="mobilenetv5_300m_enc",
    hidden_size=2048,
    vocab_size=128,
    vocab_offset=262_144,
)
_3N_AUDIO = _facts(
    "cfg3n+conv3n",
    hidden_size=1536,
    input_feat_size=128,
    conf_num_hidden_layers=12,
    conf_num_attention_heads=8,
    conf_attention_chunk_size=12,
    conf_attention_context_left=13,
    conf_attention_context_right=0,
    conf_reduction_factor=4,
    sscp_conv_channel_size=[128, 32],
    vocab_offset=262_272,
)
_3N_PROCESSOR = _facts(
    "proc3n",
    image_size=(768, 768),
    image_resample=2,
    image_seq_length=256,
    audio_seq_length=188,
    sampling_rate=16_000,
    frame_length=512,
    hop_length=160,
    feature_size=128,
    max_length=480_000,
)
_3N_TOKENS = _facts(
    "cfg3n: corroborated by a third-party Swift test (audio_token_id 262273, "
    "image_token_id 262145)",
    boi_token_id=255_999,
    eoi_token_id=262_144,
    image_token_id=262_145,
    boa_token_id=256_000,
    eoa_token_id=262_272,
    audio_token_id=262_273,
    audio_soft_tokens_per_image=188,
    vision_soft_tokens_per_image=256,
)


def _3n_text(layers: int, intermediate: int, shared: int, source: str) -> dict[str, Fact]:
    return {
        **_facts(
            source,
            num_hidden_layers=layers,
            intermediate_size=intermediate,
            num_kv_shared_layers=shared,
            activation_sparsity_pattern=[0.95] * 10 + [0.0] * (layers - 10),
        ),
        **_facts(
            "cfg3n"
            + (": also https://gemma-llm.readthedocs.io Gemma3n_E4B" if layers == 35 else ""),
            hidden_size=2048,
            num_attention_heads=8,
            num_key_value_heads=2,
            head_dim=256,
            sliding_window=512,
            layer_types=_pattern(4, layers // 5),
            max_position_embeddings=32_768,
            vocab_size=262_400,
            vocab_size_per_layer_input=262_144,
            hidden_size_per_layer_input=256,
            altup_num_inputs=4,
            laurel_rank=64,
            final_logit_softcapping=30.0,
        ),
    }


def _gemma3n(size: str, layers: int, intermediate: int, shared: int) -> Released:
    return Released(
        id=f"google/gemma-3n-{size}-it",
        base_id=f"google/gemma-3n-{size}",
        model_type=GEMMA3N.name,
        architecture=GEMMA3N.classes.model,
        text=_3n_text(layers, intermediate, shared, "conv3n"),
        vision=_3N_VISION,
        audio=_3N_AUDIO,
        audio_presence=Fact(True, "conv3n: audio_config=Gemma3nAudioConfig() in both variants"),
        processor=_3N_PROCESSOR,
        token_ids=_3N_TOKENS,
    )


# ----------------------------------------------------------------------------- Gemma 4

_ROPE = {
    "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
    "full_attention": {
        "rope_type": "proportional",
        "rope_theta": 1_000_000.0,
        "partial_rotary_factor": 0.25,
    },
}
_4_SMALL_VISION = _facts(
    "conv4: _ON_DEVICE_VISION_CONFIG; hidden 768 / 16 layers corroborated by the "
    "EasyDeL/gemma-4-E2B config copy",
    hidden_size=768,
    intermediate_size=3072,
    num_hidden_layers=16,
    num_attention_heads=12,
    num_key_value_heads=12,
    head_dim=64,
    global_head_dim=64,
    default_output_length=280,
    pooling_kernel_size=3,
    use_clipped_linears=True,
) | _facts("cfg4", patch_size=16, position_embedding_size=10_240, standardize=False)
_4_LARGE_VISION = _facts(
    "conv4+copies: _LARGE_MODEL_VISION_CONFIG (third-party config copies agree)",
    hidden_size=1152,
    intermediate_size=4304,
    num_hidden_layers=27,
    num_attention_heads=16,
    num_key_value_heads=16,
    head_dim=72,
    global_head_dim=72,
    default_output_length=280,
    pooling_kernel_size=3,
    use_clipped_linears=False,
    standardize=True,
) | _facts("cfg4", patch_size=16, position_embedding_size=10_240)
_4_AUDIO = _facts(
    "conv4+cfg4: _DEFAULT_AUDIO_CONFIG = Gemma4AudioConfig(); corroborated by the "
    "EasyDeL/gemma-4-E2B config copy",
    hidden_size=1024,
    num_hidden_layers=12,
    num_attention_heads=8,
    subsampling_conv_channels=[128, 32],
    conv_kernel_size=5,
    attention_chunk_size=12,
    attention_context_left=13,
    attention_context_right=0,
    output_proj_dims=1536,
    use_clipped_linears=True,
)
_4_PROCESSOR = _facts(
    "proc4",
    patch_size=16,
    pooling_kernel_size=3,
    max_soft_tokens=280,
    image_seq_length=280,
    allowed_max_soft_tokens=[70, 140, 280, 560, 1120],
    video_max_soft_tokens=70,
    video_num_frames=32,
    audio_seq_length=750,
    audio_ms_per_token=40,
    sampling_rate=16_000,
    frame_length=320,
    hop_length=160,
    feature_size=128,
    max_length=480_000,
    pad_to_multiple_of=128,
)
_4_TOKENS = _facts(
    "cfg4+tok4: corroborated by the EasyDeL/gemma-4-E2B config copy",
    boi_token_id=255_999,
    eoi_token_id=258_882,
    image_token_id=258_880,
    video_token_id=258_884,
    boa_token_id=256_000,
    eoa_token_index=258_883,
    audio_token_id=258_881,
)
_4_TEXT_COMMON = _facts(
    "conv4",
    final_logit_softcapping=30.0,
    rope_parameters=_ROPE,
) | _facts("cfg4", head_dim=256, vocab_size=262_144, vocab_size_per_layer_input=262_144)


def _gemma4(
    size: str,
    text: dict[str, Any],
    defaults: dict[str, Any],
    vision: dict[str, Fact],
    has_audio: bool,
    notes: str = "",
) -> Released:
    return Released(
        id=f"google/gemma-4-{size}-it",
        base_id=f"google/gemma-4-{size}",
        model_type=GEMMA4.name,
        architecture=GEMMA4.classes.model,
        text=_4_TEXT_COMMON
        | _facts(f"conv4: variant gemma-4-{size.lower()}", **text)
        | _facts("cfg4: the converter leaves these at the class default", **defaults),
        vision=vision,
        audio=_4_AUDIO if has_audio else None,
        audio_presence=Fact(
            has_audio,
            "conv4: "
            + (
                "audio_config=_DEFAULT_AUDIO_CONFIG"
                if has_audio
                else "no audio_config in this variant (image and video only)"
            ),
        ),
        processor=_4_PROCESSOR,
        token_ids=_4_TOKENS,
        notes=notes,
    )


_E2B = _gemma4(
    "E2B",
    dict(
        hidden_size=1536,
        hidden_size_per_layer_input=256,
        intermediate_size=4 * 1536,
        num_hidden_layers=35,
        layer_types=_pattern(4, 7),
        num_attention_heads=8,
        num_key_value_heads=1,
        num_global_key_value_heads=None,
        attention_k_eq_v=False,
        use_bidirectional_attention=None,
        num_kv_shared_layers=20,
        use_double_wide_mlp=True,
    ),
    dict(
        global_head_dim=512,
        sliding_window=512,
        max_position_embeddings=131_072,
        enable_moe_block=False,
    ),
    _4_SMALL_VISION,
    has_audio=True,
    notes="max_position_embeddings 131072 (class default) agrees with a third-party E2B "
    "config fixture.",
)
_E4B = _gemma4(
    "E4B",
    dict(
        hidden_size=2560,
        hidden_size_per_layer_input=256,
        intermediate_size=4 * 2560,
        num_hidden_layers=42,
        layer_types=_pattern(5, 7),
        num_attention_heads=8,
        num_key_value_heads=2,
        num_global_key_value_heads=None,
        global_head_dim=512,
        attention_k_eq_v=False,
        use_bidirectional_attention=None,
        num_kv_shared_layers=18,
    ),
    dict(
        sliding_window=512,
        max_position_embeddings=131_072,
        use_double_wide_mlp=False,
        enable_moe_block=False,
    ),
    _4_SMALL_VISION,
    has_audio=True,
)
_26B = _gemma4(
    "26B-A4B",
    dict(
        hidden_size=2816,
        hidden_size_per_layer_input=0,
        intermediate_size=2112,
        num_hidden_layers=30,
        layer_types=_pattern(5, 5),
        num_attention_heads=16,
        num_key_value_heads=8,
        num_global_key_value_heads=2,
        attention_k_eq_v=True,
        use_bidirectional_attention="vision",
        num_kv_shared_layers=0,
        enable_moe_block=True,
        num_experts=128,
        moe_intermediate_size=704,
        top_k_experts=8,
        sliding_window=1024,
        max_position_embeddings=262_144,
    ),
    dict(global_head_dim=512, use_double_wide_mlp=False),
    _4_LARGE_VISION,
    has_audio=False,
    notes="intermediate_size 2112 is the shared expert's width (converter comment); the "
    "128 experts are 704 wide, 8 active per token.",
)
_31B = _gemma4(
    "31B",
    dict(
        hidden_size=5376,
        hidden_size_per_layer_input=0,
        intermediate_size=4 * 5376,
        num_hidden_layers=60,
        layer_types=_pattern(5, 10),
        num_attention_heads=32,
        num_key_value_heads=16,
        num_global_key_value_heads=4,
        attention_k_eq_v=True,
        use_bidirectional_attention="vision",
        num_kv_shared_layers=0,
        sliding_window=1024,
        max_position_embeddings=262_144,
    ),
    dict(global_head_dim=512, use_double_wide_mlp=False, enable_moe_block=False),
    _4_LARGE_VISION,
    has_audio=False,
    notes="apxml.com's 31B page gives 60 layers, 32 heads, 16 KV heads, window 1024 as here "
    "but labels 21504 (the MLP width) as the hidden size; the converter says hidden 5376.",
)

# ----------------------------------------------------------------------------- Unified

_12B = Released(
    id="google/gemma-4-12B-it",
    base_id="google/gemma-4-12B",
    model_type=GEMMA4_UNIFIED.name,
    architecture=GEMMA4_UNIFIED.classes.model,
    text=_facts(
        "convU: corroborated by an mlx port's TextConfig (3840, 48 layers, 15360, 16 heads, "
        "8 KV heads, head_dim 256, global 512)",
        hidden_size=3840,
        intermediate_size=4 * 3840,
        num_hidden_layers=48,
        layer_types=_pattern(5, 8),
        num_attention_heads=16,
        num_key_value_heads=8,
        num_global_key_value_heads=1,
        attention_k_eq_v=True,
        use_bidirectional_attention="vision",
        num_kv_shared_layers=0,
        use_double_wide_mlp=False,
        final_logit_softcapping=30.0,
        rope_parameters=_ROPE,
    )
    | _facts(
        "convU: 'BC: not used by the model'",
        vocab_size_per_layer_input=0,
        hidden_size_per_layer_input=0,
    )
    | _facts("cfgU", head_dim=256, global_head_dim=512, sliding_window=1024, vocab_size=262_144)
    | _facts(
        "cfgU: the 5.19 class default; an older revision of the class said 131072, and the "
        "hub config.json value was not seen",
        max_position_embeddings=262_144,
    ),
    vision=_facts(
        "convU+cfgU: Gemma4UnifiedVisionConfig() defaults; mlx-derived config copies agree",
        patch_size=16,
        pooling_kernel_size=3,
        mm_embed_dim=3840,
        mm_posemb_size=1120,
        output_proj_dims=3840,
    )
    | _facts(
        "vllmU+copies: not a field of the transformers 5.19 class; 280 in third-party copies",
        num_soft_tokens=280,
    ),
    audio=_facts("convU+cfgU: Gemma4UnifiedAudioConfig() defaults", audio_embed_dim=640),
    audio_presence=Fact(
        True,
        "convU: audio_config=Gemma4UnifiedAudioConfig() (an embedder, "
        "no tower); Gemma 4 model card: audio on E2B, E4B and 12B",
    ),
    # The image and video settings and the rate are Gemma 4's, read again in Unified's
    # processor; the audio is its own (samples per token: no extractor, no 30 s cut).
    processor=_read_again(
        "procU",
        _4_PROCESSOR,
        "patch_size",
        "pooling_kernel_size",
        "max_soft_tokens",
        "image_seq_length",
        "allowed_max_soft_tokens",
        "video_max_soft_tokens",
        "video_num_frames",
    )
    | _facts("procU", audio_samples_per_token=640)
    | _read_again("procU", _4_PROCESSOR, "sampling_rate"),
    token_ids=_read_again(
        "cfgU: Gemma4UnifiedConfig defaults (the Gemma 4 ids)", _4_TOKENS, *_4_TOKENS
    ),
    notes="max_position_embeddings: the hub value was not seen (5.19 default 262144).",
)

_ALL = (
    _gemma3n("E2B", 30, 2048 * 4, 10),
    _gemma3n("E4B", 35, 16_384, 15),
    _E2B,
    _E4B,
    _26B,
    _31B,
    _12B,
)

RELEASED: dict[str, Released] = {r.id: r for r in _ALL}  # instruction-tuned id → facts
RELEASED_IDS: tuple[str, ...] = tuple(RELEASED)  # the seven -it checkpoints
BASE_IDS: tuple[str, ...] = tuple(r.base_id for r in _ALL)  # the same shapes, no -it
_BY_LOWER = {r.id.lower(): r for r in _ALL} | {r.base_id.lower(): r for r in _ALL}


def is_released(model_id: str) -> bool:
    """Whether ``model_id`` is one of the released checkpoints (case-insensitive).

    >>> is_released("google/gemma-4-e4b-it"), is_released("tiny-gemma4")
    (True, False)
    """
    return str(model_id).lower() in _BY_LOWER


def released(model_id: str) -> Released:
    """The facts of a released checkpoint (an -it id or its base id).

    >>> released("google/gemma-4-26B-A4B-it").text["num_experts"].value
    128
    """
    try:
        return _BY_LOWER[str(model_id).lower()]
    except KeyError:
        raise ValueError(
            f"{model_id!r} is not a released Gemma 3n / Gemma 4 checkpoint; choose one of "
            f"{', '.join(RELEASED_IDS)} (or their base ids without -it)."
        ) from None


def _values(block: dict[str, Fact] | None) -> dict[str, Any]:
    import copy

    return {k: copy.deepcopy(f.value) for k, f in (block or {}).items()}


def released_config(model_id: str) -> Any:
    """The transformers config of a released checkpoint, built offline from the facts.

    Instruction-tuned ids stop on ``[<eos>, <turn|>/<end_of_turn>]`` (``eos_token_id`` [1,
    106], as the converters write with a chat template); base ids on ``<eos>`` (1).

    >>> released_config("google/gemma-4-31B-it").text_config.per_layer_config[5].head_dim
    512
    """
    r = released(model_id)
    instruct = str(model_id).lower() == r.id.lower()
    text, vision, audio = _values(r.text), _values(r.vision), _values(r.audio)
    tokens = _values(r.token_ids)
    eos = [1, 106] if instruct else 1
    spec = get_family(r.model_type)
    # The vision_config key vLLM reads the start-up image budget from (none for Gemma 3n,
    # whose image is always the same count).
    budget_key = spec.budget_config_field
    top, text_cls, vision_cls, audio_cls = (
        spec.classes.resolve(part)
        for part in ("config", "text_config", "vision_config", "audio_config")
    )
    budget = vision.pop(budget_key) if budget_key else None
    vision_config = vision_cls(**vision)
    if budget_key:
        setattr(vision_config, budget_key, budget)  # what vLLM reads (not a 5.19 field)
    config = top(
        text_config=text_cls(**text, eos_token_id=eos),
        vision_config=vision_config,
        audio_config=audio_cls(**audio) if r.has_audio else None,
        **tokens,
    )
    config.architectures = [r.architecture]
    config._name_or_path = str(model_id)
    return config
