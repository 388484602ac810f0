"""gemma_explore's web demo: see how Gemma 3n and Gemma 4 turn inputs into tokens.

    python demo_app.py [--model tiny-gemma4|tiny-gemma3n|PATH|HUB_ID] [--backend hf]
                       [--host 127.0.0.1] [--port 7860]

Binds 127.0.0.1 unless told otherwise (GEMMA_EXPLORE_HOST / GEMMA_EXPLORE_PORT work
too), never creates share links, limits uploads to 20 MB, and serves requests through
gradio's queue two at a time so one GPU box can take a workshop in turn.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from gemma_explore.families import GEMMA4  # noqa: E402 - facts only, no torch

MAX_UPLOAD = "20mb"
CONCURRENCY = 2  # requests that may run the model at once
BUDGETS = list(GEMMA4.image.budgets)  # Gemma 4's max_soft_tokens choices


def _outputs(result, keys):
    return tuple(result.get(k) for k in keys)


def build_app(model: str = "tiny-gemma4"):
    import gradio as gr

    from gemma_explore.app import handlers as h
    from gemma_explore.samples import SAMPLES_DIR

    photo = str(SAMPLES_DIR / "photo.jpg")
    speech = str(SAMPLES_DIR / "speech.wav")
    video = str(SAMPLES_DIR / "video.mp4")
    choices = list(dict.fromkeys([model, "tiny-gemma4", "tiny-gemma3n"]))

    with gr.Blocks(title="gemma_explore", analytics_enabled=False) as demo:
        gr.Markdown(
            "# gemma_explore\nHow Gemma 3n and Gemma 4 turn pictures, sound and video "
            "into tokens — computed by the real processors and encoders."
        )
        with gr.Row():
            model_box = gr.Dropdown(choices, value=model, label="Model", scale=2)
            budget = gr.Dropdown(
                BUDGETS,
                value=GEMMA4.image.default_budget,
                label="Gemma 4 image budget (max_soft_tokens)",
                scale=1,
            )
        notice = gr.Markdown(elem_id="notice")

        with gr.Tab("Image", id="image"):
            with gr.Row():
                with gr.Column(scale=1):
                    image_in = gr.Image(type="pil", label="Image", elem_id="image_in")
                    gr.Examples([[photo]], inputs=[image_in], label="Example image")
                    image_btn = gr.Button("Show tokens", variant="primary", elem_id="image_btn")
                    image_counts = gr.Markdown(elem_id="image_counts")
                    image_parity = gr.Markdown(elem_id="image_parity")
                    image_time = gr.Markdown(elem_id="image_time")
                with gr.Column(scale=2):
                    patch_plot = gr.Plot(label="Patch grid", elem_id="patch_plot")
                    pooled_plot = gr.Plot(label="Pooled token mask (real vision tower)")
            image_keys = ("patch_figure", "pooled_figure", "counts", "parity", "timings", "notice")

            def run_image(m, img, b):
                return _outputs(h.image_tab(m, img, b), image_keys)

            image_btn.click(
                run_image,
                [model_box, image_in, budget],
                [patch_plot, pooled_plot, image_counts, image_parity, image_time, notice],
                api_name="image",
            )

        with gr.Tab("Audio", id="audio"):
            with gr.Row():
                with gr.Column(scale=1):
                    audio_in = gr.Audio(type="filepath", label="Clip", elem_id="audio_in")
                    gr.Examples([[speech]], inputs=[audio_in], label="Example clip")
                    audio_btn = gr.Button("Show tokens", variant="primary", elem_id="audio_btn")
                    audio_counts = gr.Markdown(elem_id="audio_counts")
                    audio_parity = gr.Markdown()
                    audio_time = gr.Markdown()
                with gr.Column(scale=2):
                    mel_plot = gr.Plot(label="Waveform, mel frames and tokens")
            audio_keys = ("mel_figure", "counts", "parity", "timings", "notice")
            audio_btn.click(
                lambda m, a: _outputs(h.audio_tab(m, a), audio_keys),
                [model_box, audio_in],
                [mel_plot, audio_counts, audio_parity, audio_time, notice],
                api_name="audio",
            )
            # Gemma 3n speech-to-text (issue 14); handler in gemma_explore/app/transcribe_tab.py.
            from gemma_explore.app.transcribe_tab import transcribe_tab

            with gr.Row():
                stt_lang = gr.Textbox(label="Language (ISO 639-1, optional)", elem_id="stt_lang")
                stt_to = gr.Textbox(label="Translate to (optional)", elem_id="stt_to")
                stt_btn = gr.Button("Transcribe (Gemma 3n)", elem_id="transcribe_btn")
            transcript = gr.Markdown(elem_id="transcript")
            stt_btn.click(
                lambda m, a, lang, to: transcribe_tab(m, a, lang, to)["text"],
                [model_box, audio_in, stt_lang, stt_to],
                [transcript],
                api_name="transcribe",
            )

        with gr.Tab("Video", id="video"):
            with gr.Row():
                with gr.Column(scale=1):
                    # A file input: gr.Video would need ffmpeg to re-encode uploads.
                    video_in = gr.File(
                        label="Video (Gemma 4): MP4, MOV, AVI, MKV, WebM",
                        file_types=[".mp4", ".mov", ".avi", ".mkv", ".webm"],
                        type="filepath",
                        elem_id="video_in",
                    )
                    gr.Examples([[video]], inputs=[video_in], label="Example video")
                    video_btn = gr.Button("Show tokens", variant="primary", elem_id="video_btn")
                    video_counts = gr.Markdown(elem_id="video_counts")
                    video_parity = gr.Markdown()
                    video_time = gr.Markdown()
                with gr.Column(scale=2):
                    frames_plot = gr.Plot(label="Sampled frames")
            video_keys = ("frames_figure", "counts", "parity", "timings", "notice")
            video_btn.click(
                lambda m, v: _outputs(h.video_tab(m, v), video_keys),
                [model_box, video_in],
                [frames_plot, video_counts, video_parity, video_time, notice],
                api_name="video",
            )

        with gr.Tab("Prompt layout", id="layout"):
            with gr.Row():
                with gr.Column(scale=1):
                    layout_raw = gr.Checkbox(
                        False,
                        label="Raw prompt, as vLLM's LLM.generate takes it (no chat template; "
                        "one <|image|> / <image_soft_token> per attachment)",
                        elem_id="layout_raw",
                    )
                    layout_text = gr.Textbox(
                        "What do you see and hear?", label="Text", lines=3, elem_id="layout_text"
                    )
                    layout_image = gr.Image(type="pil", label="Image (optional)")
                    layout_audio = gr.Audio(type="filepath", label="Clip (optional)")
                    gr.Examples(
                        [["Describe this.", photo, speech]],
                        inputs=[layout_text, layout_image, layout_audio],
                        label="Example turn",
                    )
                    layout_btn = gr.Button(
                        "Lay out the prompt", variant="primary", elem_id="layout_btn"
                    )
                    layout_counts = gr.Markdown(elem_id="layout_counts")
                with gr.Column(scale=2):
                    layout_plot = gr.Plot(label="Expanded prompt")
                    layout_html = gr.HTML()
                    layout_checks = gr.Markdown()
                    layout_time = gr.Markdown()
            layout_keys = ("layout_figure", "layout_html", "counts", "parity", "timings", "notice")
            layout_btn.click(
                lambda m, t, i, a, b, r: _outputs(h.layout_tab(m, t, i, a, b, r), layout_keys),
                [model_box, layout_text, layout_image, layout_audio, budget, layout_raw],
                [layout_plot, layout_html, layout_counts, layout_checks, layout_time, notice],
                api_name="layout",
            )

        with gr.Tab("Chat", id="chat"):
            chatbot = gr.Chatbot(label="Chat", height=380, elem_id="chatbot")
            chat_in = gr.MultimodalTextbox(
                file_types=["image", "audio", "video"],
                file_count="multiple",
                placeholder="Ask about an image, a clip or a video…",
                elem_id="chat_in",
            )
            gr.Examples(
                [[{"text": "What is in this picture?", "files": [photo]}]],
                inputs=[chat_in],
                label="Example question",
            )
            max_tokens = gr.Slider(1, 256, value=32, step=1, label="Max new tokens")

            def respond(m, message, history, n, b):
                for hist in h.chat_turn(m, message, history, n, b):
                    yield hist, None

            chat_in.submit(
                respond,
                [model_box, chat_in, chatbot, max_tokens, budget],
                [chatbot, chat_in],
                api_name="chat",
            )

        with gr.Tab("Serving", id="serving"):
            from gemma_explore.app.serving_tab import serving_tab

            with gr.Row():
                with gr.Column(scale=1):
                    sv = [
                        gr.Slider(256, 32768, value=8192, step=256, label="max_model_len"),
                        gr.Slider(0, 16, value=4, step=1, label="limit_mm_per_prompt: image"),
                        gr.Slider(0, 4, value=1, step=1, label="limit_mm_per_prompt: audio"),
                        gr.Slider(0, 4, value=1, step=1, label="limit_mm_per_prompt: video"),
                        gr.Slider(256, 32768, value=8192, step=256, label="max_num_batched_tokens"),
                    ]
                    serving_table = gr.Markdown(elem_id="serving_table")
                serving_plot = gr.Plot(label="What vLLM reserves", elem_id="serving_plot")

            def run_serving(m, b, *values):
                out = serving_tab(m, *values, max_soft_tokens=b)
                return out["figure"], out["table"]

            serving_io = ([model_box, budget, *sv], [serving_plot, serving_table])
            sv[0].change(run_serving, *serving_io, api_name="serving")
            for control in [model_box, budget, *sv[1:]]:
                control.change(run_serving, *serving_io, api_visibility="private")

        def on_model(m):
            try:
                return h._notice(h.get_bundle(m))
            except Exception as exc:  # noqa: BLE001
                return h.error_text(exc)

        model_box.change(on_model, [model_box], [notice], api_name="model")
        demo.load(on_model, [model_box], [notice])
    demo.queue(default_concurrency_limit=CONCURRENCY, max_size=64)
    return demo


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; host and port fall back to GEMMA_EXPLORE_HOST / _PORT."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.environ.get("GEMMA_EXPLORE_MODEL", "tiny-gemma4"))
    parser.add_argument(
        "--backend",
        default=os.environ.get("GEMMA_EXPLORE_BACKEND", "hf"),
        choices=["hf", "vllm", "openai"],
    )
    parser.add_argument("--base-url", default=None, help="for --backend openai: the vllm serve URL")
    parser.add_argument("--host", default=os.environ.get("GEMMA_EXPLORE_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("GEMMA_EXPLORE_PORT", 7860)))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from gemma_explore.app.handlers import configure, get_bundle

    if args.backend != "hf":
        options = {"backend": args.backend}
        if args.backend == "openai" and args.base_url:
            options["base_url"] = args.base_url
        configure(args.model, **options)
    get_bundle(args.model)  # fail early, with load()'s clear message, on a bad --model
    demo = build_app(args.model)
    demo.launch(
        server_name=args.host,
        server_port=args.port,
        share=False,
        max_file_size=MAX_UPLOAD,
        show_error=True,
    )


if __name__ == "__main__":
    main()
