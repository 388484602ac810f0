"""Generation with the tiny bundles on CPU: images, audio, video, streaming, several turns."""

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.models.bundle import Generation


def _image_msg(photo, text="What is in the picture?"):
    return [
        {
            "role": "user",
            "content": [{"type": "image", "image": photo}, {"type": "text", "text": text}],
        }
    ]


def test_generate_with_an_image(tiny, photo):
    gen = tiny.generate(_image_msg(photo), max_new_tokens=6)
    assert isinstance(gen, Generation)
    assert gen.generated_tokens == 6 and isinstance(gen.text, str)
    expected = (
        256 if tiny.family == "gemma3n" else ge.plan_image(photo, family="gemma4").num_soft_tokens
    )
    assert gen.multimodal_tokens == expected
    assert gen.is_random_weights and gen.encoder_s > 0 and gen.prefill_s > 0
    assert str(gen) == gen.text


def test_generate_with_audio(tiny, tone):
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "audio", "audio": (tone, 16000)},
                {"type": "text", "text": "Transcribe."},
            ],
        }
    ]
    gen = tiny.generate(msgs, max_new_tokens=4)
    assert gen.generated_tokens == 4
    assert gen.multimodal_tokens == ge.plan_audio(tone, family=tiny.family).num_soft_tokens


def test_streaming_yields_pieces_that_add_up(tiny, photo):
    pieces = list(tiny.generate(_image_msg(photo), max_new_tokens=5, stream=True))
    plain = tiny.generate(_image_msg(photo), max_new_tokens=5)
    assert pieces and "".join(pieces) == plain.text


def test_generate_is_deterministic(tiny4, photo):
    a = tiny4.generate(_image_msg(photo), max_new_tokens=5).text
    b = tiny4.generate(_image_msg(photo), max_new_tokens=5).text
    assert a == b


def test_gemma4_video_and_budget(tiny4, photo):
    frames = np.random.RandomState(0).randint(0, 255, size=(12, 90, 160, 3), dtype=np.uint8)
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "video", "video": frames, "fps": 6},
                {"type": "image", "image": photo},
                {"type": "text", "text": "Describe."},
            ],
        }
    ]
    gen = tiny4.generate(msgs, max_new_tokens=3, max_soft_tokens=70)
    video = ge.plan_video(frames, fps=6)
    image = ge.plan_image(photo, family="gemma4", max_soft_tokens=70)
    assert gen.multimodal_tokens == video.num_soft_tokens + image.num_soft_tokens


def test_multi_turn(tiny, photo):
    msgs = [
        {
            "role": "user",
            "content": [{"type": "image", "image": photo}, {"type": "text", "text": "Hi"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]},
        {"role": "user", "content": [{"type": "text", "text": "More?"}]},
    ]
    gen = tiny.generate(msgs, max_new_tokens=2)
    assert gen.generated_tokens == 2


def test_video_for_gemma3n_is_refused(tiny3n):
    frames = np.zeros((4, 32, 32, 3), dtype=np.uint8)
    msgs = [{"role": "user", "content": [{"type": "video", "video": frames, "fps": 4}]}]
    with pytest.raises(ge.MediaError, match="no video"):
        tiny3n.generate(msgs, max_new_tokens=1)


def test_bad_budget_lists_the_valid_ones(tiny4, photo):
    with pytest.raises(ValueError, match=r"\[70, 140, 280, 560, 1120\]"):
        tiny4.generate(_image_msg(photo), max_new_tokens=1, max_soft_tokens=300)


def test_corrupt_image_is_a_clear_error_and_the_next_request_works(tiny4, photo):
    msgs = [{"role": "user", "content": [{"type": "image", "image": b"not an image"}]}]
    with pytest.raises(ge.MediaError, match="PNG, JPEG"):
        tiny4.generate(msgs, max_new_tokens=1)
    assert tiny4.generate(_image_msg(photo), max_new_tokens=1).generated_tokens == 1


@pytest.mark.parametrize("name", ["tiny4", "tinyu"])
def test_a_video_forward_works_in_the_installed_transformers(name, request):
    """forward_drops_video_frames says what the installed transformers' forward does with
    a video (raise before 5.23, take it from 5.23 on); encoder_free_video_inputs makes a
    direct forward work either way, with the same logits; generate needs no help."""
    import torch

    from gemma_explore.engines.hf import encoder_free_video_inputs, forward_drops_video_frames

    bundle = request.getfixturevalue(name)
    frames = np.random.RandomState(4).randint(0, 255, (6, 96, 128, 3), np.uint8)
    video = ge.load_video(frames, fps=3.0)
    prepared = ge.prepare_inputs("What happens?", bundle=bundle, videos=[video])
    inputs = prepared.to_model(bundle.model)
    with torch.inference_mode():
        fixed = bundle.model(**encoder_free_video_inputs(bundle.model, inputs)).logits
        if forward_drops_video_frames():
            with pytest.raises(ValueError, match="num_frames_per_video"):
                bundle.model(**inputs)
        else:
            assert encoder_free_video_inputs(bundle.model, inputs) is inputs
            torch.testing.assert_close(bundle.model(**inputs).logits, fixed)
    assert fixed.shape[1] == len(prepared.input_ids)
    gen = bundle.generate("What happens?", videos=[video], max_new_tokens=2)
    assert gen.generated_tokens == 2
