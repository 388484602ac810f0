"""Token bills for real datasets: parquet shards, WebDataset tars, save_to_disk folders,
the local hub cache, on the process pool and on Ray Data.

Every dataset here is written by the test with pyarrow and tarfile, in the layouts the
real tools write: parquet shards with Hugging Face ``Image`` / ``Audio`` structs
``{bytes, path}`` and the ``huggingface`` schema metadata ``datasets`` stores; WebDataset
tars with ``key.jpg`` / ``key.wav`` / ``key.json`` members side by side; and a
``save_to_disk`` folder (arrow IPC stream files, ``state.json``, ``dataset_info.json``).
``datasets`` itself is not installed, so its folders are made the way it makes them.

The reference is ``plan_image`` / ``plan_audio`` on the same bytes, which decode the
picture and load (and resample) the clip; the bill reads headers only.
"""

from __future__ import annotations

import inspect
import io
import json
import struct
import tarfile

import numpy as np
import pytest
import soundfile as sf
from PIL import Image

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from gemma_explore.bill import runners as bill_runners  # noqa: E402
from gemma_explore.bill.core import Item, Sample, bill_sample  # noqa: E402
from gemma_explore.bill.cost import STAND_IN, summarize, text_counter  # noqa: E402
from gemma_explore.bill.walk import Progress, bill  # noqa: E402
from gemma_explore.bill.writers import BillWriter  # noqa: E402
from gemma_explore.plans.audio import plan_audio  # noqa: E402
from gemma_explore.plans.image import plan_image  # noqa: E402

BUDGETS = (70, 280, 1120)
# (height, width, format): PNG and JPEG, small, phone-sized, extreme aspect ratios.
IMAGES = [
    (37, 41, "png"),
    (480, 640, "jpeg"),
    (1080, 1920, "jpeg"),
    (900, 3, "png"),
    (300, 500, "png"),
    (768, 768, "jpeg"),
    (64, 2000, "png"),
    (120, 90, "jpeg"),
]
# (samples, rate, channels): rates that need resampling, stereo, a clip over 30 s.
CLIPS = [
    (16_000 * 3, 16_000, 1),
    (44_100 * 2 + 17, 44_100, 2),
    (8_000 * 5 + 3, 8_000, 1),
    (100, 16_000, 1),
    (48_000 * 31, 48_000, 1),
    (22_050, 22_050, 2),
]
CAPTIONS = [
    "A cat on a mat.",
    "Two dogs — running!",
    "",
    "Ein Satz auf Deutsch.",
    "emoji 🙂 and numbers 12345",
    "a longer caption " * 20,
]
HF_FEATURES = {
    "image": {"_type": "Image"},
    "audio": {"_type": "Audio", "sampling_rate": 16_000},
    "text": {"dtype": "string", "_type": "Value"},
    "label": {"dtype": "int64", "_type": "Value"},
}


def image_bytes(h: int, w: int, fmt: str, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed + h * 7 + w)
    small = rng.integers(0, 255, (max(1, h // 8), max(1, w // 8), 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(small).resize((w, h)).save(buf, fmt.upper())
    return buf.getvalue()


def wav_bytes(frames: int, rate: int, channels: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed + frames)
    wave = (rng.standard_normal((frames, channels)) * 0.1).astype(np.float32)
    buf = io.BytesIO()
    sf.write(buf, wave, rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def ref_image(data: bytes) -> tuple[int, ...]:
    return tuple(plan_image(data, family="gemma4", max_soft_tokens=b).total_tokens for b in BUDGETS)


def ref_audio(data: bytes) -> tuple[int, ...]:
    return (plan_audio(data, family="gemma4").total_tokens,) * len(BUDGETS)


def _add(total: list[int], tokens: tuple[int, ...]) -> None:
    for i, t in enumerate(tokens):
        total[i] += t


class Expected:
    """The reference totals, built item by item as the datasets are written."""

    def __init__(self) -> None:
        self.by_kind: dict[str, list[int]] = {"image": [0] * 3, "audio": [0] * 3}
        self.samples = 0
        self.captions: list[str] = []

    def add(self, image: bytes | None, audio: bytes | None, caption: str | None) -> None:
        self.samples += 1
        if image is not None:
            _add(self.by_kind["image"], ref_image(image))
        if audio is not None:
            _add(self.by_kind["audio"], ref_audio(audio))
        if caption is not None:
            self.captions.append(caption)

    @property
    def totals(self) -> tuple[int, ...]:
        return tuple(a + b for a, b in zip(*self.by_kind.values(), strict=True))


def hf_table(rows: list[tuple[bytes, str, bytes, str, int]]) -> pa.Table:
    """A table in the layout ``datasets`` writes: Image/Audio structs and its metadata."""
    struct = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    table = pa.table(
        {
            "image": pa.array([{"bytes": r[0], "path": r[1]} for r in rows], struct),
            "audio": pa.array(
                [{"bytes": r[2], "path": f"clip{i}.wav"} for i, r in enumerate(rows)], struct
            ),  # noqa: E501
            "text": pa.array([r[3] for r in rows], pa.string()),
            "label": pa.array([r[4] for r in rows], pa.int64()),
        }
    )
    meta = {b"huggingface": json.dumps({"info": {"features": HF_FEATURES}}).encode()}
    return table.replace_schema_metadata(meta)


def add_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Parquet shards (HF layout), WebDataset shards, a save_to_disk folder; and each
    format's expected totals."""
    root = tmp_path_factory.mktemp("datasets")
    rows = []
    for i in range(12):
        h, w, fmt = IMAGES[i % len(IMAGES)]
        frames, rate, ch = CLIPS[i % len(CLIPS)]
        rows.append(
            (
                image_bytes(h, w, fmt, i),
                f"img{i}.{fmt}",
                wav_bytes(frames, rate, ch, i),
                CAPTIONS[i % len(CAPTIONS)],
                i % 3,
            )
        )
    parquet = Expected()
    for r in rows:
        parquet.add(r[0], r[2], r[3])
    hf = root / "hf" / "data"
    hf.mkdir(parents=True)
    for s in range(2):  # two shards, row groups of 4 rows
        part = rows[s * 6 : (s + 1) * 6]
        pq.write_table(hf_table(part), hf / f"train-0000{s}-of-00002.parquet", row_group_size=4)
    # save_to_disk: arrow IPC stream files, listed in state.json (datasets' own layout).
    disk = root / "disk"
    disk.mkdir()
    table = hf_table(rows)
    with pa.OSFile(str(disk / "data-00000-of-00001.arrow"), "wb") as sink:
        with pa.ipc.new_stream(sink, table.schema) as writer:
            for batch in table.to_batches(max_chunksize=5):
                writer.write_batch(batch)
    (disk / "state.json").write_text(
        json.dumps(
            {
                "_data_files": [{"filename": "data-00000-of-00001.arrow"}],
                "_fingerprint": "x",
                "_format_type": None,
                "_split": None,
            }
        )
    )
    (disk / "dataset_info.json").write_text(json.dumps({"features": HF_FEATURES}))
    # WebDataset: 2 shards; images, clips, captions (.json and .txt); some samples lack a clip.
    wds = Expected()
    tars = root / "wds"
    tars.mkdir()
    k = 0
    for s in range(2):
        with tarfile.open(tars / f"shard-{s:06d}.tar", "w") as tar:
            for j in range(7):
                h, w, fmt = IMAGES[(k + 3) % len(IMAGES)]
                img = image_bytes(h, w, fmt, 100 + k)
                add_member(tar, f"s{k:05d}.{'jpg' if fmt == 'jpeg' else 'png'}", img)
                clip = None
                if j % 2 == 0:
                    frames, rate, ch = CLIPS[k % len(CLIPS)]
                    clip = wav_bytes(frames, rate, ch, 100 + k)
                    add_member(tar, f"s{k:05d}.wav", clip)
                caption = CAPTIONS[k % len(CAPTIONS)]
                if j % 3 == 0:
                    add_member(tar, f"s{k:05d}.txt", caption.encode())
                else:
                    add_member(
                        tar, f"s{k:05d}.json", json.dumps({"caption": caption, "id": k}).encode()
                    )  # noqa: E501
                wds.add(img, clip, caption)
                k += 1
    return {
        "root": root,
        "hf": root / "hf",
        "disk": disk,
        "wds": tars,
        "parquet": parquet,
        "wds_expected": wds,
        "rows": rows,
    }


def check(result, expected: Expected) -> None:
    assert result.failures == ()
    assert result.billed_files == result.files == expected.samples
    assert result.totals == expected.totals
    for kind in ("image", "audio"):
        assert result.totals_by_kind[kind] == tuple(expected.by_kind[kind])
    for hist, total in zip(result.histograms, result.totals, strict=True):
        assert sum(hist.values()) == expected.samples
        assert sum(t * n for t, n in hist.items()) == total


# --------------------------------------------------------------------------- local runner


def test_parquet_and_webdataset_totals_equal_the_plans(data):
    check(bill(data["hf"], budgets=BUDGETS, workers=2), data["parquet"])
    check(bill(data["wds"], budgets=BUDGETS, workers=2), data["wds_expected"])
    # Without recursive=True, shards in a sub-folder (data/…) are still found.
    check(bill(data["hf"], budgets=BUDGETS, recursive=False, workers=1), data["parquet"])
    one = bill(data["hf"] / "data" / "train-00001-of-00002.parquet", budgets=BUDGETS, workers=1)
    assert one.files == 6 and one.unit == "sample"


def test_save_to_disk_and_the_hub_cache_bill_like_the_parquet_shards(data, tmp_path, monkeypatch):
    check(bill(data["disk"], budgets=BUDGETS, workers=1), data["parquet"])
    # A DatasetDict: dataset_dict.json names the splits, each a save_to_disk folder.
    both = tmp_path / "dict"
    both.mkdir()
    (both / "dataset_dict.json").write_text(json.dumps({"splits": ["train"]}))
    (both / "train").symlink_to(data["disk"])
    assert bill(both, budgets=BUDGETS, workers=1).totals == data["parquet"].totals
    # The hub cache: datasets--org--name/snapshots/<revision>/…, refs/main → revision.
    repo = tmp_path / "hub" / "datasets--someone--pets"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots").mkdir()
    (repo / "snapshots" / "abc123").symlink_to(data["hf"])
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    check(bill("someone/pets", budgets=BUDGETS, workers=1), data["parquet"])


def test_header_only_from_bytes_never_decodes_pixels(data, monkeypatch):
    """Images whose pixel data is garbage after a valid header bill at their size; and
    PIL's decoder is never called while billing the parquet shards."""
    png = image_bytes(300, 500, "png")
    junk = bytes(range(256)) * 3  # an IDAT chunk of garbage: not a zlib stream
    broken_png = png[:33] + struct.pack(">I", len(junk)) + b"IDAT" + junk + b"\0\0\0\0"
    jpeg = image_bytes(480, 640, "jpeg")
    sos = jpeg.index(b"\xff\xda")  # the scan starts here: header kept, entropy data junk
    broken_jpeg = jpeg[: sos + 14] + bytes(range(256)) * 4
    for good, broken in ((png, broken_png), (jpeg, broken_jpeg)):
        with pytest.raises(Exception):  # noqa: B017 - the decoder refuses the pixels
            Image.open(io.BytesIO(broken)).load()
        row = bill_sample(
            Sample("x", (Item("image", data=broken),)), family="gemma4", budgets=BUDGETS
        )
        assert row.error is None and row.tokens == ref_image(good)
    from PIL import ImageFile

    calls = []
    real = ImageFile.ImageFile.load
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda self: calls.append(1) or real(self))
    result = bill(data["hf"], budgets=BUDGETS, workers=1)
    assert result.billed_files == 12 and calls == []


def test_failures_are_rows_with_reasons_and_the_rest_is_billed(data, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    good = image_bytes(120, 90, "jpeg")
    clip = wav_bytes(16_000, 16_000, 1)
    # A tar with a corrupt member, a key with no media, then a good sample.
    with tarfile.open(bad / "a.tar", "w") as tar:
        add_member(tar, "k1.jpg", b"\xff\xd8\xff" + b"not really a jpeg" * 10)
        add_member(tar, "k2.json", b'{"caption": "only text"}')
        add_member(tar, "k3.jpg", good)
        add_member(tar, "k3.wav", clip)
    # A tar cut in the middle of its third member: the first two samples are billed.
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        add_member(tar, "t1.jpg", good)
        add_member(tar, "t2.png", image_bytes(37, 41, "png"))
        add_member(tar, "t3.jpg", image_bytes(1080, 1920, "jpeg"))
    whole = buf.getvalue()
    cut = whole.index(b"t3.jpg") + 512 + 1000  # its 512-byte header, then 1000 of its bytes
    (bad / "b.tar").write_bytes(whole[:cut])
    # Parquet: a row with no bytes and no path, an undecodable row, and a good one.
    struct = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    images = [
        {"bytes": None, "path": None},
        {"bytes": b"\x89PNG\r\n\x1a\nbroken", "path": "x.png"},
        {"bytes": good, "path": "ok.jpg"},
    ]
    pq.write_table(pa.table({"image": pa.array(images, struct)}), bad / "c.parquet")
    pq.write_table(pa.table({"label": [1, 2, 3]}), bad / "d.parquet")  # no media column
    (bad / "e.parquet").write_bytes(b"PAR1 this is not parquet")
    result = bill(bad, budgets=BUDGETS, workers=2)
    reasons = {name.split("/")[-1]: why for name, why in result.failures}
    assert set(reasons) == {
        "a.tar#k1",
        "a.tar#k2",
        "b.tar#t3",
        "c.parquet#0",
        "c.parquet#1",
        "d.parquet (3 rows)",
        "e.parquet",
    }
    assert "undecodable image bytes" in reasons["a.tar#k1"]
    assert reasons["a.tar#k2"].startswith("missing keys") and "json" in reasons["a.tar#k2"]
    assert "truncated" in reasons["b.tar#t3"]
    assert "no bytes and no path" in reasons["c.parquet#0"]
    assert "undecodable image bytes" in reasons["c.parquet#1"]
    assert (
        "no media column" in reasons["d.parquet (3 rows)"]
        and "label (int64)" in reasons["d.parquet (3 rows)"]
    )
    assert "cannot read this parquet shard" in reasons["e.parquet"]
    assert all("\n" not in r for r in reasons.values())
    want = [0, 0, 0]
    for tokens in (
        ref_image(good),
        ref_audio(clip),
        ref_image(good),
        ref_image(image_bytes(37, 41, "png")),
        ref_image(good),
    ):
        _add(want, tokens)
    assert result.totals == tuple(want) and result.billed_files == 4
    # A column of the wrong type, asked for by name: one row for the shard, with the fix.
    wrong = bill(data["hf"], budgets=(280,), column="label", workers=1)
    assert wrong.billed_files == 0 and len(wrong.failures) == 2
    assert all("column 'label' is int64, not media" in r for _, r in wrong.failures)


def test_column_picks_one_and_path_columns_are_relative_to_the_shard(data, tmp_path):
    only = bill(data["hf"], budgets=BUDGETS, column="image", workers=1)
    assert only.totals == tuple(data["parquet"].by_kind["image"]) and set(only.billed) == {"image"}
    # A string column of paths, relative to the shard's folder.
    (tmp_path / "media").mkdir()
    names, want = [], [0, 0, 0]
    for i, (h, w, fmt) in enumerate(IMAGES[:4]):
        raw = image_bytes(h, w, fmt)
        (tmp_path / "media" / f"p{i}.{fmt}").write_bytes(raw)
        names.append(f"media/p{i}.{fmt}")
        _add(want, ref_image(raw))
    pq.write_table(pa.table({"file": names, "n": [1, 2, 3, 4]}), tmp_path / "paths.parquet")
    result = bill(tmp_path / "paths.parquet", budgets=BUDGETS, workers=1)
    assert result.totals == tuple(want) and result.failures == ()
    # An HF Image struct that holds only a path (bytes null), as datasets writes for files.
    struct_ = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    only_paths = pa.array([{"bytes": None, "path": n} for n in names], struct_)
    pq.write_table(pa.table({"image": only_paths}), tmp_path / "structs.parquet")
    assert bill(tmp_path / "structs.parquet", budgets=BUDGETS, workers=1).totals == tuple(want)
    # A list of images per row (datasets' Sequence(Image()), as in multi-image chat sets).
    pics = [image_bytes(h, w, fmt, 7) for h, w, fmt in IMAGES[:6]]
    cells = [
        [{"bytes": b, "path": None} for b in pics[:3]],
        [{"bytes": pics[3], "path": None}],
        [{"bytes": b, "path": None} for b in pics[4:]],
        [],
    ]
    table = pa.table({"images": pa.array(cells, pa.list_(struct_)), "text": ["a", "b", "c", "d"]})
    meta = {"info": {"features": {"images": [{"_type": "Image"}], "text": {"_type": "Value"}}}}
    table = table.replace_schema_metadata({b"huggingface": json.dumps(meta).encode()})
    (tmp_path / "lists").mkdir()
    pq.write_table(table, tmp_path / "lists" / "multi.parquet")
    many = [0, 0, 0]
    for b in pics:
        _add(many, ref_image(b))
    result = bill(tmp_path / "lists", budgets=BUDGETS, workers=1)
    assert result.totals == tuple(many) and result.billed == {"image": 3}
    assert [r for _, r in result.failures] == ["no media item and no text in this sample"]


@pytest.mark.slow
def test_text_tokens_with_the_stand_in_and_a_cached_tokenizer(data, tmp_path, monkeypatch):
    from gemma_explore.models.vocabulary import CACHE_ENV

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "no-vocabulary"))  # Gemma's not fetched
    counter = text_counter("gemma4", cache_dir=str(tmp_path / "empty-cache"))
    assert counter.source == STAND_IN and "stand-in" in counter.label
    from gemma_explore.models.tokenizer import build_stand_in_tokenizer

    tok = build_stand_in_tokenizer("gemma4")
    expected = data["wds_expected"]
    n_text = sum(len(tok(c, add_special_tokens=False)["input_ids"]) for c in expected.captions)
    result = bill(data["wds"], budgets=BUDGETS, text=counter, workers=1)
    assert result.totals_by_kind["text"] == (n_text,) * 3
    assert result.totals == tuple(t + n_text for t in expected.totals)
    assert result.text_tokenizer == counter.label and "stand-in" in result.text()
    # A tokenizer in the hub cache's layout is found, used and named (nothing downloaded).
    snap = tmp_path / "hub" / "models--google--gemma-4-E2B-it" / "snapshots" / "r1"
    tok.save_pretrained(snap)
    from gemma_explore.models.tiny import tiny_config

    tiny_config("gemma4").save_pretrained(snap)  # a cached checkpoint has its config too
    (snap.parents[1] / "refs").mkdir()
    (snap.parents[1] / "refs" / "main").write_text("r1")
    cached = text_counter("gemma4", cache_dir=str(tmp_path / "hub"))
    assert cached.source == "google/gemma-4-E2B-it" and "local Hugging Face cache" in cached.label
    assert cached("A cat on a mat.") == len(
        tok("A cat on a mat.", add_special_tokens=False)["input_ids"]
    )  # noqa: E501


def test_parquet_output_summary_and_progress(data, tmp_path):
    out = tmp_path / "bill.parquet"
    progress: list[Progress] = []
    kept = []
    with BillWriter(out, BUDGETS) as writer:
        result = bill(
            data["hf"],
            budgets=BUDGETS,
            workers=1,
            on_progress=progress.append,
            on_row=lambda r: (writer.write(r), kept.append(r)),
        )
    table = pq.read_table(out)
    assert table.num_rows == 12 and sum(table.column("tokens@280").to_pylist()) == result.totals[1]
    # Progress: the row total comes from the parquet footers before the first row.
    assert progress[0].rows_total == 12 and progress[-1].rows == 12
    assert progress[-1].eta_s == 0 and "rows/s" in progress[-1].text()
    # The summary's KV bytes are plan_serving's, per sample.
    from gemma_explore.serving.plan import plan_serving

    plan = plan_serving("tiny-gemma4")
    summary = summarize(result, "tiny-gemma4")
    for i, line in enumerate(summary.lines):
        assert line.budget == BUDGETS[i] and line.total_tokens == result.totals[i]
        assert line.kv_bytes_total == sum(plan.kv_bytes(r.tokens[i]) for r in kept)
        assert line.kv_bytes_max == max(plan.kv_bytes(r.tokens[i]) for r in kept)
        assert line.tokens_per_sample == pytest.approx(result.totals[i] / 12)
    assert "tiny-gemma4" in summary.text() and "1120" in summary.text()
    from gemma_explore.viz.bill import show_bill

    ax = show_bill(result).axes[0]
    assert ax.get_xlabel() == "prompt tokens per sample"
    # Outlines only: filled translucent bars would blend into colours the legend lacks.
    assert ax.patches and not any(p.get_fill() for p in ax.patches)
    legend = {h.get_label(): h.get_edgecolor() for h in ax.get_legend().legend_handles}
    drawn = {p.get_label(): p.get_edgecolor() for p in ax.patches if p.get_label()}
    assert legend == drawn


# --------------------------------------------------------------------------- ray runner


@pytest.fixture(scope="module")
def ray_cluster():
    """One local Ray with 2 CPUs for this module (start-up is slow on shared cores)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_both_engines_map_the_same_per_sample_function():
    local = inspect.signature(bill_runners.local_rows).parameters["per_sample"].default
    remote = inspect.signature(bill_runners.ray_rows).parameters["per_sample"].default
    assert local is remote is bill_sample


@pytest.mark.slow
def test_ray_engine_equals_the_plans_and_the_local_engine(data, ray_cluster, tmp_path):
    from typer.testing import CliRunner

    from gemma_explore.cli import app

    for folder, expected in ((data["hf"], data["parquet"]), (data["wds"], data["wds_expected"])):
        rows = []
        result = bill(folder, budgets=BUDGETS, runner="ray", workers=2, on_row=rows.append)
        check(result, expected)
        assert result.runner == "ray"
        local = []
        bill(folder, budgets=BUDGETS, workers=1, on_row=local.append)
        same = sorted((r.path, r.tokens, r.parts, r.error) for r in rows)
        assert same == sorted((r.path, r.tokens, r.parts, r.error) for r in local)
    # The README's command, on this local cluster.
    out = tmp_path / "bill.parquet"
    res = CliRunner().invoke(
        app,
        [
            "bill",
            str(data["wds"]),
            "--runner",
            "ray",
            "--budget",
            "280,1120",
            "--text",
            "--checkpoint",
            "tiny-gemma4",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    # The bill names the tokenizer it counted with (Gemma's, when fetched; else the stand-in).
    in_use = text_counter("gemma4").vocabulary
    assert "on ray" in res.stdout and "KV" in res.stdout and in_use in res.stdout
    assert pq.read_table(out).num_rows == data["wds_expected"].samples


def test_videos_and_binary_columns_from_bytes(tmp_path):
    """A video member of a tar, and WAV / MP4 bytes in plain binary columns (told apart by
    their magic numbers), bill as plan_video / plan_audio on the same bytes."""
    import cv2

    from gemma_explore.plans.video import plan_video

    path = tmp_path / "v.mp4"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 12.0, (160, 90))
    for i in range(36):
        writer.write(np.full((90, 160, 3), i * 7, np.uint8))
    writer.release()
    video, clip = path.read_bytes(), wav_bytes(24_000, 16_000, 1)
    want_video = plan_video(path, family="gemma4").total_tokens
    with tarfile.open(tmp_path / "v.tar", "w") as tar:
        add_member(tar, "k.mp4", video)
        add_member(tar, "k.txt", b"a clip")
    result = bill(tmp_path / "v.tar", budgets=(280,), workers=1)
    assert result.failures == () and result.totals == (want_video,)
    pq.write_table(pa.table({"media": [video, clip]}), tmp_path / "bin.parquet")
    result = bill(tmp_path / "bin.parquet", budgets=(280,), workers=1)
    assert result.totals_by_kind == {"video": (want_video,), "audio": ref_audio(clip)[:1]}


def test_unknown_engine_is_one_clear_line(data):
    with pytest.raises(ValueError, match="--runner must be one of local, ray"):
        bill(data["hf"], runner="dask")


def test_progress_eta_from_tar_bytes():
    p = Progress(
        rows=10, rows_total=None, bytes_done=25, bytes_total=100, seconds=2.0, final_total=True
    )
    assert p.fraction == 0.25 and p.eta_s == pytest.approx(6.0)
