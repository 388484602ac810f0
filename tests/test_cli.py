"""``gemma-explore``: every command through its real entry point, exit codes 0 and 2.

``pip install -e`` writes the console script; until then ``python -m gemma_explore.cli``
is the same ``main``, and the ``[project.scripts]`` target is checked to import.
"""

from __future__ import annotations

import csv
import importlib
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import typer
from PIL import Image
from typer.testing import CliRunner

from gemma_explore import cli
from gemma_explore.engines.serve_args import engine_args
from gemma_explore.plans.audio import plan_audio
from gemma_explore.plans.image import plan_image
from gemma_explore.plans.video import plan_video
from gemma_explore.processing.transcription import speech_to_text_config
from gemma_explore.samples import SAMPLES_DIR
from gemma_explore.vllm_versions import SUPPORTED, vllm_profile
from tests.vllm_audio import vllm_decode

ROOT = Path(__file__).resolve().parents[1]
PHOTO, SPEECH, VIDEO = (SAMPLES_DIR / n for n in ("photo.jpg", "speech.wav", "video.mp4"))
runner = CliRunner()


def run(*args: str):
    return runner.invoke(cli.app, [str(a) for a in args], prog_name="gemma-explore")


def _one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines, result.output
    # Ours: "gemma-explore: error: …". Click's own usage errors (a missing argument, a bad
    # option value) end with "Error: …"; argparse's (the demo's flags) with "…: error: …".
    prefixes = ("gemma-explore: error: ", "Error: ", "gemma-explore demo: error: ")
    assert lines[-1].startswith(prefixes), lines[-1]
    return lines[-1]


def test_the_scripts_entry_resolves_to_main():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["gemma-explore"].partition(":")
    target = getattr(importlib.import_module(module), function)
    assert target is cli.main and callable(target)
    with pytest.raises(SystemExit) as exit_:
        target(["--help"])
    assert exit_.value.code == 0


def test_python_dash_m_runs_the_same_main():
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    ok = subprocess.run(
        [sys.executable, "-m", "gemma_explore.cli", "plan", str(PHOTO), "--budget", "70"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert ok.returncode == 0, ok.stderr
    assert "ImagePlan — gemma4" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "gemma_explore.cli", "plan", "no/such.jpg"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "gemma-explore: error: no/such.jpg: No image file at no/such.jpg. Check the path."
    ]


def _listed(args: list[str], columns: int) -> dict[str, str]:
    """Command → its description in ``--help``'s "Commands:" list, its wrapped lines joined."""
    result = runner.invoke(
        cli.app, [*args, "--help"], prog_name="gemma-explore", env={"COLUMNS": str(columns)}
    )
    assert result.exit_code == 0, result.output
    listed: dict[str, str] = {}
    name = None
    for line in result.stdout.split("Commands:\n", 1)[1].splitlines():
        entry = re.match(r"  (\S+)\s+(.*)$", line)
        if entry:
            name, text = entry.groups()
            listed[name] = text
        elif name and line.strip():  # a wrapped line of the entry above
            listed[name] += " " + line.strip()
    return listed


@pytest.mark.parametrize("columns", [40, 80, 200])
@pytest.mark.parametrize("group", [[], ["tokenizer"]])
def test_the_help_listing_shows_each_commands_whole_sentence(group, columns):
    """Click cuts a docstring's first line at about 45 characters ("Print how each file
    becomes tokens, with the steps of..."): every command has its own short help, a whole
    sentence, and the listing shows all of it at any terminal width."""
    click_group = typer.main.get_group(cli.app)
    for word in group:
        click_group = click_group.commands[word]
    listed = _listed(group, columns)
    assert list(listed) == list(click_group.commands)
    for name, command in click_group.commands.items():
        sentence = " ".join((command.short_help or "").split())
        assert sentence[:1].isupper() and sentence.endswith(".") and "..." not in sentence, name
        assert listed[name] == sentence, name


@pytest.mark.parametrize("command", ["plan", "bill", "serve-args", "demo", "transcribe"])
def test_every_command_has_help_with_an_example(command):
    result = run(command, "--help")
    assert result.exit_code == 0, result.output
    assert f"Example: gemma-explore {command}" in " ".join(result.output.split())


def test_plan_prints_each_plan_with_steps():
    result = run("plan", PHOTO, SPEECH, VIDEO, "--budget", "560")
    assert result.exit_code == 0, result.output
    want = plan_image(PHOTO, family="gemma4", max_soft_tokens=560)
    assert repr(want) in result.stdout and "steps:" in result.stdout
    assert "AudioPlan — gemma4" in result.stdout and "VideoPlan — gemma4" in result.stdout


def test_plan_budget_auto_picks_and_says_why():
    result = run("plan", PHOTO, "--budget", "auto", "--json")
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)
    want = plan_image(PHOTO, family="gemma4", max_soft_tokens="auto")
    assert row["max_soft_tokens"] == want.max_soft_tokens == 280
    assert row["steps"][0].startswith("auto: 280 is the smallest budget")
    printed = run("plan", PHOTO, "--budget", "auto").stdout
    assert "scale per budget" in printed


def test_plan_json_has_the_plans_numbers():
    result = run("plan", PHOTO, SPEECH, VIDEO, "--family", "gemma4", "--json")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["kind"] for r in rows] == ["image", "audio", "video"]
    assert rows[0]["num_soft_tokens"] == plan_image(PHOTO, family="gemma4").num_soft_tokens
    assert rows[1]["total_tokens"] == plan_audio(SPEECH, family="gemma4").total_tokens
    video = plan_video(VIDEO)
    assert rows[2]["total_tokens"] == video.total_tokens
    assert rows[2]["frame_plan"]["num_soft_tokens"] == video.soft_tokens_per_frame
    assert "image" not in rows[0] and "waveform" not in rows[1]  # no pixel arrays


@pytest.mark.parametrize(
    "args, reason",
    [
        (("--budget", "71"), "--budget 71 is not a Gemma 4 budget"),
        (("--family", "gemma3n", "--budget", "280"), "drop --budget"),
        (("--family", "gemma9"), "--family 'gemma9' is not a family"),
        (("--budget", "big"), '--budget takes a budget (70, 140, 280, 560, 1120) or "auto"'),
        (("--family", "gemma3n", "--budget", "auto"), "drop --budget"),
    ],
)
def test_plan_bad_input_exits_2(args, reason):
    line = _one_line_error(run("plan", PHOTO, *args))
    assert reason in line


def test_plan_unsupported_file_exits_2(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hi")
    assert "unsupported file type .txt" in _one_line_error(run("plan", notes))


def test_plan_gemma3n_video_exits_2():
    assert "no video input" in _one_line_error(run("plan", VIDEO, "--family", "gemma3n"))


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("small")
    (root / "sub").mkdir()
    for i, (h, w) in enumerate([(100, 200), (480, 640), (33, 900), (1024, 768)]):
        Image.new("RGB", (w, h), (i * 40, 0, 0)).save(root / f"img{i}.png")
    Image.new("RGB", (64, 64)).save(root / "sub" / "deep.jpg")
    sf.write(root / "clip.wav", np.zeros(16_000, np.float32), 16_000)
    (root / "broken.jpg").write_bytes(b"garbage")
    return root


def test_bill_prints_totals_failures_histogram_and_writes_csv_and_png(small_dataset, tmp_path):
    out, png = tmp_path / "bill.csv", tmp_path / "bill.png"
    result = run(
        "bill",
        small_dataset,
        "--budget",
        "70,280,1120",
        "--recursive",
        "--out",
        out,
        "--plot",
        png,
        "--workers",
        "2",
    )
    assert result.exit_code == 0, result.output
    text = result.stdout
    sizes = [(100, 200), (480, 640), (33, 900), (1024, 768), (64, 64)]
    for budget in (70, 280, 1120):
        images = sum(
            plan_image(s, family="gemma4", max_soft_tokens=budget).total_tokens for s in sizes
        )
        total = images + plan_audio(16_000, family="gemma4").total_tokens
        line = next(t for t in text.splitlines() if t.strip().startswith(f"budget {budget}:"))
        assert f" {total:,} tokens" in line
    assert "Files that fail (1)" in text and "broken.jpg" in text
    header = next(t for t in text.splitlines() if t.startswith("file "))
    assert header.split() == ["file", "kind", "tokens@70", "tokens@280", "tokens@1120"]
    img0 = next(t for t in text.splitlines() if t.split()[:1] and t.split()[0].endswith("img0.png"))
    want0 = [
        plan_image((100, 200), family="gemma4", max_soft_tokens=b).total_tokens
        for b in (70, 280, 1120)
    ]
    assert img0.split()[1:] == ["image", *(f"{w:,}" for w in want0)]
    assert "Slowest part:" in text and "Tokens per file (budget 70)" in text
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 7 and {r["kind"] for r in rows} == {"image", "audio"}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bill_says_what_the_model_hears_of_a_clip_over_30_s(tmp_path):
    """The 45 s clip's row is priced at the 30 s the model hears, and says so; the bill's
    note gives the seconds never heard. The 5 s clip's row has no note."""
    sf.write(tmp_path / "long.wav", np.zeros(16_000 * 45, np.float32), 16_000)
    sf.write(tmp_path / "short.wav", np.zeros(16_000 * 5, np.float32), 16_000)
    result = run("bill", tmp_path, "--workers", "1")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    long, short = plan_audio(tmp_path / "long.wav"), plan_audio(tmp_path / "short.wav")
    heard_s, cut_s = long.samples_used / 16_000, (long.num_samples - long.samples_used) / 16_000
    (row,) = [line for line in lines if line.split()[:1] == [str(tmp_path / "long.wav")]]
    assert row.split()[1:3] == ["audio", f"{long.total_tokens:,}"]
    assert row.endswith(f"(the model hears {heard_s:g} s; {cut_s:.1f} s cut)")
    (row,) = [line for line in lines if line.split()[:1] == [str(tmp_path / "short.wav")]]
    assert row.split()[1:] == ["audio", f"{short.total_tokens:,}"]
    (note,) = [line for line in lines if line.startswith("Note: ")]
    assert note.startswith(f"Note: 1 file holds a clip over {heard_s:g} s: Gemma 4 hears")
    assert f"{long.total_tokens:,} tokens" in note and f"{cut_s:.1f} s of audio past" in note


def test_bill_not_recursive_skips_subfolders(small_dataset):
    result = run("bill", small_dataset, "--workers", "1")
    assert result.exit_code == 0, result.output
    assert "6 files, 5 billed" in result.stdout
    quiet = run("bill", small_dataset, "--workers", "1", "--per-file", "0")
    assert not any(line.startswith("file ") for line in quiet.stdout.splitlines())
    few = run("bill", small_dataset, "--workers", "1", "--per-file", "2")
    assert "… and 3 more billed files" in few.stdout


@pytest.mark.parametrize(
    "args, reason",
    [
        (("--budget", "70,abc"), "budgets separated by commas"),
        (("--budget", "75"), "--budget 75 is not a Gemma 4 budget"),
        (("--family", "gemma3n", "--budget", "280"), "no image budget"),
        (("--out", "bill.xlsx"), ".csv or .parquet"),
        (("--plot", "bill.svg"), "ending in .png"),
    ],
)
def test_bill_bad_input_exits_2(small_dataset, args, reason):
    assert reason in _one_line_error(run("bill", small_dataset, *args))


def test_bill_missing_folder_and_parquet_without_pyarrow_exit_2(tmp_path):
    assert "No file or folder" in _one_line_error(run("bill", tmp_path / "nope"))
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        line = _one_line_error(run("bill", tmp_path, "--out", tmp_path / "b.parquet"))
        assert "pip install pyarrow" in line
    else:
        result = run("bill", tmp_path, "--out", tmp_path / "b.parquet")
        assert result.exit_code == 0, result.output


def test_serve_args_prints_the_recipe():
    from gemma_explore.serving.recipe import Workload

    result = run("serve-args", "google/gemma-4-E4B-it", "--budget", "560", "--images", "2")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    # Always the same order, whatever the flags: the command, the release and why, why each
    # argument, advice.
    line = lines[0]
    assert line.startswith("vllm serve") and "#" not in line  # runs as printed
    release = vllm_profile(None)  # no --vllm: the installed vLLM's, else the newest
    assert lines[1] == f"# {release.label}'s rules ({release.chosen_because})"
    why = [text for text in lines[2:] if not text.startswith(("# consider", "# lever"))]
    levers = [text for text in lines[2:] if text.startswith("# lever")]
    advice = [text for text in lines[2:] if text.startswith("# consider")]
    assert lines[2:] == why + levers + advice
    # Production advice follows the reasons, one flag and its reason per line.
    assert [a.split(":")[0] for a in advice] == [
        "# consider --tensor-parallel-size 1",
        "# consider --quantization fp8",
        "# consider --kv-cache-dtype fp8",
        "# consider --enable-prefix-caching",
        "# consider --max-num-seqs",
    ]
    # A stated workload: the serving plan's recipe, with one reason per argument.
    reasons: dict[str, str] = {}
    proposed = engine_args(
        "google/gemma-4-E4B-it",
        workload=Workload(images=2, max_soft_tokens=560),
        workshop=False,
        reasons=reasons,
    )
    assert why == [f"# {k}: {v}" for k, v in reasons.items()]
    assert why[-1].startswith("# gpu_memory_utilization: unset")  # the release's own sizing
    mml = proposed["max_model_len"]
    assert line.startswith(f"vllm serve google/gemma-4-E4B-it --max-model-len {mml}")
    assert mml == 2048  # 2 × (560 + 2) + 256 text + 512 answer = 1892, rounded up to 256s
    assert """--mm-processor-kwargs '{"max_soft_tokens": 560}'""" in line
    assert """--limit-mm-per-prompt '{"image": 2, "audio": 0, "video": 0}'""" in line
    plain = run("serve-args", "google/gemma-4-E4B-it", "--budget", "560").stdout.strip()
    assert plain.startswith("vllm serve google/gemma-4-E4B-it --max-model-len 8192")
    # else requests' own budgets get a 400 from vllm serve
    assert plain.splitlines()[0].endswith(" --trust-request-mm-kwargs")
    as_json = json.loads(run("serve-args", "google/gemma-3n-E2B-it", "--json").stdout)
    # production: no CUDA-graph skip, and the release's own sizing (no utilization)
    want = engine_args("google/gemma-3n-E2B-it", workshop=False)
    assert as_json["args"] == json.loads(json.dumps(want))
    assert "--max-num-seqs" in as_json["advice"]
    assert as_json["vllm_release"] == {
        "version": release.version,
        "label": release.label,
        "because": release.chosen_because,
    }


@pytest.mark.parametrize("version", SUPPORTED)
def test_serve_args_names_the_release_it_used(version):
    """--vllm picks the release: the command line ends with its name, the next line says
    why, and the utilization follows its sizing (the extensible KV cache leaves the flag
    unset and says so); the JSON carries it too."""
    release = vllm_profile(version)
    done = run("serve-args", "google/gemma-4-E4B-it", "--images", "1", "--vllm", version)
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0].startswith("vllm serve ") and "#" not in lines[0]  # runs as printed
    assert lines[1] == f"# vLLM {version}'s rules (--vllm {version})"
    assert "--gpu-memory-utilization" not in lines[0]  # production: unset, whatever release
    (util,) = [line for line in lines if line.startswith("# gpu_memory_utilization:")]
    if release.kv_sizing == "extensible":
        assert "extensible KV cache" in util and "measures" in util
    else:
        assert f"default {release.gpu_memory_utilization:g}" in util
    as_json = json.loads(
        run("serve-args", "google/gemma-4-E4B-it", "--vllm", version, "--json").stdout
    )
    assert as_json["vllm_release"]["label"] == f"vLLM {version}"
    assert as_json["vllm_release"]["because"] == f"--vllm {version}"


def test_a_release_past_the_newest_is_planned_by_the_newest_and_said_unchecked():
    newest = SUPPORTED[-1]
    major, minor = (int(x) for x in newest.split("."))
    later = f"{major}.{minor + 1}"
    done = run("serve-args", "google/gemma-4-E4B-it", "--vllm", later)
    assert done.exit_code == 0, done.output
    line = done.stdout.splitlines()[1]
    assert line.startswith(f"# vLLM {newest}'s rules (") and f"unchecked for {later}" in line


@pytest.mark.parametrize(
    "command",
    [
        ("serve-args", "google/gemma-4-E4B-it"),
        ("explain", "anything"),
        ("processor-cache", "gemma4"),
        ("admit", "google/gemma-4-E4B-it", "requests.jsonl"),
        ("probe", "http://127.0.0.1:9/v1", "--model", "m"),
    ],
)
@pytest.mark.parametrize("bad", ["0.31", "latest"])
def test_a_release_not_supported_is_one_line_naming_the_flag(command, bad):
    """Refused before any work, in one line that names --vllm and every supported release
    (read from the profiles, not written here)."""
    error = _one_line_error(run(*command, "--vllm", bad))
    assert error.startswith(f"gemma-explore: error: --vllm {bad}:")
    assert ", ".join(SUPPORTED) in error


def test_every_command_that_states_a_vllm_fact_takes_vllm_and_lists_the_releases():
    group = typer.main.get_group(cli.app)
    for name in ("serve-args", "admit", "explain", "processor-cache", "probe"):
        (option,) = [p for p in group.commands[name].params if "--vllm" in p.opts]
        assert all(v in option.help for v in SUPPORTED), name


def test_serve_args_warns_when_no_request_of_a_kind_fits():
    result = run("serve-args", "google/gemma-4-E4B-it", "--max-model-len", "100")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("# warning")]
    image = plan_image((672, 960), family="gemma4")  # an image that fills the budget 280
    assert f"an image at the start-up budget takes {image.total_tokens} tokens" in warnings[0]
    assert "--max-model-len 100" in warnings[0] and "--images 0" in warnings[0]
    video = plan_video(32, fps=1, frame_size=(336, 480))  # 32 frames that fill budget 70
    assert f"the largest video takes {video.total_tokens} tokens" in warnings[-1]
    fits = run("serve-args", "google/gemma-4-E4B-it", "--max-model-len", "8192")
    assert "# warning" not in fits.stderr


def test_cli_errors_name_flags_not_arguments():
    line = _one_line_error(run("serve-args", "google/gemma-3n-E4B-it", "--videos", "1"))
    assert line.endswith("set --videos 0.") and "videos=0" not in line
    line = _one_line_error(run("plan", VIDEO, "--family", "gemma3n"))
    assert "Use --family gemma4" in line and "family=" not in line


def test_plan_json_writes_sizes_by_name():
    row = json.loads(run("plan", PHOTO, "--json").stdout)
    want = plan_image(PHOTO, family="gemma4")
    h, w = want.resized_size
    assert row["resized_size"] == {"width": w, "height": h} and row["family"] == "gemma4"


def test_plan_json_names_width_and_height_as_the_printout_writes_them():
    """The printout writes every size and grid W×H; the JSON names each side, for every
    (height, width) pair a plan holds: sizes, grids, the area one token covers."""
    printed = run("plan", PHOTO).stdout
    row = json.loads(run("plan", PHOTO, "--json").stdout)
    rows = {"original": "original_size", "resized": "resized_size"}
    rows |= {"patch grid": "patch_grid", "pooled grid": "pooled_grid"}
    for label, key in rows.items():
        w, h = re.search(rf"^ +{label} +(\d+)×(\d+) .*\(W×H\)$", printed, re.M).groups()
        assert row[key] == {"width": int(w), "height": int(h)}, key
    assert row["patch_grid"]["width"] != row["patch_grid"]["height"]  # the order shows
    h, w = plan_image(PHOTO, family="gemma4").token_area
    assert row["token_area"] == {"width": w, "height": h}
    video = json.loads(run("plan", VIDEO, "--json").stdout)
    h, w = plan_video(VIDEO).frame_plan.pooled_grid
    assert video["frame_plan"]["pooled_grid"] == {"width": w, "height": h}


@pytest.mark.parametrize("version", SUPPORTED)
def test_serve_args_workshop_flags_only_when_asked(version):
    """--gpu-memory-utilization is proposed only with --workshop (room for a notebook),
    and its reason says what it does under the release: replace the default share, or cap
    the extensible KV cache."""
    plain = run("serve-args", "google/gemma-4-E2B-it", "--vllm", version).stdout
    assert "--enforce-eager" not in plain and "--gpu-memory-utilization" not in plain
    workshop = run("serve-args", "google/gemma-4-E2B-it", "--workshop", "--vllm", version).stdout
    assert "--enforce-eager" in workshop and "--gpu-memory-utilization 0.85" in workshop
    (util,) = [x for x in workshop.splitlines() if x.startswith("# gpu_memory_utilization:")]
    assert util.startswith("# gpu_memory_utilization: 0.85, the workshop's")
    assert ("caps" in util) == (vllm_profile(version).kv_sizing == "extensible")


@pytest.mark.parametrize("model", ["google/gemma-4-31B", "google/gemma-4-26B-A4B-it"])
def test_serve_args_audio_follows_the_config_not_the_name(model):
    """The base 31B is not in any name list: its built-in config has no audio_config."""
    assert "no audio tower" in _one_line_error(run("serve-args", model, "--audios", "1"))
    line = run("serve-args", model, "--images", "2").stdout
    assert """'{"image": 2, "video": 0}'""" in line and '"audio"' not in line


@pytest.mark.parametrize(
    "args, reason",
    [
        (("mystery-model",), "Cannot tell whether"),
        (("google/gemma-4-E4B-it", "--budget", "300"), "max_soft_tokens must be one of"),
        (("google/gemma-3n-E2B-it", "--budget", "280"), "no image budget"),
    ],
)
def test_serve_args_bad_input_exits_2(args, reason):
    assert reason in _one_line_error(run("serve-args", *args))


def test_demo_is_the_packaged_main_with_its_flags(monkeypatch):
    """The command runs gemma_explore.app.demo.main (in the package: a wheel has it), the
    same function `python demo_app.py` calls; nothing is loaded by file path."""
    import demo_app
    from gemma_explore.app import demo
    from gemma_explore.cli.workshop import demo_main

    assert demo_main() is demo.main is demo_app.main
    seen = []
    monkeypatch.setattr(demo, "main", seen.append)
    result = run("demo", "--model", "tiny-gemma3n", "--port", "7999", "--host", "127.0.0.1")
    assert result.exit_code == 0, result.output
    assert seen == [["--model", "tiny-gemma3n", "--port", "7999", "--host", "127.0.0.1"]]


def test_demo_help_and_bad_flags_come_from_the_demos_parser():
    result = run("demo", "--help")
    assert result.exit_code == 0
    assert "--port" in result.stdout and "--engine {hf,vllm,openai}" in result.stdout
    bad = run("demo", "--port", "abc")
    assert bad.exit_code == 2
    assert "argument --port: invalid int value: 'abc'" in bad.stderr


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("clips") / "tone.wav"
    t = np.arange(16_000 * 2) / 16_000
    sf.write(path, (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 16_000)
    return path


def test_transcribe_with_the_tiny_model_says_noise(clip):
    result = run(
        "transcribe",
        clip,
        "--language",
        "en",
        "--translate-to",
        "fr",
        "--max-new-tokens",
        "4",
        "--show-prompt",
    )
    assert result.exit_code == 0, result.output
    assert "Translate this audio from English into French" in result.stdout
    assert "this text is noise" in result.stdout


@pytest.mark.parametrize(
    "args, reason",
    [
        (("--language", "xx"), "Unknown language 'xx'"),
        (("--translate-to", "klingon"), "Unknown target language"),
        (("--model", "tiny-gemma4"), "Gemma 4 has no speech-to-text"),
        (("--engine", "tpu"), "Unknown engine 'tpu'"),
    ],
)
def test_transcribe_bad_input_exits_2(clip, args, reason):
    assert reason in _one_line_error(run("transcribe", clip, *args))


def test_transcribe_refuses_clips_past_vllms_decode_limit(tmp_path, monkeypatch):
    limit = speech_to_text_config().max_decode_s  # the installed release's decode limit
    long = tmp_path / "long.wav"
    sf.write(long, np.zeros(8_000 * (limit + 1), np.float32), 8_000)
    vllm_limit, refused = vllm_decode(long, monkeypatch)
    line = _one_line_error(run("transcribe", long))
    assert f"at most {limit} s" in line
    if vllm_limit is not None:  # vLLM refuses the same file, in the words we quote
        assert vllm_limit == limit and isinstance(refused, ValueError)
        quoted = line.split('("', 1)[1].split('"', 1)[0]
        assert quoted.startswith("Audio exceeds maximum allowed duration of")
        assert quoted in str(refused)
    assert "No audio file" in _one_line_error(run("transcribe", tmp_path / "missing.wav"))


def test_transcribe_warns_about_the_cut(tmp_path, monkeypatch):
    """vLLM takes a 31 s clip whole; transformers' extractor keeps its first max_length
    samples (truncation=True), and the command says so."""
    import inspect

    from transformers.models.gemma3n.feature_extraction_gemma3n import (
        Gemma3nAudioFeatureExtractor,
    )

    call = inspect.signature(Gemma3nAudioFeatureExtractor.__call__).parameters
    assert call["truncation"].default is True
    heard = call["max_length"].default / Gemma3nAudioFeatureExtractor().sampling_rate
    long = tmp_path / "long.wav"
    sf.write(long, np.zeros(int(16_000 * (heard + 1)), np.float32), 16_000)
    _, decoded = vllm_decode(long, monkeypatch)
    if decoded is not None:
        assert isinstance(decoded, np.ndarray) and len(decoded) == 16_000 * (heard + 1)
    result = run("transcribe", long, "--max-new-tokens", "2", "--no-split")
    assert result.exit_code == 0, result.output
    assert f"hears only its first {heard:g} s" in result.stdout


def test_transcribe_splits_a_long_clip(tmp_path):
    """Past 30 s the default sends the windows plan_long_audio draws, one request each."""
    from gemma_explore.plans.long_audio import plan_long_audio

    long = tmp_path / "long.wav"
    sf.write(long, np.zeros(31 * 16_000, np.float32), 16_000)
    windows = plan_long_audio(long, family="gemma3n").windows
    result = run("transcribe", long, "--max-new-tokens", "2")
    assert result.exit_code == 0, result.output
    assert f"was sent as {len(windows)} windows" in result.stdout
    assert "hears only" not in result.stdout


# The openai engine's success path (a real vllm serve): tests/serve/test_speech.py.


def test_transcribe_without_a_server_exits_2(clip):
    line = _one_line_error(
        run(
            "transcribe",
            clip,
            "--engine",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "google/gemma-3n-E4B-it",
        )
    )
    assert "No server answered" in line and "--base-url" in line


def test_serve_args_knows_audio_less_checkpoints_and_local_folders(tmp_path):
    result = run("serve-args", "google/gemma-4-31B-it")
    assert result.exit_code == 0 and """'{"image": 4, "video": 1}'""" in result.stdout
    refused = run("serve-args", "google/gemma-4-31B-it", "--audios", "1")
    assert "no audio tower" in _one_line_error(refused)
    # A local folder: the family and the towers come from its config.json.
    big = tmp_path / "my-finetune"
    big.mkdir()
    (big / "config.json").write_text('{"model_type": "gemma4", "audio_config": null}')
    local = run("serve-args", big, "--json")
    assert local.exit_code == 0, local.output
    want = engine_args(str(big), family="gemma4", has_audio=False, enforce_eager=False)
    want.pop("gpu_memory_utilization")  # production: the release's own sizing
    assert json.loads(local.stdout)["args"] == json.loads(json.dumps(want))
    assert "audio" not in want["limit_mm_per_prompt"]


def test_serve_args_for_a_tiny_model_saves_it_so_the_line_runs(tmp_path):
    """`vllm serve tiny-gemma4` would find nothing: the command asks for --save, then names
    the saved folder, which transformers reads back as the same family."""
    assert "--save DIR" in _one_line_error(run("serve-args", "tiny-gemma4"))
    folder = tmp_path / "tiny4"
    line = run("serve-args", "tiny-gemma4", "--save", folder).stdout.splitlines()[0]
    assert line.startswith(f"vllm serve {folder} ")
    from transformers import AutoConfig

    assert AutoConfig.from_pretrained(folder).model_type == "gemma4"


def test_serve_args_says_when_it_goes_by_the_name_alone():
    typo = run("serve-args", "google/gemma-4-E4B-iit")
    assert typo.exit_code == 0
    assert "no config read for google/gemma-4-E4B-iit" in typo.stderr
    assert "Did you mean google/gemma-4-E4B-it?" in typo.stderr
    assert "no config read" not in run("serve-args", "google/gemma-4-E4B-it").stderr


def test_tokenizer_fetch_shows_the_notice_and_fails_in_one_line_offline(tmp_path, monkeypatch):
    import urllib.request

    from gemma_explore.models import vocabulary

    monkeypatch.setenv(vocabulary.CACHE_ENV, str(tmp_path))  # an empty cache: not fetched

    def offline(*args, **kwargs):
        raise OSError("Network is unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    result = run("tokenizer", "fetch")
    assert result.exit_code == 2
    assert vocabulary.TERMS_URL in result.stdout  # the notice comes before any download
    line = _one_line_error(result)
    assert "Network is unreachable" in line and "gemma-explore tokenizer fetch" in line
    assert not any(tmp_path.rglob("tokenizer.json"))  # nothing stored
    status = run("tokenizer", "status").stdout
    assert "not fetched" in status and "gemma-explore tokenizer fetch" in status


def _documented_commands() -> list[tuple[str, str, list[str]]]:
    """(file, command, flags) for every `gemma-explore COMMAND …` the docs and README show."""
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for line in re.findall(
            r"gemma-explore ([a-z-]+(?: fetch| status)?)([^`|\n#]*)", doc.read_text()
        ):
            command, rest = line
            found.append((doc.name, command, re.findall(r"(?<![\w-])--[a-z][a-z-]*", rest)))
    return found


def test_every_documented_flag_exists():
    # A rename migrates its docs too: every flag the docs show is one the command takes.
    group = typer.main.get_group(cli.app)
    shown = _documented_commands()
    assert len(shown) > 15
    for doc, command, flags in shown:
        if command == "demo":  # argparse: its own --help lists them
            usage = run("demo", "--help").stdout
            assert all(f in usage for f in flags), (doc, command, flags)
            continue
        cmd = group
        for word in command.split():  # a group (tokenizer) and its sub-command
            assert word in cmd.commands, f"{doc}: gemma-explore {command} is not a command"
            cmd = cmd.commands[word]
        opts = {o for p in getattr(cmd, "params", []) for o in p.opts + p.secondary_opts}
        missing = [f for f in flags if f not in opts and f != "--help"]
        assert not missing, f"{doc}: gemma-explore {command} has no {missing}"


def test_golden_refuses_a_vocabulary_folder_without_the_tokenizer(tmp_path):
    """The check runs before any generation: one line naming the flag and the fix."""
    error = _one_line_error(run("golden", "--out", tmp_path / "set", "--vocabulary", tmp_path))
    assert (
        error.startswith(f"gemma-explore: error: --vocabulary {tmp_path}:")
        and "tokenizer fetch" in error
    )
    assert not (tmp_path / "set").exists()


@pytest.mark.parametrize(
    ("fault", "code", "verdict"), [("honest", 0, "matches"), ("square", 1, "squashed to a square")]
)
def test_probe_prints_each_verdict_and_exits_on_a_fault(tiny4, fault, code, verdict):
    """`gemma-explore probe` against the loopback server that counts with transformers'
    real processor, honestly or squashing to a square."""
    from tests.conformance.faulty_server import faulty_server

    with faulty_server(tiny4, fault) as (url, _):
        done = run(
            "probe",
            url,
            "--model",
            "served-gemma",
            "--family",
            "gemma4",
            "--clips",
            "none",
            "--video",
            "none",
        )
    assert done.exit_code == code, done.output
    assert verdict in done.stdout
    release = vllm_profile(None)
    assert done.stdout.splitlines()[0] == f"{release.label}'s rules ({release.chosen_because})"


@pytest.mark.parametrize("version", [SUPPORTED[0], SUPPORTED[-1]])
def test_probe_names_the_release_whose_arithmetic_it_used(tiny4, version):
    """The line, the table's column and the JSON name --vllm's release; the JSON names it
    even when no server answered (exit 2: no count)."""
    from tests.conformance.faulty_server import faulty_server

    with faulty_server(tiny4) as (url, _):
        done = run("probe", url, "--model", "served-gemma", "--family", "gemma4",
                   "--clips", "none", "--video", "none", "--vllm", version)  # fmt: skip
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[0] == f"vLLM {version}'s rules (--vllm {version})"
    assert f"vLLM {version}'s arithmetic" in done.stdout
    as_json = run("probe", "http://127.0.0.1:9/v1", "--model", "google/gemma-4-E4B-it",
                  "--timeout", "2", "--vllm", version, "--json")  # fmt: skip
    assert as_json.exit_code == 2 and json.loads(as_json.stdout)["vllm_version"] == version
    assert json.loads(as_json.stdout)["failure_kind"] == "refused"


def test_probe_names_a_bad_flag_in_its_own_words():
    error = _one_line_error(
        run("probe", "http://127.0.0.1:9/v1", "--model", "m", "--images", "big")
    )
    assert "--images" in error


def test_processor_cache_prints_vllms_bytes_per_item():
    """The table's bytes are cached_item's, which tests/serving/test_processor_cache.py
    holds to vLLM's get_item_size on its own processor output."""
    from gemma_explore.serving.processor_cache import cached_item

    sizes = set()
    for version in (SUPPORTED[0], SUPPORTED[-1]):  # --vllm picks the release's item sizes
        done = run("processor-cache", "gemma4", "--dtype", "float32", "--vllm", version)
        assert done.exit_code == 0, done.output
        assert done.stdout.splitlines()[0] == f"vLLM {version}'s rules (--vllm {version})"
        lines = done.stdout.splitlines()
        row = next(line for line in lines if line.startswith("image at budget 280"))
        item = cached_item("gemma4", "image", budget=280, dtype="float32", vllm_version=version)
        assert f"{item.bytes:,}" in row
        sizes.add(item.bytes)
    assert len(sizes) == 2  # the newest keeps Gemma 4's pixels raw (uint8): not the oldest's


def test_processor_cache_names_a_bad_dtype():
    error = _one_line_error(run("processor-cache", "gemma4", "--dtype", "int3"))
    assert "--dtype int3" in error


def test_serve_args_names_an_unknown_gpu_in_its_flag():
    error = _one_line_error(run("serve-args", "google/gemma-4-E4B-it", "--gpu", "T4"))
    assert error.startswith("gemma-explore: error: --gpu T4: use one of L4,")


def test_serve_args_on_an_l4_plans_vllm_serves_l4_defaults():
    """On an L4 `vllm serve` batches 2048 tokens (vLLM's EngineArgs defaults, which
    tests/serving/test_plan_defaults.py holds the plan to); the printed line's concurrency
    is capacity()'s for the same plan."""
    from gemma_explore.engines.serve_args import engine_args, serving_plan_for
    from gemma_explore.serving.recipe import Workload

    done = run("serve-args", "google/gemma-4-E2B-it", "--images", "1", "--gpu", "L4", "--json")
    assert done.exit_code == 0, done.output
    args = json.loads(done.stdout)["args"]
    plan = serving_plan_for(
        engine_args("google/gemma-4-E2B-it", workload=Workload(images=1), workshop=False, gpu="L4"),
        gpu="L4",
    )
    assert plan.max_num_batched_tokens == 2048
    assert args.get("max_num_batched_tokens", 2048) == 2048


def test_admit_reads_a_jsonl_workload(tmp_path):
    """One row per request, with admit's verdict (tests/serving/test_admit.py holds admit to
    vLLM's InputProcessor and HTTP layer)."""
    from gemma_explore.serving.admission import Request, admit
    from gemma_explore.serving.plan import plan_serving

    lines = ['{"images": [[768, 1024]], "max_tokens": 256}', '{"max_tokens": 9000}']
    (tmp_path / "r.jsonl").write_text("\n".join(lines))
    for version in (None, SUPPORTED[-1]):
        flag = () if version is None else ("--vllm", version)
        done = run("admit", "google/gemma-4-E4B-it", tmp_path / "r.jsonl", *flag)
        assert done.exit_code == 0, done.output
        plan = plan_serving("google/gemma-4-E4B-it", vllm_version=version)
        refused = admit(plan, Request(max_tokens=9000), entry_point="serve")
        assert not refused.accepted and refused.message in done.stdout
        assert "2 requests" in done.stdout or "1 of 2" in done.stdout
        release = vllm_profile(version)
        why = release.chosen_because if version is None else f"--vllm {version}"
        assert done.stdout.splitlines()[0] == f"{release.label}'s rules ({why})"


def test_explain_names_the_release_whose_messages_it_matched():
    message = "At most 1 image(s) may be provided in one prompt."
    for version in SUPPORTED:
        done = run("explain", message, "--vllm", version)
        assert done.exit_code == 0, done.output
        assert done.stdout.splitlines()[0] == f"vLLM {version}'s rules (--vllm {version})"
        as_json = json.loads(run("explain", message, "--vllm", version, "--json").stdout)
        assert as_json["vllm_release"]["version"] == version


def test_admit_names_a_bad_line(tmp_path):
    (tmp_path / "r.jsonl").write_text('{"pictures": 1}\n')
    error = _one_line_error(run("admit", "google/gemma-4-E4B-it", tmp_path / "r.jsonl"))
    assert "requests line 1: unknown field(s) ['pictures']" in error


def _printed_args(line: str) -> dict:
    """A printed ``vllm serve`` line back into engine arguments (vLLM's flags)."""
    import shlex

    words = shlex.split(line)
    assert words[:2] == ["vllm", "serve"]
    args: dict = {"model": words[2]}
    i = 3
    while i < len(words):
        key = words[i].removeprefix("--").replace("-", "_")
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            value = words[i + 1]
            try:
                args[key] = json.loads(value)
            except json.JSONDecodeError:
                args[key] = value
            i += 2
        else:
            args[key] = True
            i += 1
    return args


@pytest.mark.parametrize(
    "gpu,code",
    [("L4", 2), ("A100 40GB", 3), ("H100 80GB", 0)],
)
def test_serve_args_never_prints_a_command_that_does_not_fit(gpu, code):
    """The 31B: none fits one L4 (the smallest GPU named instead), two A100 40GB do (the
    lever printed, the command re-planned from its own flags starts), one H100 fits as
    asked. The exit code says which (docs/cli.md)."""
    from gemma_explore.engines.serve_args import serving_plan_for, starts

    done = run("serve-args", "google/gemma-4-31B-it", "--gpu", gpu)
    assert done.exit_code == code, done.output
    lines = done.stdout.splitlines()
    commands = [line for line in lines if line.startswith("vllm serve")]
    if code == 0:
        assert lines[0].startswith("vllm serve")
    else:
        assert lines[0].startswith("# does not fit: google/gemma-4-31B-it on one ")
        assert "weights 58." in lines[0] and "-token request" in lines[0]
    if code == 2:
        assert commands == [] and "the smallest GPU it fits on as asked: H100 80GB" in done.stdout
        return
    (line,) = commands
    args = _printed_args(line)
    args.pop("trust_request_mm_kwargs", None)
    plan = serving_plan_for(args, gpu=gpu)
    tp = int(args.get("tensor_parallel_size", 1))
    assert starts(plan, tensor_parallel_size=tp)[0].fits
    if code == 3:
        assert "--tensor-parallel-size 2" in line
        assert lines[1].startswith("# fits with --tensor-parallel-size 2: ")
    assert ": 1:" not in done.stdout and "capacity()" not in done.stdout
    assert "levers()" not in done.stdout


def test_serve_args_json_says_whether_it_fits():
    out = json.loads(run("serve-args", "google/gemma-4-31B-it", "--gpu", "L4", "--json").stdout)
    assert out["fits"] is False and out["args"] is None and out["smallest_gpu"] == "H100 80GB"
    assert out["fit"][0].startswith("does not fit:")


def test_explain_gives_cuda_out_of_memory_a_general_hint():
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 22.05 GiB of which 1.2 GiB is free."
    )
    done = run("explain", oom)
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("not a vLLM message: 'cuda-out-of-memory'")
    assert "gemma-explore serve-args MODEL --gpu GPU" in done.stdout
    # Text that is neither still gets the one-line refusal (exit 2).
    assert "matches none" in _one_line_error(run("explain", "something else entirely"))
