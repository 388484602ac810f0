"""The demo's handlers answer, and turn bad input into a message."""

from gemma_explore.app import handlers


def test_image_question_answers_with_counts(photo):
    answer, notice = handlers.answer_image_question("tiny-gemma4", photo, "What?", 3)
    assert "prompt tokens" in answer and "random weights" in notice


def test_missing_and_corrupt_images_are_messages_and_the_next_request_works(photo):
    answer, _ = handlers.answer_image_question("tiny-gemma4", None, "What?", 3)
    assert answer.startswith("❌") and "Upload an image" in answer
    answer, _ = handlers.answer_image_question("tiny-gemma4", b"\x89PNG broken", "What?", 3)
    assert answer.startswith("❌") and "PNG or JPEG" in answer
    answer, _ = handlers.answer_image_question("tiny-gemma3n", photo, "", 2)
    assert "prompt tokens" in answer


def test_unknown_model_is_a_message():
    answer, _ = handlers.answer_image_question("tiny-gemma9", None, "", 1)
    assert answer.startswith("❌") and "tiny-gemma4" in answer
