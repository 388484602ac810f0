"""gemma_explore's web demo.

    python demo_app.py [--model tiny-gemma4|tiny-gemma3n|PATH|HUB_ID] [--host 127.0.0.1] [--port 7860]

Binds 127.0.0.1 unless told otherwise (GEMMA_EXPLORE_HOST / GEMMA_EXPLORE_PORT also
work), never creates share links, and limits uploads to 20 MB.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

MAX_UPLOAD = "20mb"


def build_app(model: str = "tiny-gemma4"):
    import gradio as gr

    from gemma_explore.app.handlers import answer_image_question

    choices = list(dict.fromkeys([model, "tiny-gemma4", "tiny-gemma3n"]))
    with gr.Blocks(title="gemma_explore", analytics_enabled=False) as demo:
        gr.Markdown("# gemma_explore\nAsk a Gemma model about an image.")
        with gr.Row():
            model_box = gr.Dropdown(choices, value=model, label="Model")
            tokens = gr.Slider(1, 128, value=24, step=1, label="Max new tokens")
        with gr.Row():
            image = gr.Image(type="pil", label="Image")
            with gr.Column():
                question = gr.Textbox(label="Question", value="What is in this picture?")
                ask = gr.Button("Ask", variant="primary")
                answer = gr.Textbox(label="Answer", lines=6)
                notice = gr.Markdown()
        ask.click(
            answer_image_question,
            [model_box, image, question, tokens],
            [answer, notice],
            api_name="ask",
            concurrency_limit=2,
        )
    demo.queue(default_concurrency_limit=2)
    return demo


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.environ.get("GEMMA_EXPLORE_MODEL", "tiny-gemma4"))
    parser.add_argument("--backend", default="hf", choices=["hf"])
    parser.add_argument("--host", default=os.environ.get("GEMMA_EXPLORE_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("GEMMA_EXPLORE_PORT", 7860)))
    args = parser.parse_args(argv)
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
