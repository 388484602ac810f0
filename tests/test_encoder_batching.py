"""Our encoder chunk, graph budgets and packing equal vLLM 0.32's own functions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gemma_explore.encoder_batching import encoder_chunk, encoder_graph_budgets, pack_encoder_items
from gemma_explore.inference.vllm_processor import vllm_available
from tests.conftest import examples

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(not vllm_available(), reason="vllm is not installed"),
]
GIB = 2**30


@settings(max_examples=examples(0.5))
@given(
    patches=st.sampled_from([0, 630, 1260, 2520, 5040, 10080]),
    free=st.integers(0, 200 * GIB),
    total=st.integers(1, 200 * GIB),
    size=st.sampled_from([10240, 1024]),
)
def test_chunk_equals_vllms(patches, free, total, size):
    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration as G

    ours = encoder_chunk(patches, free_bytes=free, total_bytes=total, position_embedding_size=size)
    assert ours.chunk == G._encoder_chunk(patches, free, total, size)


@pytest.mark.parametrize("mnbt", [70, 512, 2048, 8192, 16384])
@pytest.mark.parametrize("mml", [1024, 8192, 32768])
def test_budgets_equal_vllms(mnbt, mml):
    from vllm.v1.worker.encoder_cudagraph import EncoderCudaGraphManager as M

    graphs = encoder_graph_budgets(max_num_batched_tokens=mnbt, max_model_len=mml)
    high = min(mnbt, mml)
    assert list(graphs.token_budgets) == M._generate_budgets(70, high)
    assert graphs.max_batch_size == min(high // 70, min(M._generate_budgets(70, high)))


def _vllm_packing(tokens, graphs, seed=False):
    """Run vLLM's own _execute_local with the graphs replaced by a recorder."""
    import torch
    from vllm.v1.worker.encoder_cudagraph import EncoderCudaGraphManager
    from vllm.v1.worker.encoder_cudagraph_defs import EncoderItemSpec

    seen = []

    class Model:
        def postprocess_encoder_output(self, outs, batch, per_item, into, **kw):
            for i in batch:
                into[i] = torch.zeros(1)

        def encoder_eager_forward(self, kwargs, path):
            seen.append((tuple(kwargs["items"]), None))
            return torch.zeros(1)

    class Recorder(EncoderCudaGraphManager):
        def __init__(self):  # no GPU: only what _execute_local reads
            self.path_token_budgets = {"default": list(graphs.token_budgets)}
            self.token_budgets = list(graphs.token_budgets)
            self.max_batch_size = graphs.max_batch_size
            self.graph_misses = 0
            self.model = Model()

        def _get_item_specs(self, mm_kwargs):
            # The seed's item specs: every image packs as the request's widest one.
            path = {"default": max(tokens)} if seed else {}
            return [
                EncoderItemSpec(input_size=t * 9, output_tokens=t, path_output_tokens=path)
                for t in tokens
            ]

        def _select_items(self, mm_kwargs, indices):
            return {"items": list(indices)}, ()

        def _run_budget_graph(self, mm_kwargs, budget, path="default", axis_keys=()):
            seen.append((tuple(mm_kwargs["items"]), budget))
            return torch.zeros(1)

    Recorder()._execute_local({})
    return seen


@settings(max_examples=examples(0.3))
@given(
    tokens=st.lists(
        st.sampled_from([64, 70, 140, 256, 280, 560, 1120, 2496]), min_size=1, max_size=12
    ),
    mnbt=st.sampled_from([512, 2048, 8192]),
    seed=st.booleans(),
)
def test_packing_equals_vllms(tokens, mnbt, seed):
    """0.32's packing, and the seed's (items as wide as the widest) on 0.32's manager."""
    graphs = encoder_graph_budgets(max_num_batched_tokens=mnbt, max_model_len=8192)
    ours = [(b.items, b.budget) for b in pack_encoder_items(tokens, graphs, seed=seed)]
    assert ours == _vllm_packing(tokens, graphs, seed=seed)
