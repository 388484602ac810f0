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
>>> model = build_tiny_model("gemma4")   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from ..families import GEMMA3N, GEMMA4, GEMMA4_UNIFIED, FamilySpec, get_family
from .tokenizer import build_stand_in_tokenizer

__all__ = [
    "TINY_NAMES",
    "tiny_name",
    "build_tiny_model",
    "build_tiny_processor",
    "register_tiny_mobilenet",
    "tiny_config",
]

TINY_NAMES = {
    "tiny-gemma3n": "gemma3n",
    "tiny-gemma4": "gemma4",
    "tiny-gemma4-unified": "gemma4_unified",
}
TINY_MNV5 = "gemma_explore_mnv5_tiny_enc"


def tiny_name(family: str) -> str:
    """The offline tiny bundle of a family.

    >>> tiny_name("gemma4_unified")
    'tiny-gemma4-unified'
    """
    spec = get_family(family)
    return next(name for name, fam in TINY_NAMES.items() if fam == spec.name)


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


def tiny_config(family: str):
    """The transformers config of a tiny bundle (real config classes, small sizes)."""
    spec = get_family(family)
    if spec.name == "gemma3n":
        register_tiny_mobilenet()
        from transformers import (
            Gemma3nAudioConfig,
            Gemma3nConfig,
            Gemma3nTextConfig,
            Gemma3nVisionConfig,
        )

        text = Gemma3nTextConfig(
            **_tiny_text_sizes(GEMMA3N),
            laurel_rank=8,
            altup_num_inputs=2,
            num_kv_shared_layers=0,
            activation_sparsity_pattern=[0.0, 0.0],
        )
        vision = Gemma3nVisionConfig(
            architecture=TINY_MNV5,
            model_args={"channel_multiplier": 0.125},
            hidden_size=2048,  # MobileNet-V5's fusion adapter always outputs 2048 channels
        )
        audio = Gemma3nAudioConfig(
            hidden_size=32,
            conf_num_attention_heads=2,
            conf_num_hidden_layers=1,
            sscp_conv_channel_size=[16, 8],
        )
        return Gemma3nConfig(text_config=text, vision_config=vision, audio_config=audio)

    if spec.name == "gemma4_unified":
        return _tiny_unified_config()

    from transformers import Gemma4AudioConfig, Gemma4Config, Gemma4TextConfig, Gemma4VisionConfig

    text = Gemma4TextConfig(**_tiny_text_sizes(GEMMA4), global_head_dim=32)
    vision = Gemma4VisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=16,
        patch_size=16,
        pooling_kernel_size=3,
    )
    # vLLM reads default_output_length (the default budget) from the vision config.
    vision.default_output_length = GEMMA4.image.default_budget
    audio = Gemma4AudioConfig(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        subsampling_conv_channels=[128, 8],  # the first must be 128 (= mel bins)
        output_proj_dims=32,
    )
    return Gemma4Config(text_config=text, vision_config=vision, audio_config=audio)


def _tiny_unified_config():
    """Unified: a tiny language model, and the embedders at sizes that keep their meaning.

    ``mm_posemb_size`` stays 1120 (a 1×N image at budget 1120 reaches position 1119),
    and ``audio_embed_dim`` stays 640 because it *is* the frame length in samples.
    """
    from transformers import (
        Gemma4UnifiedAudioConfig,
        Gemma4UnifiedConfig,
        Gemma4UnifiedTextConfig,
        Gemma4UnifiedVisionConfig,
    )

    sizes = _tiny_text_sizes(GEMMA4_UNIFIED)
    for key in ("vocab_size_per_layer_input", "hidden_size_per_layer_input"):
        sizes.pop(key)  # Unified's language model has no per-layer embeddings
    text = Gemma4UnifiedTextConfig(**sizes, global_head_dim=32)
    vision = Gemma4UnifiedVisionConfig(
        patch_size=GEMMA4_UNIFIED.image.patch_size,
        pooling_kernel_size=GEMMA4_UNIFIED.image.pooling_kernel,
        mm_embed_dim=32,
        mm_posemb_size=1120,
        output_proj_dims=32,
    )
    # vLLM reads the default image budget from here (transformers never does): a
    # checkpoint without it fails in vLLM with an AttributeError.
    vision.num_soft_tokens = GEMMA4_UNIFIED.image.default_budget
    audio = Gemma4UnifiedAudioConfig(audio_embed_dim=GEMMA4_UNIFIED.audio.samples_per_token)
    return Gemma4UnifiedConfig(text_config=text, vision_config=vision, audio_config=audio)


def build_tiny_model(family: str):
    """A deterministic, randomly initialised tiny model of the real class."""
    import torch

    spec = get_family(family)
    config = tiny_config(spec.name)
    state = torch.random.get_rng_state()
    torch.manual_seed(SEED)
    try:
        if spec.name == "gemma3n":
            from transformers import Gemma3nForConditionalGeneration as cls
        elif spec.name == "gemma4_unified":
            from transformers import Gemma4UnifiedForConditionalGeneration as cls
        else:
            from transformers import Gemma4ForConditionalGeneration as cls
        model = cls(config)
    finally:
        torch.random.set_rng_state(state)
    model.eval()
    return model


def build_tiny_processor(family: str):
    """The real processor class with the released settings and the stand-in tokenizer."""
    spec = get_family(family)
    tokenizer = build_stand_in_tokenizer(spec.name)
    if spec.name == "gemma3n":
        from transformers import (
            Gemma3nAudioFeatureExtractor,
            Gemma3nProcessor,
            SiglipImageProcessor,
        )

        image_processor = SiglipImageProcessor(
            size=dict(zip(("height", "width"), GEMMA3N.image.fixed_size, strict=True)),
            do_resize=True,
            do_rescale=True,
            rescale_factor=1 / 255,
            do_normalize=False,
            image_mean=[0.0, 0.0, 0.0],
            image_std=[1.0, 1.0, 1.0],
            resample=2,  # bilinear, as released
        )
        return Gemma3nProcessor(
            feature_extractor=Gemma3nAudioFeatureExtractor(),
            image_processor=image_processor,
            tokenizer=tokenizer,
            chat_template=tokenizer.chat_template,
            audio_seq_length=GEMMA3N.audio.fixed_placeholders,
            image_seq_length=GEMMA3N.image.fixed_soft_tokens,
        )

    if spec.name == "gemma4_unified":
        from transformers import (
            Gemma4UnifiedAudioFeatureExtractor,
            Gemma4UnifiedImageProcessor,
            Gemma4UnifiedProcessor,
            Gemma4UnifiedVideoProcessor,
        )

        u = GEMMA4_UNIFIED
        return Gemma4UnifiedProcessor(
            feature_extractor=Gemma4UnifiedAudioFeatureExtractor(
                feature_size=u.audio.samples_per_token,
                audio_samples_per_token=u.audio.samples_per_token,
            ),
            image_processor=Gemma4UnifiedImageProcessor(max_soft_tokens=u.image.default_budget),
            tokenizer=tokenizer,
            video_processor=Gemma4UnifiedVideoProcessor(
                max_soft_tokens=u.image.video_budget, num_frames=u.image.max_video_frames
            ),
            chat_template=tokenizer.chat_template,
            image_seq_length=u.image.default_budget,
            audio_seq_length=u.audio.max_tokens,
            audio_ms_per_token=u.audio.ms_per_token,
        )

    from transformers import (
        Gemma4AudioFeatureExtractor,
        Gemma4ImageProcessor,
        Gemma4Processor,
        Gemma4VideoProcessor,
    )

    return Gemma4Processor(
        feature_extractor=Gemma4AudioFeatureExtractor(),
        image_processor=Gemma4ImageProcessor(max_soft_tokens=GEMMA4.image.default_budget),
        tokenizer=tokenizer,
        video_processor=Gemma4VideoProcessor(),
        chat_template=tokenizer.chat_template,
        image_seq_length=GEMMA4.image.default_budget,
        audio_seq_length=GEMMA4.audio.max_tokens,
        audio_ms_per_token=GEMMA4.audio.ms_per_token,
    )
