"""Tiny, randomly initialised Gemma 3n, Gemma 4 and Gemma 4 Unified bundles, built offline.

They use the *real* transformers classes (``Gemma3nForConditionalGeneration``,
``Gemma4ForConditionalGeneration``, ``Gemma4UnifiedForConditionalGeneration``) and the
*real* processors with the released
settings, shrunk in width and depth so that they build in seconds on a laptop CPU.
Everything before generation — resizing, patches, pooling, mel frames, placeholder
expansion, where embeddings land — is the real computation. The text they generate
is noise: the weights are random.

Gemma 3n's vision tower is timm's MobileNet-V5. The released ``mobilenetv5_300m_enc``
takes several seconds per image on two cores even when thin, because of its attention
blocks at 48×48, so the tiny bundle registers ``gemma_explore_mnv5_tiny_enc``: timm's
own ``MobileNetV5Encoder`` (same stem, block types, multi-scale fusion adapter and 2048
× 16 × 16 output) with one block per stage. It is registered when a tiny 3n is first
built; ``gemma_explore.load(folder)`` registers it before loading a saved tiny 3n
checkpoint (plain ``from_pretrained`` needs ``register_tiny_mobilenet()`` first).

>>> from gemma_explore.models.tiny import build_tiny_model
>>> model = build_tiny_model("gemma4")
>>> model.config.text_config.num_hidden_layers < 10  # a tiny model of the real class
True
"""

from __future__ import annotations

from typing import Any

from gemma_explore.facts.families import FAMILIES, FamilySpec, get_family
from gemma_explore.models.tokenizer import chat_template
from gemma_explore.models.vocabulary import tiny_tokenizer

__all__ = [
    "TINY_NAMES",
    "tiny_name",
    "build_tiny_model",
    "build_tiny_processor",
    "register_tiny_mobilenet",
    "tiny_config",
]

TINY_NAMES = {spec.tiny_name: spec.name for spec in FAMILIES.values()}  # bundle → family
TINY_MNV5 = "gemma_explore_mnv5_tiny_enc"


def tiny_name(family: str | FamilySpec) -> str:
    """The offline tiny bundle of a family.

    >>> tiny_name("gemma4_unified")
    'tiny-gemma4-unified'
    """
    return get_family(family).tiny_name


SEED = 1234  # tiny weights are deterministic

_TINY_ARCH = [
    # One block per stage of timm's MobileNet-V5 (the 300m encoder has 3/8/19/15).
    ["er_r1_k3_s2_e4_c128"],  # 768 → stem 384 → 192
    ["uir_r1_a3_k5_s2_e6_c256"],  # → 96
    # → 48; attention with keys downsampled to 24×24 (stages end on a conv block, as released)
    ["uir_r1_a5_k5_s2_e6_c512", "mqa_r1_k3_h2_s2_d16_c512", "uir_r1_a0_k0_s1_e2_c512"],
    # → 24; the multi-scale fusion adapter fuses the last two stages → 2048 × 16 × 16
    ["uir_r1_a5_k5_s2_e6_c1024", "mqa_r1_k3_h2_s1_d16_c1024", "uir_r1_a0_k0_s1_e2_c1024"],
]


def register_tiny_mobilenet() -> None:
    """Register the slim MobileNet-V5 encoder with timm (idempotent; called before any
    tiny Gemma 3n model is built or loaded, not at import, so importing the package
    stays cheap)."""
    try:
        import timm
        from timm.models import mobilenetv5 as mnv5
        from timm.models._registry import register_model
    except ImportError:  # timm missing: tiny 3n cannot be built, real checkpoints still can
        return
    if TINY_MNV5 in timm.list_models(TINY_MNV5):
        return
    import inspect
    from functools import partial

    from timm.models._efficientnet_builder import decode_arch_def, round_channels

    def gemma_explore_mnv5_tiny_enc(pretrained: bool = False, **kwargs: Any):
        multiplier = kwargs.pop("channel_multiplier", 0.125)
        model_kwargs = dict(
            block_args=decode_arch_def(_TINY_ARCH),
            stem_size=16,
            fix_stem=True,
            round_chs_fn=partial(round_channels, multiplier=multiplier),
            norm_layer=mnv5.RmsNorm2d,
            act_layer=mnv5._GELU,
            layer_scale_init_value=1e-5,
            pad_type=kwargs.pop("pad_type", "same"),
        )
        # timm's factory also passes hub options (cache_dir, pretrained_cfg, …): keep
        # only what the encoder takes.
        accepted = inspect.signature(mnv5.MobileNetV5Encoder).parameters
        model_kwargs.update({k: v for k, v in kwargs.items() if k in accepted})
        return mnv5.MobileNetV5Encoder(**model_kwargs)

    gemma_explore_mnv5_tiny_enc.__module__ = mnv5.__name__
    register_model(gemma_explore_mnv5_tiny_enc)


def _tiny_text_sizes(spec: FamilySpec) -> dict[str, Any]:
    """The language model's sizes, shared by both tiny families: the real vocabulary
    (so real ids work), two layers (one sliding, one full), everything else small."""
    return dict(
        vocab_size=spec.vocab_size,
        vocab_size_per_layer_input=spec.text_vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        hidden_size_per_layer_input=8,
        layer_types=["sliding_attention", "full_attention"],
        sliding_window=64,
        max_position_embeddings=8192,
    )


def _tiny_gemma3n_config(spec: FamilySpec) -> dict[str, Any]:
    """Gemma 3n's sub-configs: LAuReL, AltUp, the slim MobileNet-V5, a one-layer Conformer."""
    register_tiny_mobilenet()
    c = spec.classes
    text = c.resolve("text_config")(
        **_tiny_text_sizes(spec),
        laurel_rank=8,
        altup_num_inputs=2,
        num_kv_shared_layers=0,
        activation_sparsity_pattern=[0.0, 0.0],
    )
    vision = c.resolve("vision_config")(
        architecture=TINY_MNV5,
        model_args={"channel_multiplier": 0.125},
        hidden_size=2048,  # MobileNet-V5's fusion adapter always outputs 2048 channels
    )
    audio = c.resolve("audio_config")(
        hidden_size=32,
        conf_num_attention_heads=2,
        conf_num_hidden_layers=1,
        sscp_conv_channel_size=[16, 8],
    )
    return dict(text_config=text, vision_config=vision, audio_config=audio)


def _tiny_gemma4_config(spec: FamilySpec) -> dict[str, Any]:
    """Gemma 4's sub-configs: a one-layer ViT with the released patch and pooling, a
    one-layer Conformer."""
    c = spec.classes
    text = c.resolve("text_config")(**_tiny_text_sizes(spec), global_head_dim=32)
    vision = c.resolve("vision_config")(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=16,
        patch_size=spec.image.patch_size,
        pooling_kernel_size=spec.image.pooling_kernel,
    )
    audio = c.resolve("audio_config")(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        subsampling_conv_channels=[spec.audio.mel_bins, 8],  # the first must be the mel bins
        output_proj_dims=32,
    )
    return dict(text_config=text, vision_config=vision, audio_config=audio)


def _tiny_unified_config(spec: FamilySpec) -> dict[str, Any]:
    """Unified: a tiny language model, and the embedders at sizes that keep their meaning.

    ``mm_posemb_size`` stays 1120 (a 1×N image at budget 1120 reaches position 1119),
    and ``audio_embed_dim`` stays 640 because it *is* the frame length in samples.
    """
    c = spec.classes
    sizes = _tiny_text_sizes(spec)
    for key in ("vocab_size_per_layer_input", "hidden_size_per_layer_input"):
        sizes.pop(key)  # Unified's language model has no per-layer embeddings
    text = c.resolve("text_config")(**sizes, global_head_dim=32)
    vision = c.resolve("vision_config")(
        patch_size=spec.image.patch_size,
        pooling_kernel_size=spec.image.pooling_kernel,
        mm_embed_dim=32,
        mm_posemb_size=max(spec.image.budgets),
        output_proj_dims=32,
    )
    audio = c.resolve("audio_config")(audio_embed_dim=spec.audio.samples_per_token)
    return dict(text_config=text, vision_config=vision, audio_config=audio)


# The small sizes are choices about each transformers config class (its own knobs: 3n's
# LAuReL and AltUp, Gemma 4's global head size, Unified's embedders), so the builder is
# picked by the config class the family's spec names, never by the family's name.
_TINY_SUBCONFIGS = {
    "Gemma3nConfig": _tiny_gemma3n_config,
    "Gemma4Config": _tiny_gemma4_config,
    "Gemma4UnifiedConfig": _tiny_unified_config,
}


def tiny_config(family: str | FamilySpec):
    """The transformers config of a tiny bundle (real config classes, small sizes).

    >>> tiny_config("gemma4").vision_config.default_output_length
    280
    """
    spec = get_family(family)
    config = spec.classes.resolve("config")(**_TINY_SUBCONFIGS[spec.classes.config](spec))
    if spec.budget_config_field:
        # vLLM reads the default image budget from here (transformers never does): a
        # checkpoint without it fails in vLLM with an AttributeError.
        setattr(config.vision_config, spec.budget_config_field, spec.image.default_budget)
    return config


def build_tiny_model(family: str | FamilySpec):
    """A deterministic, randomly initialised tiny model of the real class.

    >>> type(build_tiny_model("gemma4")).__name__
    'Gemma4ForConditionalGeneration'
    """
    import torch

    spec = get_family(family)
    config = tiny_config(spec)
    state = torch.random.get_rng_state()
    torch.manual_seed(SEED)
    try:
        model = spec.classes.resolve("model")(config)
    finally:
        torch.random.set_rng_state(state)
    model.eval()
    return model


def _image_processor(spec: FamilySpec) -> Any:
    """The image processor at the released settings: 3n squashes every image to its
    fixed size (SigLIP's processor, no normalisation); Gemma 4 and Unified resize to a
    soft-token budget."""
    cls = spec.classes.resolve("image_processor")
    img = spec.image
    if img.fixed_size is None:
        return cls(max_soft_tokens=img.default_budget)
    return cls(
        size=dict(zip(("height", "width"), img.fixed_size, strict=True)),
        do_resize=True,
        do_rescale=True,
        rescale_factor=1 / 255,
        do_normalize=False,
        image_mean=[0.0, 0.0, 0.0],
        image_std=[1.0, 1.0, 1.0],
        resample=img.resample,  # 3n: bilinear, as released
    )


def _feature_extractor(spec: FamilySpec) -> Any:
    """The audio feature extractor: log-mel at its defaults, or raw frames of
    ``samples_per_token`` samples (Unified)."""
    cls = spec.classes.resolve("feature_extractor")
    n = spec.audio.samples_per_token
    return cls() if n is None else cls(feature_size=n, audio_samples_per_token=n)


def build_tiny_processor(family: str | FamilySpec):
    """The real processor class with the released settings and the best tokenizer on this
    machine (:func:`~gemma_explore.models.vocabulary.tiny_tokenizer`: a cached released
    checkpoint's, else the fetched Gemma vocabulary, else the stand-in).

    >>> build_tiny_processor("gemma3n").image_seq_length
    256
    """
    spec = get_family(family)
    tokenizer = tiny_tokenizer(spec)
    img, audio = spec.image, spec.audio
    kwargs: dict[str, Any] = dict(
        feature_extractor=_feature_extractor(spec),
        image_processor=_image_processor(spec),
        tokenizer=tokenizer,
        # A cached checkpoint's own template when it has one (Unified's may not).
        chat_template=tokenizer.chat_template or chat_template(spec),
        # 3n: a fixed count per item; Gemma 4: the default budget and the clip cap.
        image_seq_length=img.fixed_soft_tokens or img.default_budget,
        audio_seq_length=audio.fixed_placeholders or audio.max_tokens,
    )
    if spec.classes.video_processor:
        kwargs["video_processor"] = spec.classes.resolve("video_processor")(
            max_soft_tokens=img.video_budget, num_frames=img.max_video_frames
        )
    if audio.fixed_placeholders is None:  # the count follows the clip's length
        kwargs["audio_ms_per_token"] = audio.ms_per_token
    return _construct(spec.classes.resolve("processor"), kwargs)


def _construct(cls: type, kwargs: dict[str, Any]) -> Any:
    """``cls(**kwargs)`` for a transformers processor class, without the import of
    mistral_common its argument check makes: ``ProcessorMixin`` checks the tokenizer
    against ``(PreTrainedTokenizerBase, MistralCommonBackend)``, and naming the second
    imports transformers' Mistral module and mistral_common (about 0.3 s of CPU and 300+
    files where vLLM installed it: .venv, not .venv-demo). A ``PreTrainedTokenizerBase``
    passes that check whatever the second class is, so for one the check answers at once;
    every other argument gets transformers' own check. The override lives on this instance
    only while ``__init__`` runs."""
    from transformers import PreTrainedTokenizerBase

    original = cls.check_argument_for_proper_class
    processor = cls.__new__(cls)

    def check(argument_name: str, argument: Any) -> Any:
        if argument_name == "tokenizer" and isinstance(argument, PreTrainedTokenizerBase):
            return PreTrainedTokenizerBase
        return original(processor, argument_name, argument)

    processor.check_argument_for_proper_class = check
    try:
        cls.__init__(processor, **kwargs)
    finally:
        del processor.check_argument_for_proper_class
    return processor
