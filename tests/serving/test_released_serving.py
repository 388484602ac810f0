"""The released checkpoints planned offline: configs from the built-in facts (or a local
HF cache copy, which wins), KV bytes and weights against arithmetic written out here,
vLLM's ModelConfig and MultiModalBudget on a config-only folder, and ge.load(weights=False).
"""

from __future__ import annotations

import json

import pytest

import gemma_explore as ge
from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.facts.released import BASE_IDS, RELEASED_IDS, released_config
from gemma_explore.models.checkpoints import BUILT_IN
from gemma_explore.serving.caches import SERVING_MODELS
from gemma_explore.serving.plan import plan_serving, serving_model


@pytest.fixture
def empty_hub_cache(tmp_path, monkeypatch):
    """No Hugging Face cache and no network: what an offline operator has."""
    import huggingface_hub.constants as constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    kept = dict(SERVING_MODELS)  # plans made before used another cache: set them aside
    SERVING_MODELS.clear()
    yield tmp_path / "hub"
    SERVING_MODELS.clear()
    SERVING_MODELS.update(kept)


@pytest.mark.parametrize("model_id", RELEASED_IDS + BASE_IDS)
def test_every_released_id_plans_offline_from_the_built_in_facts(empty_hub_cache, model_id):
    plan = plan_serving(model_id, max_model_len=32_768)
    assert plan.model.config_source == BUILT_IN
    assert plan.steps[:2] == (f"{plan.vllm.label}'s rules ({plan.vllm.chosen_because})",
                              f"config: {BUILT_IN}")  # fmt: skip
    config = released_config(model_id)
    audio = config.audio_config is not None
    assert ("audio" in plan.model.modalities) == audio
    assert plan.model.hidden_size == config.get_text_config().hidden_size


def test_a_cached_config_wins_over_the_facts(empty_hub_cache):
    """A config.json in the local HF cache (here with a 2048 window) is what the plan uses."""
    model_id = "google/gemma-4-31B-it"
    snapshot = empty_hub_cache / "models--google--gemma-4-31B-it" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (empty_hub_cache / "models--google--gemma-4-31B-it" / "refs").mkdir()
    (empty_hub_cache / "models--google--gemma-4-31B-it" / "refs" / "main").write_text("abc123")
    released_config(model_id).save_pretrained(snapshot)
    saved = json.loads((snapshot / "config.json").read_text())
    saved["text_config"]["sliding_window"] = 2048
    (snapshot / "config.json").write_text(json.dumps(saved))
    cached = plan_serving(model_id, max_model_len=32_768)
    assert cached.model.config_source.startswith("local Hugging Face cache")
    assert {la.window for la in cached.layers if la.window} == {2048}
    SERVING_MODELS.clear()
    (snapshot / "config.json").unlink()
    built_in = plan_serving(model_id, max_model_len=32_768)
    assert built_in.model.config_source == BUILT_IN
    assert {la.window for la in built_in.layers if la.window} == {1024}


# Bytes per token in bfloat16, written out: layers × 2 (K and V) × KV heads × head dim × 2 B.
# Gemma 4's full layers use global_head_dim 512 (and, with attention_k_eq_v, the global KV
# heads); KV-shared layers (the last num_kv_shared_layers) store nothing.
KV_PER_TOKEN = {
    # 30 layers, 4 sliding + 1 full; the last 10 share: 20 store (16 sliding, 4 full)
    "google/gemma-3n-E2B-it": (4 * 2 * 2 * 256 * 2, 16 * 2 * 2 * 256 * 2),
    # 35 layers; the last 15 share: 20 store (16 sliding, 4 full)
    "google/gemma-3n-E4B-it": (4 * 2 * 2 * 256 * 2, 16 * 2 * 2 * 256 * 2),
    # 35 layers, 4 + 1; the last 20 share: 15 store (12 sliding, 3 full), 1 KV head
    "google/gemma-4-E2B-it": (3 * 2 * 1 * 512 * 2, 12 * 2 * 1 * 256 * 2),
    # 42 layers, 5 + 1; the last 18 share: 24 store (20 sliding, 4 full), 2 KV heads
    "google/gemma-4-E4B-it": (4 * 2 * 2 * 512 * 2, 20 * 2 * 2 * 256 * 2),
    # 30 layers, 5 + 1: 25 sliding × 8 KV heads; 5 full × 2 global KV heads
    "google/gemma-4-26B-A4B-it": (5 * 2 * 2 * 512 * 2, 25 * 2 * 8 * 256 * 2),
    # 60 layers: 50 sliding × 16 KV heads; 10 full × 4 global KV heads
    "google/gemma-4-31B-it": (10 * 2 * 4 * 512 * 2, 50 * 2 * 16 * 256 * 2),
    # 48 layers: 40 sliding × 8 KV heads; 8 full × 1 global KV head
    "google/gemma-4-12B-it": (8 * 2 * 1 * 512 * 2, 40 * 2 * 8 * 256 * 2),
}


@pytest.mark.parametrize("model_id", RELEASED_IDS)
def test_kv_bytes_per_token_equal_the_written_out_arithmetic(model_id):
    plan = plan_serving(model_id)
    full, sliding = KV_PER_TOKEN[model_id]
    assert (plan.kv_bytes_per_token_full, plan.kv_bytes_per_token_sliding) == (full, sliding)


def _gemma4_vision(h: int, inter: int, layers: int, head_dim: int) -> int:
    """Gemma 4's ViT: a 2 × 10240 position table, the 768 → h patch projection, and per
    layer q/k/v/o (h²), q/k norms (head_dim), a gated MLP (3 × inter × h), four norms."""
    per_layer = 4 * h * h + 2 * head_dim + 3 * inter * h + 4 * h
    return 2 * 10_240 * h + 768 * h + layers * per_layer


def test_weights_of_the_31b_equal_the_written_out_arithmetic():
    h, v, inter = 5376, 262_144, 21_504
    norms = 4 * h
    mlp = 3 * inter * h
    # sliding: q 32 × 256, k and v 16 × 256 each, o back; q/k norms of 256
    sliding = h * 32 * 256 + 2 * h * 16 * 256 + 32 * 256 * h + 2 * 256 + mlp + norms
    # full: q 32 × 512, k 4 × 512 and no v (attention_k_eq_v: V is K), o back; norms of 512
    full = h * 32 * 512 + h * 4 * 512 + 32 * 512 * h + 2 * 512 + mlp + norms
    language = v * h + 50 * sliding + 10 * full + h
    vision = _gemma4_vision(1152, 4304, 27, 72)
    model = serving_model("google/gemma-4-31B-it")
    assert model.num_parameters_by_part == {
        "vision_tower": vision,
        "language_model": language,
        "embed_vision": 1152 * h,
    }
    assert vision == 569_548_080  # the 0.57 B tower the issue reports missing
    assert model.num_parameters == language + vision + 1152 * h
    assert model.per_layer_embedding_parameters == 0 and model.experts_per_token is None


def test_the_moe_counts_every_expert_and_the_active_ones():
    """26B-A4B: 128 experts of width 704 per layer (gate_up 2 × 704 × h, down h × 704);
    8 run per token."""
    h, layers = 2816, 30
    experts = layers * 128 * (2 * 704 * h + h * 704)
    model = serving_model("google/gemma-4-26B-A4B-it")
    assert model.expert_parameters == experts
    assert model.experts_per_token == (8, 128)
    assert model.active_parameters == model.num_parameters - experts * 120 // 128
    assert model.num_parameters_by_part["vision_tower"] == _gemma4_vision(1152, 4304, 27, 72)


@pytest.mark.parametrize(
    ("model_id", "layers", "hidden"),
    [("google/gemma-4-E2B-it", 35, 1536), ("google/gemma-4-E4B-it", 42, 2560)],
)
def test_e_models_report_the_per_layer_embeddings_apart(model_id, layers, hidden):
    """Gemma 4 E-models: a 262144 × (layers × 256) table, and their 768-d 16-layer tower."""
    model = serving_model(model_id)
    assert model.per_layer_embedding_parameters == 262_144 * layers * 256
    assert model.num_parameters_by_part["vision_tower"] == _gemma4_vision(768, 3072, 16, 64)
    assert any("per-layer embedding" in step for step in plan_serving(model_id).steps)


@pytest.mark.parametrize("model_id", ["google/gemma-4-31B-it", "google/gemma-3n-E2B-it"])
def test_load_without_weights_gives_a_meta_bundle_that_plans_and_lays_out(
    empty_hub_cache, model_id
):
    from gemma_explore.inside.attention import attention_mask

    bundle = ge.load(model_id, weights=False)
    assert bundle.device == "meta" and bundle.model.device.type == "meta"
    assert bundle.model.config.get_text_config().num_hidden_layers == (
        released_config(model_id).get_text_config().num_hidden_layers
    )
    plan = plan_serving(bundle)
    assert plan.model.num_parameters == serving_model(model_id).num_parameters
    assert plan.model.config_source == BUILT_IN  # no cache on this machine
    from gemma_explore.samples import sample_photo

    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": sample_photo()},
                {"type": "text", "text": "Describe it."},
            ],
        }
    ]
    layout = ge.layout_prompt(msgs, bundle=bundle)
    masks = attention_mask(layout, bundle=bundle)
    assert len(masks.layer_types) == len(plan.layers)
    assert masks.sliding_window == (1024 if "31B" in model_id else 512)
    if "31B" in model_id:  # use_bidirectional_attention="vision": image tokens see ahead
        assert masks.future_pairs("sliding_attention") > 0
    assert ("audio" in bundle.modalities) == ("3n" in model_id)


# ----------------------------------------------------------------- vLLM on a config-only folder


def _config_only_folder(root, model_id):
    """config.json from the facts, and the processor at the released settings with the
    stand-in tokenizer: what vLLM's ModelConfig needs (no weights)."""
    from gemma_explore.models.tiny import build_tiny_processor

    config = released_config(model_id)
    folder = root / model_id.replace("/", "--")
    config.save_pretrained(folder)
    build_tiny_processor(config.model_type).save_pretrained(folder)
    return folder


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
@pytest.mark.parametrize(
    "model_id",
    [
        "google/gemma-3n-E2B-it",
        "google/gemma-4-E4B-it",
        "google/gemma-4-31B-it",
        "google/gemma-4-12B-it",
    ],
)
def test_vllm_accepts_the_config_and_its_budget_equals_the_plan(tmp_path, model_id):
    from vllm.config import DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig
    from vllm.multimodal import MULTIMODAL_REGISTRY
    from vllm.multimodal.encoder_budget import MultiModalBudget

    folder = _config_only_folder(tmp_path, model_id)
    mml, mnbt = 16_384, 8192
    limits = {"image": 4, "video": 1} if "31B" in model_id else None
    mc = ModelConfig(
        model=str(folder),
        tokenizer=str(folder),
        dtype="bfloat16",
        max_model_len=mml,
        limit_mm_per_prompt=limits,
    )
    text = json.loads((folder / "config.json").read_text())["text_config"]
    assert mc.hf_text_config.num_hidden_layers == text["num_hidden_layers"]
    assert mc.get_sliding_window() == text["sliding_window"]
    sc = SchedulerConfig(
        max_model_len=mml,
        is_encoder_decoder=False,
        max_num_batched_tokens=mnbt,
        enable_chunked_prefill=True,
        max_num_seqs=128,
    )
    vc = VllmConfig(model_config=mc, scheduler_config=sc, device_config=DeviceConfig(device="cpu"))
    budget = MultiModalBudget(vc, MULTIMODAL_REGISTRY)
    plan = plan_serving(
        model_id,
        max_model_len=mml,
        limit_mm_per_prompt=limits,
        max_num_batched_tokens=mnbt,
        max_num_seqs=128,
    )
    assert plan.max_tokens_per_item == dict(budget.mm_max_toks_per_item)
    assert plan.max_items_per_prompt == dict(budget.mm_max_items_per_prompt)
    assert plan.max_items_per_batch == dict(budget.mm_max_items_per_batch)
    assert plan.encoder_cache_size == budget.encoder_cache_size
    assert plan.encoder_compute_budget == budget.encoder_compute_budget


@pytest.mark.parametrize("model_id", RELEASED_IDS)
def test_encoder_sizes_of_a_released_id_are_its_own_towers(model_id):
    """The 26B-A4B and 31B report their 1152-wide 27-layer tower, not the E-models'."""
    from gemma_explore.models.encoders import encoder_sizes

    sizes = encoder_sizes(model_id)
    parts = serving_model(model_id).num_parameters_by_part
    if "vision_tower" in parts:  # 3n and Gemma 4: the towers the meta build holds
        assert sizes.vision_params == parts["vision_tower"]
        assert sizes.audio_params == parts.get("audio_tower", 0)
    else:  # Unified: the embedders are the whole path
        assert sizes.vision_params == parts["embed_vision"]
        assert sizes.audio_params == parts["embed_audio"]


def test_the_advice_splits_the_31b_when_it_does_not_fit():
    """Tensor parallelism by the plan's own start-up arithmetic (the KV estimate and the
    capacity at each size): the 31B's 58 GiB of bf16 weights start on one 80 GB GPU but
    need two 40 GB GPUs. The flag carries its value, never a label ("…size: 1:")."""
    from gemma_explore.engines.serve_args import serving_advice
    from gemma_explore.serving.kv import capacity, kv_memory_estimate

    def starts(gib: int, tp: int) -> bool:
        est = kv_memory_estimate(plan, gpu_memory_bytes=gib * 2**30, tensor_parallel_size=tp)
        kv = est.kv_cache_memory_bytes
        return capacity(plan, kv_cache_memory_bytes=kv, tensor_parallel_size=tp).fits

    plan = plan_serving("google/gemma-4-31B-it", max_model_len=8192)
    args = {"model": "google/gemma-4-31B-it"}
    big = serving_advice(args, plan=plan, gpu_memory_gib=80)
    small = serving_advice(args, plan=plan, gpu_memory_gib=40)
    assert starts(80, 1) and not starts(40, 1) and starts(40, 2)
    assert big["--tensor-parallel-size 1"].startswith("one GPU is enough")
    assert small["--tensor-parallel-size 2"].startswith("the fewest GPUs that start it")
    assert set(big) == {
        "--tensor-parallel-size 1",
        "--quantization fp8",
        "--kv-cache-dtype fp8",
        "--enable-prefix-caching",
        "--max-num-seqs",
    }
    e2b = serving_advice(
        {"model": "google/gemma-4-E2B-it"},
        plan=plan_serving("google/gemma-4-E2B-it"),
        gpu_memory_gib=24,
    )
    assert "--tensor-parallel-size 1" in e2b


def test_the_recipe_says_larger_per_request_budgets_are_honoured():
    from gemma_explore.engines.serve_args import engine_args
    from gemma_explore.serving.recipe import Workload

    reasons: dict[str, str] = {}
    engine_args(
        "google/gemma-4-31B-it", workload=Workload(images=2, max_soft_tokens=280), reasons=reasons
    )
    why = reasons["mm_processor_kwargs"]
    assert "larger ones too" in why and "less, not more" not in why
    assert "allocated on demand" in reasons["max_model_len"]
