"""PromptLayout describes the real processor's expanded prompt."""

import numpy as np
import pytest

import gemma_explore as ge


@pytest.fixture(scope="module")
def clip():
    return (np.random.RandomState(1).uniform(-0.2, 0.2, 16_000 * 3).astype(np.float32), 16_000)


def _mixed(photo, clip, text="Look:"):
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": text},
                {"type": "image", "image": photo},
                {"type": "audio", "audio": clip},
                {"type": "text", "text": "What?"},
            ],
        }
    ]


def test_segments_tile_the_prompt(tiny, photo, clip):
    layout = ge.layout_prompt(_mixed(photo, clip), bundle=tiny)
    pos = 0
    for seg in layout.segments:
        assert seg.start == pos and seg.length > 0
        pos = seg.end
    assert pos == layout.num_tokens == len(layout.tokens)
    assert sum(layout.counts().values()) == layout.num_tokens
    assert layout.segments[0].kind == "bos" and layout.input_ids.count(2) == 1


def test_placeholders_agree_with_plans(tiny, photo, clip):
    layout = ge.layout_prompt(_mixed(photo, clip), bundle=tiny)
    image, audio = layout.placeholders
    assert (image.modality, audio.modality) == ("image", "audio")
    assert image.num_embeds == ge.plan_image(photo, family=tiny.family).num_soft_tokens
    assert audio.num_embeds == ge.plan_audio(clip, family=tiny.family).num_soft_tokens
    assert layout.agrees
    spec = tiny.spec
    for pos in image.embed_positions:
        assert layout.input_ids[pos] == spec.id_of(spec.image_token)
    for pos in audio.embed_positions:
        assert layout.input_ids[pos] == spec.id_of(spec.audio_token)


def test_gemma4_markers_wrap_each_run(tiny4, photo):
    layout = ge.layout_prompt("Describe.", bundle=tiny4, images=[photo], max_soft_tokens=70)
    (ph,) = layout.placeholders
    ids = layout.input_ids
    assert ids[ph.start] == 255999 and ids[ph.start + ph.length - 1] == 258882
    assert ph.length == ph.num_embeds + 2
    assert layout.max_soft_tokens == 70
    assert layout.newline_merges == ()


def test_gemma3n_newline_merges(tiny3n, photo, clip):
    # Image then audio: the image's closing "\n\n" and the audio's opening "\n\n" merge
    # into one "\n\n\n\n" token; a "\n" before the image would make "\n\n\n".
    layout = ge.layout_prompt(_mixed(photo, clip), bundle=tiny3n)
    merges = {m.token: m for m in layout.newline_merges}
    assert "\n\n\n\n" in merges
    m = merges["\n\n\n\n"]
    assert m.parts == ("\n\n", "\n\n")
    assert "closing wrapper of image" in m.note and "opening wrapper of audio" in m.note
    assert layout.input_ids[m.position] == 110
    kinds = [s.kind for s in layout.segments]
    assert "newline_merge" in kinds


def test_gemma3n_newline_before_the_image_merges(tiny3n, photo):
    # The template writes "user\n"; an image right after it adds "\n\n" → one "\n\n\n".
    msgs = [
        {
            "role": "user",
            "content": [{"type": "image", "image": photo}, {"type": "text", "text": "What?"}],
        }
    ]
    layout = ge.layout_prompt(msgs, bundle=tiny3n)
    (ph,) = layout.placeholders
    assert layout.input_ids[ph.start] == 109
    (merge,) = [m for m in layout.newline_merges if m.position == ph.start]
    assert merge.parts == ("\n", "\n\n") and "opening wrapper of image" in merge.note
    # The run starts at the merged token, as vLLM's 260-token range does.
    assert ph.length == 260 and layout.vllm_ranges[0] == ("image", ph.start, 260)


def test_vllm_ranges_follow_vllms_rules(tiny3n, tiny4, photo, clip):
    l3 = ge.layout_prompt(_mixed(photo, clip), bundle=tiny3n)
    assert [r[2] for r in l3.vllm_ranges] == [260, 192]
    # The image's vLLM range reaches into the merged token the audio starts at.
    image, audio = l3.vllm_ranges
    assert image[1] + image[2] == audio[1] + 1
    l4 = ge.layout_prompt(_mixed(photo, clip), bundle=tiny4)
    assert [r[2] for r in l4.vllm_ranges] == [p.length for p in l4.placeholders]


def test_video_timestamps_are_segments(tiny4):
    frames = np.random.RandomState(0).randint(0, 255, (8, 48, 64, 3), np.uint8)
    layout = ge.layout_prompt("What happens?", bundle=tiny4, videos=[(frames, 4.0)])
    stamps = [s for s in layout.segments if s.kind == "timestamp"]
    assert [s.text.strip() for s in stamps] == [
        "00:00",
        "00:00",
        "00:00",
        "00:00",
        "00:01",
        "00:01",
        "00:01",
        "00:01",
    ]
    (ph,) = layout.placeholders
    assert ph.modality == "video" and ph.agrees


def test_double_bos_trap(tiny4):
    text = tiny4.processor.apply_chat_template(
        [{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True
    )
    tok = tiny4.processor.tokenizer
    assert tok.encode(text, add_special_tokens=True)[:2] == [2, 2]  # the trap
    layout = ge.layout_prompt("Hi", bundle=tiny4)
    assert layout.input_ids[:2] != (2, 2)


def test_reprs(tiny4, photo):
    layout = ge.layout_prompt("Hi", bundle=tiny4, images=[photo])
    assert "<|image|> × " in repr(layout) and "✓ image #0" in repr(layout)
    page = layout._repr_html_()
    assert page.count("<span") == len(layout.segments) and "title=" in page


def test_layout_prompt_takes_prepare_inputs_own_inputs(tiny4, photo):
    """One list of a turn's inputs, written on prepare_inputs: layout_prompt's signature
    shows each of them (and ``prepared``), and each reaches the processor."""
    import inspect

    import gemma_explore as ge

    theirs = inspect.signature(ge.prepare_inputs).parameters
    ours = inspect.signature(ge.layout_prompt).parameters
    assert [n for n in theirs if n != "bundle"] == [
        n for n in ours if n not in ("bundle", "prepared")
    ]
    assert all(ours[n].default == theirs[n].default for n in theirs)
    msgs = [{"role": "user", "content": [{"type": "image", "image": photo}]}]
    kept = ge.layout_prompt(msgs, bundle=tiny4, max_soft_tokens=70, add_generation_prompt=False)
    made = ge.prepare_inputs(msgs, bundle=tiny4, max_soft_tokens=70, add_generation_prompt=False)
    assert kept.input_ids == tuple(made.input_ids) and kept.max_soft_tokens == 70
    assert ge.layout_prompt(msgs, bundle=tiny4, prepared=made).input_ids == kept.input_ids
