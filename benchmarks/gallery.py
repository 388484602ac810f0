"""Write every figure for the bundled samples to a folder (default: build/gallery).

.venv/bin/python benchmarks/gallery.py [OUT_DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import gemma_explore as ge
from gemma_explore.samples import sample_photo, sample_speech, sample_video


def figures() -> dict:
    """Every figure the package draws, for the bundled samples (name → Figure)."""
    b4, b3 = ge.load("tiny-gemma4"), ge.load("tiny-gemma3n")
    photo, speech, video = sample_photo(), sample_speech(), sample_video()
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": photo},
                {"type": "audio", "audio": speech},
                {"type": "text", "text": "What do you see and hear?"},
            ],
        }
    ]
    return {
        "patch_grid_gemma4": ge.show_patch_grid(photo, family="gemma4"),
        "patch_grid_gemma4_budgets": ge.show_patch_grid(
            photo, family="gemma4", max_soft_tokens="all"
        ),
        "patch_grid_gemma3n": ge.show_patch_grid(photo, family="gemma3n"),
        "pooled_mask_gemma4": ge.show_pooled_mask(ge.vision_pooling(b4, photo)),
        "pooled_mask_gemma3n": ge.show_pooled_mask(ge.vision_pooling(b3, photo)),
        "mel_gemma4": ge.show_mel(speech, family="gemma4"),
        "mel_gemma3n": ge.show_mel(speech, family="gemma3n"),
        "video_frames": ge.show_video_frames(video),
        "layout_gemma4": ge.show_layout(ge.layout_prompt(msgs, bundle=b4)),
        "layout_gemma3n": ge.show_layout(ge.layout_prompt(msgs, bundle=b3)),
        "prompt_explorer_gemma4": ge.explore_prompt(b4).figure,
        "image_explorer_gemma3n": _explored_image(photo),
        # Gemma 4 Unified (no encoder), and the three families side by side.
        "patch_grid_unified": ge.show_patch_grid(photo, family="gemma4_unified"),
        "audio_frames_unified": ge.show_audio_frames(speech),
        "three_way": ge.show_three_way(ge.compare_families(photo, speech)),
        # Serving: what vLLM reserves, and the attention masks.
        "serving_gemma4": ge.show_serving(ge.plan_serving(b4, max_model_len=8192)),
        "attention_gemma4_vision": ge.show_attention(
            ge.attention_mask(
                b4,
                ge.layout_prompt(msgs, bundle=b4, max_soft_tokens=70),
                use_bidirectional_attention="vision",
            )
        ),
    }


def _explored_image(photo):
    ex = ge.explore_image(photo)
    ex.family.value = "gemma3n"
    return ex.figure


def main(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, fig in figures().items():
        paths.append(ge.save_figure(fig, out / f"{name}.png", dpi=110))
        print(paths[-1])
    return paths


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("build/gallery"))
