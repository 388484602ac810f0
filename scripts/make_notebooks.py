"""Write the walkthrough notebooks in notebooks/ (outputs cleared).

The notebooks are the lessons; this script is only how they are authored, so each
cell stays short and every notebook has the same frame: learning goals, a
``parameters`` cell, numbered sections with asserts, and a summary.

    .venv/bin/python scripts/make_notebooks.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

OUT = Path(__file__).resolve().parents[1] / "notebooks"

PARAMS = """# parameters — override with environment variables (or papermill -p)
import os

MODEL = os.environ.get("GEMMA_EXPLORE_MODEL", "tiny-gemma4")        # or a folder / hub id
MODEL_3N = os.environ.get("GEMMA_EXPLORE_MODEL_3N", "tiny-gemma3n")
BACKEND = os.environ.get("GEMMA_EXPLORE_BACKEND", "hf")             # hf | vllm | openai
DEVICE = os.environ.get("GEMMA_EXPLORE_DEVICE") or None             # None: cuda if present"""

SETUP = """import gemma_explore as ge
from gemma_explore.samples import sample_photo, sample_speech, sample_video

photo = sample_photo()          # a real photograph, 512×600
speech = sample_speech()        # (waveform, 16000): 5.3 s of espeak-ng speech
video = sample_video()          # 4 s at 12 fps, 320×180"""


def md(text: str):
    return new_markdown_cell(text.strip())


def code(text: str, *, tags: tuple[str, ...] = ()):
    cell = new_code_cell(text.strip())
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def notebook(title: str, goals: list[str], sections: list[tuple[str, list]], summary: list[str]):
    cells = [
        md(f"# {title}\n\n**You will learn**\n" + "\n".join(f"- {g}" for g in goals)),
        code(PARAMS, tags=("parameters",)),
        code(SETUP),
    ]
    for i, (heading, body) in enumerate(sections, 1):
        cells.append(md(f"## {i}. {heading}"))
        cells.extend(body)
    cells.append(md("## Summary\n" + "\n".join(f"- {s}" for s in summary)))
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    return nb


NOTEBOOKS = {
    "00_quickstart": notebook(
        "00 · Quickstart: from inputs to tokens",
        [
            "load a model (the tiny offline default, or real weights)",
            "see one image and one clip become tokens, with all four visuals",
            "ask the model one question",
        ],
        [
            (
                "Load a model",
                [
                    code("bundle = ge.load(MODEL, backend=BACKEND, device=DEVICE)\nbundle"),
                    md(
                        "The tiny default has **random weights**: its answers are noise, but every step "
                        "before generation is the real processor and the real encoders."
                    ),
                ],
            ),
            (
                "One image → patches → soft tokens",
                [
                    code("plan = ge.plan_image(photo, family=bundle.family)\nplan"),
                    code("ge.show_patch_grid(photo, family=bundle.family)"),
                    code("ge.show_pooled_mask(ge.vision_pooling(bundle, photo))"),
                    code(
                        "if bundle.family == 'gemma4':\n"
                        "    assert plan.num_soft_tokens == 270  # this photo at budget 280\n"
                        "else:\n    assert plan.num_soft_tokens == 256"
                    ),
                ],
            ),
            (
                "One clip → mel frames → audio tokens",
                [
                    code("audio_plan = ge.plan_audio(speech, family=bundle.family)\naudio_plan"),
                    code("ge.show_mel(speech, family=bundle.family)"),
                    code(
                        "assert audio_plan.num_placeholders == (132 if bundle.family == 'gemma4' else 188)"
                    ),
                ],
            ),
            (
                "The prompt after expansion",
                [
                    code(
                        "msgs = [{'role': 'user', 'content': [\n"
                        "    {'type': 'image', 'image': photo}, {'type': 'audio', 'audio': speech},\n"
                        "    {'type': 'text', 'text': 'What do you see and hear?'}]}]\n"
                        "layout = ge.layout_prompt(msgs, bundle=bundle)\nge.show_layout(layout)"
                    ),
                    code("assert layout.agrees  # every placeholder run matches its plan"),
                ],
            ),
            (
                "One answer",
                [
                    code(
                        "gen = bundle.generate(msgs, max_new_tokens=16)\n"
                        "print('random weights — noise:' if gen.is_random_weights else 'answer:', gen.text)\n"
                        "print(gen.prompt_tokens, 'prompt tokens,', gen.multimodal_tokens, 'of them multimodal')"
                    ),
                    code(
                        "assert gen.multimodal_tokens == layout.placeholders[0].num_embeds + "
                        "layout.placeholders[1].num_embeds"
                    ),
                ],
            ),
        ],
        [
            "`ge.load` gives the real processor and model; `plan_*` explain the counts.",
            "`show_*` draw each step; `layout_prompt` shows where the tokens go.",
            "The same code runs on real checkpoints: set GEMMA_EXPLORE_MODEL.",
        ],
    ),
    "01_images_3n_vs_4": notebook(
        "01 · Images: Gemma 3n's squash vs Gemma 4's aspect-preserving resize",
        [
            "why Gemma 3n always spends 256 tokens and Gemma 4 a budgeted number",
            "how much of the original image one soft token covers in each family",
        ],
        [
            (
                "The same photo in both families",
                [
                    code(
                        "p3 = ge.plan_image(photo, family='gemma3n')\n"
                        "p4 = ge.plan_image(photo, family='gemma4')\n"
                        "print(p3.resized_size, p3.num_soft_tokens)\nprint(p4.resized_size, p4.num_soft_tokens)"
                    ),
                    code(
                        "assert p3.resized_size == (768, 768) and p3.num_soft_tokens == 256\n"
                        "assert p4.resized_size == (864, 720) and p4.num_soft_tokens == 270"
                    ),
                ],
            ),
            (
                "Gemma 3n: squash to 768×768, 16×16 cells",
                [
                    code("ge.show_patch_grid(photo, family='gemma3n')"),
                    code("print(p3.steps[0])\nprint(p3.steps[2])"),
                ],
            ),
            (
                "Gemma 4: keep the aspect ratio, cut 16 px patches, pool 3×3",
                [
                    code("ge.show_patch_grid(photo, family='gemma4')"),
                    code("for step in p4.steps:\n    print('-', step)"),
                ],
            ),
            (
                "A wide photo",
                [
                    code(
                        "wide = (1080, 1920)\n"
                        "for fam in ('gemma3n', 'gemma4'):\n"
                        "    p = ge.plan_image(wide, family=fam)\n"
                        "    print(fam, p.resized_size, p.num_soft_tokens, 'tokens, each covers',\n"
                        "          tuple(round(a) for a in p.token_area), 'px of the original')"
                    ),
                    code("assert ge.plan_image(wide, family='gemma4').num_soft_tokens == 264"),
                ],
            ),
        ],
        [
            "Gemma 3n distorts the aspect ratio but always costs 256 tokens (+4 wrapper tokens).",
            "Gemma 4 keeps the aspect ratio; the budget caps patches at budget × 9.",
        ],
    ),
    "02_budgets_and_pooling": notebook(
        "02 · Gemma 4 budgets, 3×3 pooling, padding and the real pooler",
        [
            "what the five budgets 70 … 1120 do to one image",
            "why pixel_values has padding rows with position (−1, −1)",
            "what the real pooler's valid mask says, and what extreme aspect ratios do",
        ],
        [
            (
                "Five budgets side by side",
                [
                    code("ge.show_patch_grid(photo, family='gemma4', max_soft_tokens='all')"),
                    code(
                        "for b in (70, 140, 280, 560, 1120):\n"
                        "    p = ge.plan_image(photo, family='gemma4', max_soft_tokens=b)\n"
                        "    print(b, p.resized_size, p.num_patches, p.num_soft_tokens)"
                    ),
                ],
            ),
            (
                "Padding patches in the real processor's output",
                [
                    code(
                        "bundle = ge.load('tiny-gemma4' if BACKEND != 'hf' else MODEL, device=DEVICE)\n"
                        "prepared = ge.prepare_inputs(bundle, '', images=[photo], max_soft_tokens=280)\n"
                        "pos = prepared.batch['image_position_ids'][0]\n"
                        "padding = int((pos == -1).all(dim=-1).sum())\n"
                        "print(tuple(prepared.batch['pixel_values'].shape), padding, 'padding rows')"
                    ),
                    code(
                        "plan = ge.plan_image(photo, family='gemma4', max_soft_tokens=280)\n"
                        "assert padding == plan.num_padding_patches == 90"
                    ),
                ],
            ),
            (
                "The pooler's valid mask",
                [
                    code(
                        "pooled = ge.vision_pooling(bundle, photo, max_soft_tokens=280)\n"
                        "print(pooled.slots, 'slots,', pooled.num_valid, 'real')\n"
                        "ge.show_pooled_mask(pooled)"
                    ),
                    code("assert pooled.agrees and pooled.num_valid == 270"),
                ],
            ),
            (
                "Extreme aspect ratios: the 3×900 report",
                [
                    code(
                        "report = ge.check_image_parity((3, 900), max_soft_tokens=280,\n"
                        "                               bundle=bundle, use_vllm=False)\nreport"
                    ),
                    code(
                        "assert not report.agree and report.first_difference == 'resized size (h×w)'\n"
                        "assert report.encoder_count == 280"
                    ),
                    md(
                        "Before vLLM clamped its count, it reserved 289 placeholders for 280 embeddings: "
                        "*“Attempted to assign 280 = 280 multimodal tokens to 289 placeholders”*."
                    ),
                ],
            ),
        ],
        [
            "A budget fixes max patches (budget × 9); unused rows are padding at (−1, −1).",
            "The pooler keeps one token per real 3×3 cell; the rest of the budget is stripped.",
            "Thin strips are where implementations disagree: check with `check_image_parity`.",
        ],
    ),
    "03_audio": notebook(
        "03 · Audio: waveform → mel → frames → tokens",
        [
            "how a clip becomes mel frames (10 ms hop) and tokens",
            "Gemma 3n's fixed 188 slots vs Gemma 4's one token per 40 ms",
            "what happens to clips longer than 30 s",
        ],
        [
            (
                "The speech clip",
                [
                    code("wave, rate = speech\nprint(len(wave) / rate, 'seconds at', rate, 'Hz')"),
                    code("ge.show_mel(speech, family='gemma4')"),
                ],
            ),
            (
                "Gemma 4: one token per 40 ms",
                [
                    code("p4 = ge.plan_audio(speech, family='gemma4')\np4"),
                    code("assert p4.num_placeholders == 132 and p4.ms_per_token == 40"),
                ],
            ),
            (
                "Gemma 3n: always 188 slots",
                [
                    code("p3 = ge.plan_audio(speech, family='gemma3n')\np3"),
                    code("ge.show_mel(speech, family='gemma3n')"),
                    code(
                        "assert p3.num_placeholders == 188\n"
                        "assert p3.num_encoder_tokens + p3.padding_slots == 188"
                    ),
                ],
            ),
            (
                "Over-long clips",
                [
                    code(
                        "import numpy as np\nlong = (np.tile(wave, 8), rate)   # ≈ 42 s\n"
                        "for fam in ('gemma3n', 'gemma4'):\n"
                        "    p = ge.plan_audio(long, family=fam)\n"
                        "    print(fam, round(p.duration_s, 1), 's → truncated:', p.truncated,\n"
                        "          p.num_placeholders, 'placeholders')"
                    ),
                    code("assert ge.plan_audio(long, family='gemma4').num_placeholders == 750"),
                ],
            ),
        ],
        [
            "Both families use 16 kHz, 128 mel bins and a 10 ms hop; 3n uses 32 ms windows, 4 uses 20 ms.",
            "Gemma 4 spends one token per 40 ms (≤ 750); Gemma 3n always reserves 188 and pads.",
            "Anything after 30 s is cut before the mel frames are computed.",
        ],
    ),
    "04_video": notebook(
        "04 · Video (Gemma 4): frames, timestamps, tokens",
        [
            "how frames are sampled (at most 32) and stamped mm:ss",
            "why each frame costs ~70 tokens",
            "what a minute of video costs",
        ],
        [
            (
                "The sampled frames",
                [
                    code("plan = ge.plan_video(video)  # or a path: ge.plan_video('clip.mp4')\nplan"),
                    code("ge.show_video_frames(video)"),
                    code(
                        "assert len(plan.frame_indices) == 32 and plan.soft_tokens_per_frame == 66"
                    ),
                ],
            ),
            (
                "Timestamps in the prompt",
                [
                    code(
                        "bundle = ge.load('tiny-gemma4' if BACKEND != 'hf' else MODEL, device=DEVICE)\n"
                        "layout = ge.layout_prompt('What happens?', bundle=bundle, videos=[video])\n"
                        "stamps = [s.text.strip() for s in layout.segments if s.kind == 'timestamp']\n"
                        "print(stamps[:8])"
                    ),
                    code("assert stamps == list(plan.timestamps)"),
                ],
            ),
            (
                "What a minute costs",
                [
                    code(
                        "minute = ge.plan_video(60 * 30, fps=30, frame_size=(720, 1280))\n"
                        "print(minute.total_soft_tokens, 'soft tokens +', 2 * len(minute.frame_indices),\n"
                        "      'markers + timestamp text')"
                    ),
                    code("assert minute.total_soft_tokens == 32 * 66"),
                ],
            ),
        ],
        [
            "Gemma 4 samples at most 32 frames, evenly spaced, each an image at budget 70.",
            "Each frame is written 'mm:ss <|image><|video|>×n<image|>' (seconds truncated).",
            "A minute costs the same as four seconds once both hit 32 frames.",
        ],
    ),
    "05_prompt_layout": notebook(
        "05 · Prompt layout: where every token goes",
        [
            "chat template → tokens → expansion → placeholder positions",
            "where the encoders' embeddings land",
            "Gemma 3n's newline merges and the double-BOS trap",
        ],
        [
            (
                "Chat template and expansion",
                [
                    code(
                        "b4 = ge.load(MODEL, device=DEVICE) if BACKEND == 'hf' else ge.load('tiny-gemma4')\n"
                        "msgs = [{'role': 'user', 'content': [{'type': 'image', 'image': photo},\n"
                        "        {'type': 'audio', 'audio': speech}, {'type': 'text', 'text': 'What?'}]}]\n"
                        "layout = ge.layout_prompt(msgs, bundle=b4)\nprint(layout.text)\nlayout"
                    ),
                    code("ge.show_layout(layout)"),
                ],
            ),
            (
                "Where the embeddings land",
                [
                    code("report = ge.inspect_multimodal(b4, msgs)\nreport"),
                    code(
                        "assert report.agrees\n"
                        "assert list(report.items[0].positions) == layout.placeholders[0].embed_positions"
                    ),
                ],
            ),
            (
                "Gemma 3n's newline merges",
                [
                    code(
                        "b3 = ge.load(MODEL_3N, device=DEVICE) if BACKEND == 'hf' else ge.load('tiny-gemma3n')\n"
                        "l3 = ge.layout_prompt(msgs, bundle=b3)\n"
                        "for m in l3.newline_merges:\n    print(m.position, repr(m.token), '=', m.parts, '—', m.note)"
                    ),
                    code("ge.show_layout(l3)"),
                    code(
                        "assert any(m.token == '\\n\\n\\n\\n' for m in l3.newline_merges)\n"
                        "print('vLLM ranges:', l3.vllm_ranges)"
                    ),
                ],
            ),
            (
                "The double-BOS trap",
                [
                    code(
                        "text = b4.processor.apply_chat_template([{'role': 'user', 'content': 'Hi'}],\n"
                        "                                        tokenize=False, add_generation_prompt=True)\n"
                        "tok = b4.processor.tokenizer\n"
                        "print(tok.encode(text)[:3], 'vs', tok.encode(text, add_special_tokens=False)[:3])"
                    ),
                    code(
                        "assert tok.encode(text)[:2] == [2, 2]  # the template already wrote <bos>"
                    ),
                ],
            ),
            (
                "Raw prompts, as vLLM's LLM.generate takes them",
                [
                    md(
                        "Written by hand, with one `<image_soft_token>` per image and no chat template "
                        "(`template=False`), the prompt is laid out as vLLM's processor expands it. "
                        'vLLM merges only three newline pairs after expansion and reads `"\\n\\n\\n"` '
                        'as `"\\n"` + `"\\n\\n"` when it searches for the image again '
                        "(`gemma3n_mm.py`: `_apply_token_matches`, `_find_mm_placeholders`), so a single "
                        '`"\\n"` right after the placeholder makes vLLM raise while transformers runs.'
                    ),
                    code(
                        "raw = '<start_of_turn>user\\n<image_soft_token>\\nDescribe.<end_of_turn>\\n'\n"
                        "lraw = ge.layout_prompt(raw, bundle=b3, images=[photo], template=False)\n"
                        "for d in lraw.divergences:\n    print(d.rule)\n    print('vLLM:', d.error)\n"
                        "ge.show_layout(ge.layout_prompt(raw.replace('>\\nDescribe', '>\\n\\nDescribe'),\n"
                        "                                bundle=b3, images=[photo], template=False))"
                    ),
                    code(
                        "assert lraw.divergences and lraw.divergences[0].error.startswith('RuntimeError')"
                    ),
                ],
            ),
        ],
        [
            "Placeholders are expanded by the processor; each run must equal its encoder's output.",
            "Gemma 3n wraps runs in '\\n\\n', which merges with neighbours; vLLM splits them back.",
            "Templates that write <bos> need add_special_tokens=False.",
        ],
    ),
    "06_inference": notebook(
        "06 · Inference: transformers and vLLM",
        [
            "generate (plain and streaming) with the transformers backend",
            "what vLLM needs: engine arguments, per-request budgets, the OpenAI server",
        ],
        [
            (
                "Which model is running",
                [
                    code(
                        "bundle = ge.load(MODEL, backend=BACKEND, device=DEVICE)\n"
                        "print(bundle)\nprint('RANDOM WEIGHTS — text is noise' if bundle.is_random_weights "
                        "else 'trained weights')"
                    ),
                ],
            ),
            (
                "Generate, plain and streaming",
                [
                    code(
                        "msgs = [{'role': 'user', 'content': [{'type': 'image', 'image': photo},\n"
                        "        {'type': 'text', 'text': 'Who is this?'}]}]\n"
                        "gen = bundle.generate(msgs, max_new_tokens=24)\nprint(gen.text)\n"
                        "print(f'prefill {gen.prefill_s*1000:.0f} ms, {gen.decode_tokens_per_s:.0f} tok/s')"
                    ),
                    code(
                        "pieces = list(bundle.generate(msgs, max_new_tokens=24, stream=True))\n"
                        "print(len(pieces), 'pieces')\nassert ''.join(pieces) == gen.text or BACKEND != 'hf'"
                    ),
                ],
            ),
            (
                "vLLM: engine arguments and requests",
                [
                    code(
                        "from gemma_explore.inference.vllm_backend import engine_args, vllm_request\n"
                        "engine_args('google/gemma-4-E4B-it', family='gemma4', max_soft_tokens=560)"
                    ),
                    code(
                        "b4 = ge.load('tiny-gemma4')\n"
                        "request = vllm_request(ge.prepare_inputs(b4, 'Hi', images=[photo], max_soft_tokens=140))\n"
                        "print({k: v for k, v in request.items() if k != 'multi_modal_data'})\n"
                        "assert request['mm_processor_kwargs'] == {'max_soft_tokens': 140}"
                    ),
                ],
            ),
            (
                "The OpenAI-compatible server",
                [
                    code(
                        "from gemma_explore.inference.openai_backend import chat_request\n"
                        "body = chat_request(msgs, model='google/gemma-4-E4B-it', max_soft_tokens=280)\n"
                        "print([p['type'] for p in body['messages'][0]['content']])"
                    ),
                    md(
                        "Start it with `vllm serve google/gemma-4-E4B-it --max-model-len 8192` and load "
                        "`ge.load('google/gemma-4-E4B-it', backend='openai', base_url='http://127.0.0.1:8000/v1')`."
                    ),
                ],
            ),
        ],
        [
            "The transformers backend runs anywhere; vLLM's engine needs a CUDA GPU.",
            "Requests may change the budget, but vLLM sizes its encoder cache at start-up: max(max_num_batched_tokens, the largest worst-case item over the enabled modalities).",
            "The notebook printed whether it ran random or trained weights.",
        ],
    ),
    "07_exercises": notebook(
        "07 · Exercises (with answers that check themselves)",
        ["predict token counts before running anything", "choose a budget", "explain a mismatch"],
        [
            (
                "Predict: a 1920×1080 photo at each budget",
                [
                    md(
                        "Write your prediction in `guess` (budget → soft tokens), then run the check."
                    ),
                    code(
                        "guess = {70: 66, 140: 120, 280: 264, 560: 527, 1120: 1100}   # your answer here\n"
                        "truth = {b: ge.plan_image((1080, 1920), family='gemma4', max_soft_tokens=b).num_soft_tokens\n"
                        "         for b in (70, 140, 280, 560, 1120)}\n"
                        "print(truth)\nassert guess == truth, 'Compare with plan_image(...).steps'"
                    ),
                ],
            ),
            (
                "Choose: the largest budget under 300 tokens for a 4:3 photo",
                [
                    code(
                        "def largest_budget_under(limit, size):\n"
                        "    ok = [b for b in (70, 140, 280, 560, 1120)\n"
                        "          if ge.plan_image(size, family='gemma4', max_soft_tokens=b).total_tokens < limit]\n"
                        "    return max(ok) if ok else None\n\n"
                        "answer = largest_budget_under(300, (768, 1024))\nprint(answer)\nassert answer == 280"
                    ),
                ],
            ),
            (
                "Explain: why does vLLM complain?",
                [
                    md(
                        "A user removed one `<|image|>` from the prompt by hand. What does the model see?"
                    ),
                    code(
                        "bundle = ge.load('tiny-gemma4')\n"
                        "msgs = [{'role': 'user', 'content': [{'type': 'image', 'image': photo}]}]\n"
                        "ids = ge.prepare_inputs(bundle, msgs).input_ids\n"
                        "k = ids.index(258880)\n"
                        "report = ge.inspect_multimodal(bundle, msgs, input_ids=ids[:k] + ids[k + 1:])\n"
                        "print(report.vllm_error)\n"
                        "assert report.vllm_error == 'ValueError: Attempted to assign 270 = 270 multimodal tokens to 269 placeholders'"
                    ),
                ],
            ),
            (
                "Predict: Gemma 3n padding for a 2-second clip",
                [
                    code(
                        "import numpy as np\n\n"
                        "guess = 188 - 13   # slots filled with the padding embedding: your answer here\n"
                        "plan = ge.plan_audio(np.ones(32_000, np.float32) * 0.1, family='gemma3n')\n"
                        "print(plan.num_encoder_tokens, 'real tokens,', plan.padding_slots, 'padding')\n"
                        "assert guess == plan.padding_slots"
                    ),
                ],
            ),
        ],
        [
            "Counts follow from arithmetic you can do by hand — `plan_*().steps` shows it.",
            "Mismatches come from prompts edited by hand or budgets that differ between the "
            "processor and the server.",
        ],
    ),
}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, nb in NOTEBOOKS.items():
        nbformat.validate(nb)
        nbformat.write(nb, OUT / f"{name}.ipynb")
        print(OUT / f"{name}.ipynb")
    # Keep the committed notebooks in the project's style.
    import shutil
    import subprocess

    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    subprocess.run([ruff, "format", "--quiet", str(OUT)], check=False)


if __name__ == "__main__":
    main()
