"""The demo's Image and Audio tabs before and after "compute once": work per request.

The old handlers planned a photo four times, ran the processor twice, and (audio) ran the
feature extractor twice, because each figure and the parity badge recomputed from the
raw input. This replays that old sequence through today's raw-input wrappers (which call
the same compute functions the old ones did) and times it against today's handler in
the same run, with cProfile counts of the calls that matter.

Target (issue 10): the Image tab does half or less of the old path's work per request.

    .venv/bin/python benchmarks/bench_compute_once.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from timing import median_seconds  # benchmarks/ is on sys.path when these scripts run

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.5  # new / old work, at most


def main() -> None:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests" / "app"))
    from test_compute_once import count_calls

    import gemma_explore as ge
    from gemma_explore.app import bundles, tabs
    from gemma_explore.samples import SAMPLES_DIR

    photo, speech = str(SAMPLES_DIR / "photo.jpg"), str(SAMPLES_DIR / "speech.wav")
    for model in ("tiny-gemma4", "tiny-gemma3n"):
        bundle = bundles.get_bundle(model)
        family = bundle.family
        budget = 280 if bundle.spec.image.budgets else None

        def old_image(bundle=bundle, family=family, budget=budget):
            pil = ge.load_image(photo)
            ge.plan_image(pil, family=family, max_soft_tokens=budget)
            ge.show_patch_grid(pil, family=family, max_soft_tokens=budget)
            ge.show_pooled_mask(ge.vision_pooling(pil, max_soft_tokens=budget, bundle=bundle))
            ge.check_image_parity(
                pil, bundle=bundle, max_soft_tokens=budget, use_vllm=False, run_encoder=False
            )

        def old_audio(bundle=bundle, family=family):
            wave, _ = ge.load_audio(speech)
            ge.plan_audio((wave, 16_000), family=family)
            ge.show_mel((wave, 16_000), family=family)
            ge.check_audio_parity(wave, bundle=bundle, use_vllm=False, run_encoder=False)

        def new_image(model=model):
            tabs.image_tab(model, photo, 280)

        def new_audio(model=model):
            tabs.audio_tab(model, speech)

        for tab, old, new in (("image", old_image, new_image), ("audio", old_audio, new_audio)):
            old(), new()  # warm
            old_counts, _ = count_calls(old)
            new_counts, _ = count_calls(new)
            t_old, t_new = median_seconds(old), median_seconds(new)
            print(
                f"{model} {tab} tab: old path {t_old * 1000:.0f} ms, now {t_new * 1000:.0f} ms"
                f" = {t_new / t_old:.2f} × old (target ≤ {TARGET})"
            )
            for label in sorted(set(old_counts) | set(new_counts)):
                print(f"    {label:18s} {old_counts[label]} → {new_counts[label]}")


if __name__ == "__main__":
    main()
