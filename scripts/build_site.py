"""Build the offline course site: one static folder a teacher opens without a server.

    python scripts/build_site.py [--out build/site] [--execute NAME ...] [--no-gallery]
                                 [--style projector|screen]

What lands in OUT (open OUT/index.html in any browser, over file://, offline):

- ``notebooks/*.html``: every notebook of ``notebooks/`` (found by glob), executed top to
  bottom and exported to HTML, images embedded. An explorer widget cannot run without a
  kernel, so its first figure is kept as a still image under it (the widget's own output).
  With ``--execute NAME`` only notebooks whose name contains NAME are executed; the others
  are exported as written (prose and code, no outputs), which is what the site test uses.
- ``gallery/``: every figure ``scripts/gallery.py`` draws for the bundled samples.

Every figure (the notebooks', the gallery's, and so the slides') is drawn in the projector
style, text at least 14 pt (``--style screen`` for the laptop look): the notebooks' kernel
starts with ``GEMMA_EXPLORE_STYLE=projector``, which the package reads when it loads.
- ``slides/index.html``: ``docs/teaching/slides.md`` as a slide deck (arrow keys, ``n``
  for the speaker notes, ``f`` for full screen, print to PDF: one slide a page). A slide's
  ``![caption](figure:NOTEBOOK/CODE)`` is the first image of the first cell of the
  notebook whose name contains NOTEBOOK and whose code contains CODE: the notebooks' own
  figures, taken from this build's executed copy.
- ``teaching/*.html``: the rest of ``docs/teaching/*.md`` (cheat sheet, instructor notes,
  room plan).

Nothing is fetched: scripts and styles that nbconvert's template would load from a CDN
are dropped (widgets are shown as still images instead), and the slides carry their own.
"""

from __future__ import annotations

import argparse
import base64
import copy
import html
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
TEACHING = ROOT / "docs" / "teaching"
# Every figure of the site (notebooks, gallery, slides) in the projector style: text at
# least 14 pt, read from the back of a room. ``--style screen`` builds the laptop look.
DEFAULT_STYLE = "projector"
STYLE_NOTES = {
    "projector": "the projector style (text at least 14 pt, read from the back of a room)",
    "screen": "the screen style (a laptop's 9 pt)",
}
STYLE_VAR = "GEMMA_EXPLORE_STYLE"  # read by gemma_explore.viz.style when the package loads
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
FIGURE_REF = re.compile(r"!\[([^\]]*)\]\(figure:([^/)]+)/([^)]+)\)")
REMOTE_TAG = re.compile(
    r"<script[^>]*\bsrc=\"https?://[^\"]*\"[^>]*>\s*</script>|<link[^>]*\bhref=\"https?://[^\"]*\"[^>]*>",
    re.I,
)


def _source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


# --------------------------------------------------------------------------- notebooks


def execute(path: Path, timeout: int, style: str = DEFAULT_STYLE) -> object:
    """The notebook, executed in a scratch folder (the figures inline, as in JupyterLab),
    its figures drawn in ``style``: the kernel starts with ``GEMMA_EXPLORE_STYLE`` set,
    which the package reads when it loads (gemma_explore/viz/style.py)."""
    import nbformat
    from nbclient import NotebookClient
    from traitlets.config import Config

    nb = nbformat.read(path, as_version=4)
    env_backend = os.environ.pop("MPLBACKEND", None)  # the kernel's inline backend
    env_style = os.environ.get(STYLE_VAR)
    os.environ[STYLE_VAR] = style
    try:
        with tempfile.TemporaryDirectory() as scratch:
            NotebookClient(
                nb,
                timeout=timeout,
                kernel_name="python3",
                resources={"metadata": {"path": scratch}},
                # Unix sockets (an absolute path: the kernel runs in the scratch folder),
                # not TCP: ipykernel has no "over TCP without encryption" warning to
                # print, and nothing else can connect
                config=Config(
                    {"KernelManager": {"transport": "ipc", "ip": os.path.join(scratch, "kernel")}}
                ),
            ).execute()
    finally:
        if env_backend is not None:
            os.environ["MPLBACKEND"] = env_backend
        if env_style is None:
            os.environ.pop(STYLE_VAR, None)
        else:
            os.environ[STYLE_VAR] = env_style
    return nb


def _output_models(widgets: dict, model_id: str, seen: set[str] | None = None) -> list[dict]:
    """The Output widgets under a widget (depth first), as the executed notebook kept them."""
    seen = seen if seen is not None else set()
    if model_id in seen or model_id not in widgets:
        return []
    seen.add(model_id)
    state = widgets[model_id].get("state", {})
    found = [state] if state.get("_model_name") == "OutputModel" else []
    for child in state.get("children", []):
        if isinstance(child, str) and child.startswith("IPY_MODEL_"):
            found += _output_models(widgets, child[len("IPY_MODEL_") :], seen)
    return found


def stills_for_widgets(nb) -> object:
    """A copy where each displayed widget becomes its figures: without a kernel nothing
    can redraw a widget, so the site shows what its Output held when the cell ran."""
    import nbformat

    nb = copy.deepcopy(nb)
    widgets = (
        nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    ).get("state", {})
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW not in data:
                outputs.append(out)
                continue
            model = data[WIDGET_VIEW].get("model_id", "")
            stills = [o for s in _output_models(widgets, model) for o in s.get("outputs", [])]
            note = "An explorer (a live widget in JupyterLab): its figure when the cell ran."
            outputs.append(
                nbformat.v4.new_output("display_data", data={"text/markdown": f"*{note}*"})
            )
            outputs += [nbformat.from_dict(o) for o in stills]
        cell["outputs"] = outputs
    nb.metadata.pop("widgets", None)
    return nb


def to_html(nb, title: str) -> str:
    """Self-contained HTML (images embedded; no CDN script or style)."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", embed_images=True)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    body = REMOTE_TAG.sub("", body)
    back = '<p style="margin:1em 2em"><a href="../index.html">← the course</a></p>'
    return _after_body(body, back)


def _after_body(page: str, snippet: str) -> str:
    m = re.search(r"<body[^>]*>", page)
    return page[: m.end()] + snippet + page[m.end() :] if m else snippet + page


def first_image(nb, code: str) -> bytes | None:
    """PNG bytes of the first image output of the first cell whose code contains ``code``."""
    for cell in nb.cells:
        if cell.cell_type == "code" and code in _source(cell):
            for out in cell.get("outputs", []):
                png = out.get("data", {}).get("image/png")
                if png:
                    return base64.b64decode(png)
    return None


# --------------------------------------------------------------------------- markdown


def markdown(text: str) -> str:
    """Markdown → HTML, each heading with GitHub's anchor (``## The time plan`` →
    ``id="the-time-plan"``), so ``page.md#the-time-plan`` links land on the site too."""
    import mistune

    body = mistune.create_markdown(escape=False, plugins=["table", "strikethrough"])(text)
    seen: dict[str, int] = {}

    def anchor(m: re.Match) -> str:
        words = html.unescape(re.sub(r"<[^>]+>", "", m.group(2))).strip().lower()
        slug = re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", words))
        n = seen[slug] = seen.get(slug, -1) + 1
        return f'<h{m.group(1)} id="{slug}{f"-{n}" if n else ""}">{m.group(2)}</h{m.group(1)}>'

    return re.sub(r"<h([1-6])>(.*?)</h\1>", anchor, body, flags=re.S)


def page(title: str, body: str, *, up: str = "../index.html") -> str:
    nav = f'<p class="nav"><a href="{up}">← the course</a></p>' if up else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{PAGE_CSS}</style></head>
<body>{nav}<main>{body}</main></body></html>
"""


PAGE_CSS = """
body { font: 17px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 60em; padding: 1em 2em;
       color: #1a1a1a; }
table { border-collapse: collapse; margin: 1em 0; } td, th { border: 1px solid #ccc;
  padding: .3em .6em; vertical-align: top; } th { background: #f2f2f2; }
code { background: #f4f4f4; padding: 0 .2em; } pre { background: #f4f4f4; padding: .6em;
  overflow-x: auto; }
img { max-width: 100%; } .nav { font-size: 90%; }
.gallery figure { display: inline-block; margin: 1em; max-width: 45%; vertical-align: top; }
@media print { .nav { display: none; } body { font-size: 12pt; } }
"""


def link_targets(text: str, site: Path, notebook_names: list[str]) -> str:
    """Rewrite a teaching page's links for the site: ``x.md`` → ``x.html``, ``slides.md`` →
    the deck, a notebook ``NN_name.ipynb`` → its page (matched by its two-digit number, so
    a renamed notebook still resolves)."""

    def notebook(m: re.Match) -> str:
        stem = Path(m.group(2)).stem
        hit = next((n for n in notebook_names if n == stem), None) or next(
            (n for n in notebook_names if n[:2] == stem[:2]), stem
        )
        return f'{m.group(1)}"../notebooks/{hit}.html"'

    text = re.sub(r'(href=)"(?:\.\./)*(?:notebooks/)?([\w-]+\.ipynb)"', notebook, text)
    # docs/workshop.md (rendered beside the teaching pages) links them as teaching/X.md.
    text = re.sub(r'(href=)"(?:teaching/)?slides\.md"', r'\1"../slides/index.html"', text)
    return re.sub(
        r'href="(?:\.\./)*(?:teaching/)?([\w-]+)\.md(#[\w-]*)?"',
        lambda m: (
            f'href="{"index" if m.group(1) == "README" else m.group(1)}.html{m.group(2) or ""}"'
        ),
        text,
    )


# --------------------------------------------------------------------------- slides


SLIDES_CSS = """
html, body { margin: 0; height: 100%; background: #111; font-family: system-ui, sans-serif; }
.slide { display: none; box-sizing: border-box; width: 100vw; height: 100vh; padding: 3vh 5vw;
  background: #fff; color: #1a1a1a; font-size: 3.2vh; line-height: 1.35; overflow: hidden; }
.slide.current { display: flex; flex-direction: column; }
.slide h1 { font-size: 6vh; margin: 0 0 1vh; } .slide h2 { font-size: 5vh; margin: 0 0 1.5vh; }
.slide img { flex: 1 1 auto; min-height: 0; width: 100%; object-fit: contain; }
.slide .missing { border: 2px dashed #999; padding: 2vh; color: #555; align-self: center; }
.slide code { background: #f2f2f2; padding: 0 .2em; }
.slide table { border-collapse: collapse; font-size: 2.8vh; }
.slide td, .slide th { border: 1px solid #bbb; padding: .2em .5em; }
.notes { display: none; margin-top: auto; font-size: 2.4vh; color: #444; border-top: 1px solid
  #ccc; padding-top: 1vh; } body.show-notes .notes { display: block; }
.counter { position: fixed; right: 1.5vw; bottom: 1vh; font-size: 2vh; color: #888; }
@media print { html, body { background: #fff; height: auto; } .counter { display: none; }
  .slide { display: flex !important; flex-direction: column; page-break-after: always;
  width: 100%; height: 100vh; } }
"""

SLIDES_JS = """
const slides = [...document.querySelectorAll('.slide')];
const counter = document.querySelector('.counter');
function show(i) {
  i = Math.max(0, Math.min(slides.length - 1, i));
  slides.forEach((s, k) => s.classList.toggle('current', k === i));
  counter.textContent = (i + 1) + ' / ' + slides.length;
  if (location.hash !== '#' + (i + 1)) history.replaceState(null, '', '#' + (i + 1));
  window.current = i;
}
document.addEventListener('keydown', (e) => {
  const i = window.current;
  if (['ArrowRight', 'ArrowDown', 'PageDown', ' '].includes(e.key)) show(i + 1);
  else if (['ArrowLeft', 'ArrowUp', 'PageUp', 'Backspace'].includes(e.key)) show(i - 1);
  else if (e.key === 'Home') show(0);
  else if (e.key === 'End') show(slides.length - 1);
  else if (e.key === 'n') document.body.classList.toggle('show-notes');
  else if (e.key === 'f') document.documentElement.requestFullscreen?.();
  else return;
  e.preventDefault();
});
document.addEventListener('click', (e) => { if (!e.target.closest('a')) show(window.current + 1); });
show((parseInt(location.hash.slice(1)) || 1) - 1);
"""


def split_slides(text: str) -> list[tuple[str, str]]:
    """(slide, speaker notes) per slide: slides are separated by a line ``---``; a line
    ``Note:`` starts the notes."""
    out = []
    for chunk in re.split(r"^---\s*$", text, flags=re.M):
        if not chunk.strip():
            continue
        body, _, notes = chunk.partition("\nNote:")
        out.append((body.strip(), notes.strip()))
    return out


def build_slides(executed: dict[str, object], out: Path) -> int:
    """slides.md → out/slides/index.html with its figures in out/slides/img. Returns the
    number of slides."""
    folder = out / "slides"
    (folder / "img").mkdir(parents=True, exist_ok=True)
    sections = []
    slides = split_slides((TEACHING / "slides.md").read_text(encoding="utf-8"))
    for i, (body, notes) in enumerate(slides, 1):

        def figure(m: re.Match, i=i) -> str:
            caption, where, code = m.group(1), m.group(2), m.group(3).strip()
            names = [n for n in executed if where in n]
            png = next((p for n in names if (p := first_image(executed[n], code))), None)
            if png is None:
                return (
                    f'<div class="missing">Figure: {html.escape(caption)} (notebook '
                    f"“{html.escape(where)}”, cell with <code>{html.escape(code)}</code>; "
                    "run <code>make site</code> to draw it)</div>"
                )
            name = f"slide{i:02d}_{re.sub(r'[^a-z0-9]+', '_', code.lower()).strip('_')}.png"
            (folder / "img" / name).write_bytes(png)
            return f'<img src="img/{name}" alt="{html.escape(caption)}">'

        content = markdown(FIGURE_REF.sub(figure, body))
        aside = f'<aside class="notes">{markdown(notes)}</aside>' if notes else ""
        sections.append(f'<section class="slide" id="s{i}">{content}{aside}</section>')
    (folder / "index.html").write_text(
        f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gemma_explore: slides</title>
<style>{SLIDES_CSS}</style></head>
<body>{"".join(sections)}<div class="counter"></div><script>{SLIDES_JS}</script></body></html>
""",
        encoding="utf-8",
    )
    return len(sections)


# --------------------------------------------------------------------------- the site


def build_gallery(out: Path, style: str = DEFAULT_STYLE) -> list[str]:
    import importlib.util

    # scripts/gallery.py, beside this file (scripts/ is a folder of tools, not a package).
    spec = importlib.util.spec_from_file_location("gallery", Path(__file__).with_name("gallery.py"))
    gallery = sys.modules.setdefault("gallery", importlib.util.module_from_spec(spec))
    spec.loader.exec_module(gallery)

    folder = out / "gallery"
    paths = gallery.main([str(folder), "--style", style])
    names = [Path(p).name for p in paths]
    figs = "".join(
        f'<figure><img src="{n}" alt="{n}"><figcaption>{html.escape(Path(n).stem)}</figcaption></figure>'
        for n in names
    )
    text = (
        "<h1>Gallery</h1><p>Every figure the package draws, for the bundled samples "
        "(tiny random-weight models: counts and shapes are the real processors'; "
        f'numbers that depend on weights are noise).</p><div class="gallery">{figs}</div>'
    )
    (folder / "index.html").write_text(page("Gallery", text), encoding="utf-8")
    return names


def parser() -> argparse.ArgumentParser:
    """The command line (``--style`` defaults to the projector: text at least 14 pt)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site")
    parser.add_argument(
        "--execute",
        action="append",
        metavar="NAME",
        default=None,
        help="execute only notebooks whose name contains NAME (repeatable; default: all)",
    )
    parser.add_argument("--no-gallery", action="store_true", help="leave the gallery out")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    parser.add_argument(
        "--style",
        default=DEFAULT_STYLE,
        choices=tuple(STYLE_NOTES),
        help="the figures' look (default: projector, text at least 14 pt)",
    )
    return parser


def main(argv: list[str] | None = None) -> Path:
    args = parser().parse_args(argv)
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    (out / "notebooks").mkdir(parents=True)
    (out / "teaching").mkdir()

    import nbformat

    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    names = [p.stem for p in paths]
    executed: dict[str, object] = {}
    for path in paths:
        run = args.execute is None or any(n in path.stem for n in args.execute)
        print(f"{'executing' if run else 'exporting'} {path.name}", flush=True)
        nb = execute(path, args.timeout, args.style) if run else nbformat.read(path, as_version=4)
        if run:
            executed[path.stem] = nb
        page_html = to_html(stills_for_widgets(nb), path.stem)
        (out / "notebooks" / f"{path.stem}.html").write_text(page_html, encoding="utf-8")

    gallery = [] if args.no_gallery else build_gallery(out, args.style)
    count = build_slides(executed, out)
    docs = sorted(p for p in TEACHING.glob("*.md") if p.name != "slides.md")
    docs += [p for p in [ROOT / "docs" / "workshop.md"] if p.exists()]  # the agenda
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        title = next((ln.lstrip("# ") for ln in text.splitlines() if ln.startswith("#")), doc.stem)
        body = link_targets(markdown(text), out, names)
        target = "index" if doc.name == "README.md" else doc.stem
        (out / "teaching" / f"{target}.html").write_text(page(title, body), encoding="utf-8")

    def items(pairs):
        return "".join(f'<li><a href="{h}">{html.escape(t)}</a></li>' for h, t in pairs)

    done = "" if args.execute is None else " (executed in this build: " + ", ".join(executed) + ")"
    index = (
        "<h1>gemma_explore: the course</h1>"
        "<p>How Gemma 3n, Gemma 4 and Gemma 4 Unified turn images, audio and video into tokens. "
        "This folder works offline: open any page below.</p>"
        f"<p>Every figure is drawn in {STYLE_NOTES[args.style]}.</p>"
        f"<h2>Notebooks</h2><p>Executed on the tiny random-weight models{done}.</p>"
        f'<ol start="0">{items((f"notebooks/{n}.html", n) for n in names)}</ol>'
        f"<h2>Slides</h2><ul>{items([('slides/index.html', f'The deck ({count} slides; arrow keys, n: notes, f: full screen)')])}</ul>"
        + (
            f"<h2>Gallery</h2><ul>{items([('gallery/index.html', f'{len(gallery)} figures')])}</ul>"
            if gallery
            else ""
        )
        + "<h2>For the teacher</h2><ul>"
        + items(
            (
                f"teaching/{'index' if d.name == 'README.md' else d.stem}.html",
                next(
                    (
                        ln.lstrip("# ")
                        for ln in d.read_text(encoding="utf-8").splitlines()
                        if ln.startswith("#")
                    ),
                    d.stem,
                ),
            )
            for d in docs
        )
        + "</ul>"
    )
    (out / "index.html").write_text(
        page("gemma_explore: the course", index, up=""), encoding="utf-8"
    )
    print(f"The site is in {out}: open {out / 'index.html'}")
    return out


if __name__ == "__main__":
    main()
