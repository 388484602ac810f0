"""Upload-to-visuals time of the demo's Image tab for a 1920×1080 photo on the tiny model.

Target (issue 7): under 1 s (median). Measured twice: the handler called directly, and
through a launched app with gradio_client (upload, queue, figures serialised). The
baseline, in the same run, is the transformers processor alone on the same image.

    .venv/bin/python benchmarks/bench_demo.py
"""

from __future__ import annotations

import socket
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image
from timing import median_seconds  # benchmarks/ is on sys.path when these scripts run

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 1.0


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from gradio_client import Client, handle_file

    import demo_app
    from gemma_explore.app import bundles, tabs

    rng = np.random.RandomState(0)
    yy, xx = np.mgrid[0:1080, 0:1920]
    photo = Image.fromarray(
        np.stack(
            [
                (xx / 1920 * 255).astype(np.uint8),
                (yy / 1080 * 255).astype(np.uint8),
                rng.randint(0, 255, (1080, 1920), np.uint8),
            ],
            -1,
        )
    )
    path = Path(tempfile.mkdtemp()) / "photo_1080p.png"
    photo.save(path)
    bundle = bundles.get_bundle("tiny-gemma4")
    p = bundle.processor
    base = median_seconds(lambda: p(text=[p.image_token], images=[[photo]]))
    tabs.image_tab("tiny-gemma4", str(path))  # warm-up
    direct = median_seconds(lambda: tabs.image_tab("tiny-gemma4", str(path)))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo = demo_app.build_app("tiny-gemma4")
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)

        def call():
            return client.predict("tiny-gemma4", handle_file(str(path)), 280, api_name="/image")

        call()
        served = median_seconds(call)
    finally:
        demo.close()
    print(f"baseline: transformers processor alone {base * 1000:.0f} ms")
    for label, t in (
        ("handler (figures + tower + parity)", direct),
        ("through the app (upload → figures)", served),
    ):
        print(
            f"{label:38s} {t * 1000:6.0f} ms = {t / TARGET_S:.2f} × target, "
            f"{t / base:.1f} × baseline"
        )


if __name__ == "__main__":
    main()
