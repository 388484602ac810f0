"""Write every figure for the bundled samples to a folder (default: build/gallery).

.venv/bin/python benchmarks/gallery.py [OUT_DIR] [--style projector]
.venv/bin/python benchmarks/gallery.py --readme      # the README's images, in docs/images

The figures and their inputs live in ``scripts.gallery`` (the readability test
draws the same set in both styles).
"""

from __future__ import annotations

from scripts.gallery import figures, main

__all__ = ["figures", "main"]

if __name__ == "__main__":
    main()
