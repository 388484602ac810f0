"""Where a bill's samples come from: folders of files, parquet shards, WebDataset tars,
``save_to_disk`` folders and the local Hugging Face cache.

:func:`scan` walks a source once and yields :class:`Task` objects: a chunk of files, a
few row groups of one parquet shard, one tar shard, one arrow file. A task is small and
picklable, so any runner ships it to a worker, where :func:`run_task` reads it into
:class:`~gemma_explore.bill.core.Sample` objects and maps the one per-sample function
(:func:`~gemma_explore.bill.core.bill_sample`) over them. Reading stays header-only:
parquet and arrow columns are read in small batches and only the media and text
columns; tar members are streamed and grouped by key.

Media columns are found from the schema: a Hugging Face ``Image`` / ``Audio`` / ``Video``
struct ``{bytes, path}`` (the ``huggingface`` schema metadata says which, else the bytes'
magic number) or a list of them, a binary column, or a string column of paths (relative
to the shard's folder). ``column=`` picks one. A ``datasets.Dataset.save_to_disk`` folder is arrow IPC
*stream* files listed in ``state.json`` (features in ``dataset_info.json``); it is read
with pyarrow alone, so ``datasets`` need not be installed.

>>> source = scan("/no/such/folder")
>>> list(source.tasks()), source.problems
([], [('/no/such/folder', 'no such file or folder')])
"""

from __future__ import annotations

import json
import os
import re
import tarfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gemma_explore.bill.core import BillRow, Item, Sample, bill_sample
from gemma_explore.media.headers import kind_of

__all__ = [
    "Source",
    "Task",
    "Walk",
    "hf_cache_folder",
    "media_columns",
    "run_task",
    "scan",
    "walk_files",
]

CHUNK = 256  # files per task sent to a worker: amortises the pickling round trip
TASK_ROWS = 4096  # parquet / arrow rows per task (whole row groups): balance and progress
BATCH_ROWS = 256  # rows read at once inside a task: bytes columns stay small in memory
SHARD_SUFFIXES = {".parquet": "parquet", ".tar": "tar", ".arrow": "arrow"}
# Columns that hold a sample's text (first found), unless text_column= says.
TEXT_COLUMNS = ("text", "caption", "prompt", "txt", "sentence", "transcription", "question")
_HF_KINDS = {"Image": "image", "Audio": "audio", "Video": "video"}  # datasets feature types


# --------------------------------------------------------------------------- walking


@dataclass
class Walk:
    """Files under a folder, found lazily; what could not be walked lands in ``problems``."""

    root: Path
    recursive: bool = True
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    seconds: float = 0.0  # time spent listing folders

    def __iter__(self) -> Iterator[str]:
        root = self.root
        if root.is_file():
            yield str(root)
            return
        if not root.is_dir():
            self.problems.append((str(root), "no such file or folder"))
            return
        visited: set[tuple[int, int]] = set()  # (device, inode) of every folder listed
        stack = [root]
        while stack:
            folder = stack.pop()
            folders: list[Path] = []
            yield from self._files(folder, visited, folders)
            stack.extend(sorted(folders, reverse=True))  # depth first, in name order

    def _files(
        self, folder: Path, visited: set[tuple[int, int]], folders: list[Path]
    ) -> Iterator[str]:
        """Files of one folder as the OS lists them (never all held at once); sub-folders
        go to ``folders``."""
        start = time.perf_counter()
        try:
            st = folder.stat()
        except OSError as exc:
            self.problems.append((str(folder), f"cannot stat folder: {exc.strerror or exc}"))
            return
        key = (st.st_dev, st.st_ino)
        if key in visited:
            target = folder.resolve()
            if target == folder.parent.resolve() or target in folder.parent.resolve().parents:
                reason = f"symlink loop (points back to {target}); not followed"
            else:
                reason = f"links to a folder already billed ({target}); not counted twice"
            self.problems.append((str(folder), reason))
            return
        visited.add(key)
        try:
            it = os.scandir(folder)
        except OSError as exc:  # PermissionError included
            self.problems.append((str(folder), f"unreadable folder: {exc.strerror or exc}"))
            return
        with it:
            for entry in it:
                try:
                    if entry.is_dir():  # follows symlinks; loops are caught by `visited`
                        if self.recursive:
                            folders.append(Path(entry.path))
                        continue
                    is_file = entry.is_file()
                    if not is_file and entry.is_symlink():
                        self.problems.append((entry.path, "broken symbolic link"))
                except OSError as exc:  # e.g. ELOOP: a link that points at itself
                    self.problems.append((entry.path, f"cannot follow: {exc.strerror or exc}"))
                    continue
                if is_file:
                    self.seconds += time.perf_counter() - start
                    yield entry.path
                    start = time.perf_counter()
        self.seconds += time.perf_counter() - start


def walk_files(root: str | os.PathLike, *, recursive: bool = True) -> Walk:
    """The files under ``root`` (or ``root`` itself), lazily; see :class:`Walk`.

    >>> walk = walk_files("/no/such/folder")
    >>> list(walk), walk.problems
    ([], [('/no/such/folder', 'no such file or folder')])
    """
    return Walk(Path(root), recursive=recursive)


# --------------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class Task:
    """A unit of work any runner ships to a worker: small, picklable, plain fields."""

    format: str  # "files", "parquet", "tar" or "arrow"
    path: str = ""  # the shard ("" for a chunk of files)
    paths: tuple[str, ...] = ()  # the files of a "files" task
    row_groups: tuple[int, ...] = ()  # a parquet task's row groups (empty: all)
    rows: int = 0  # rows this task holds, when the shard's metadata says (progress, ETA)
    nbytes: int = 0  # bytes this task reads from disk (tars: progress by bytes)
    column: str | None = None  # the media column asked for (--column)
    text_column: str | None = None  # the text column asked for
    features: str = ""  # a save_to_disk folder's dataset_info.json features, as JSON

    def as_dict(self) -> dict[str, Any]:
        """Plain data (lists, strings, ints) for a Ray Data row."""
        return {
            "format": self.format,
            "path": self.path,
            "paths": list(self.paths),
            "row_groups": list(self.row_groups),
            "rows": self.rows,
            "nbytes": self.nbytes,
            "column": self.column or "",
            "text_column": self.text_column or "",
            "features": self.features,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Task:
        return cls(
            format=str(d["format"]),
            path=str(d["path"]),
            paths=tuple(str(p) for p in d["paths"]),
            row_groups=tuple(int(g) for g in d["row_groups"]),
            rows=int(d["rows"]),
            nbytes=int(d["nbytes"]),
            column=str(d["column"]) or None,
            text_column=str(d["text_column"]) or None,
            features=str(d["features"]),
        )


@dataclass
class Source:
    """A scanned source: its tasks (lazily), what could not be read, and the totals the
    metadata gives for progress (rows from parquet footers and arrow batches, tar bytes)."""

    root: Path
    recursive: bool = True
    column: str | None = None
    text_column: str | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    expected_rows: int = 0  # rows the metadata announces (files count one each)
    expected_bytes: int = 0  # bytes of the tar shards
    scanned: bool = False  # True once the walk is over: the totals are final
    formats: set[str] = field(default_factory=set)  # what the source turned out to hold
    seconds: float = 0.0  # walking and reading metadata

    @property
    def unit(self) -> str:
        """``"file"`` for a folder of media files, ``"sample"`` for anything with shards."""
        return "file" if self.formats <= {"files"} else "sample"

    def tasks(self) -> Iterator[Task]:
        """Media files in chunks as the walk finds them; shards once the walk is over (so
        their row counts are known before the first shard is billed)."""
        walk = walk_files(self.root, recursive=self.recursive)
        save_to_disk = _save_to_disk_files(self.root)
        shards: list[str] = []
        chunk: list[str] = []
        if save_to_disk is not None:
            shards, features = save_to_disk
            walk_iter: Iterable[str] = ()
        else:
            features = ""
            walk_iter = walk
        for path in walk_iter:
            fmt = SHARD_SUFFIXES.get(Path(path).suffix.lower())
            if fmt is not None:
                shards.append(path)
                continue
            if Path(path).name in _HF_SIDE_FILES:
                continue
            self.formats.add("files")
            self.expected_rows += 1
            chunk.append(path)
            if len(chunk) >= CHUNK:
                yield Task("files", paths=tuple(chunk), rows=len(chunk))
                chunk = []
        self.problems += walk.problems
        self.seconds += walk.seconds
        if (
            save_to_disk is None
            and not self.recursive
            and not chunk
            and "files" not in self.formats
        ):
            # No media files at the top: a dataset's shards sit in sub-folders (data/…),
            # so they are looked for there; media files below stay unbilled (--recursive).
            deep = walk_files(self.root, recursive=True)
            known = set(shards)
            shards += [
                p for p in deep if SHARD_SUFFIXES.get(Path(p).suffix.lower()) and p not in known
            ]
            self.problems += [p for p in deep.problems if p not in self.problems]
            self.seconds += deep.seconds
        start = time.perf_counter()
        planned: list[Task] = []
        for shard in shards:
            planned += self._shard_tasks(shard, features)
        self.seconds += time.perf_counter() - start
        self.scanned = True
        if chunk:
            yield Task("files", paths=tuple(chunk), rows=len(chunk))
        yield from planned

    def _shard_tasks(self, shard: str, features: str) -> list[Task]:
        fmt = SHARD_SUFFIXES[Path(shard).suffix.lower()]
        self.formats.add(fmt)
        common = {"column": self.column, "text_column": self.text_column, "features": features}
        try:
            size = os.stat(shard).st_size
        except OSError:
            return [Task(fmt, shard, **common)]  # run_task reports why it cannot be read
        if fmt == "tar":
            self.expected_bytes += size
            return [Task("tar", shard, nbytes=size, **common)]
        if fmt == "arrow":
            rows = _arrow_rows(shard)
            self.expected_rows += rows
            return [Task("arrow", shard, rows=rows, nbytes=size, **common)]
        try:
            import pyarrow.parquet as pq

            meta = pq.ParquetFile(shard).metadata
        except Exception:  # noqa: BLE001 - a corrupt footer: one failure row in run_task
            return [Task("parquet", shard, nbytes=size, **common)]
        tasks, groups, rows = [], [], 0
        for g in range(meta.num_row_groups):
            groups.append(g)
            rows += meta.row_group(g).num_rows
            if rows >= TASK_ROWS:
                tasks.append(Task("parquet", shard, row_groups=tuple(groups), rows=rows, **common))
                groups, rows = [], 0
        if groups or not tasks:
            tasks.append(Task("parquet", shard, row_groups=tuple(groups), rows=rows, **common))
        self.expected_rows += meta.num_rows
        return tasks


_HF_SIDE_FILES = {
    "dataset_info.json",
    "state.json",
    "dataset_dict.json",
    "README.md",
    ".gitattributes",
}


def _save_to_disk_files(root: Path) -> tuple[list[str], str] | None:
    """The arrow files of a ``save_to_disk`` folder (a Dataset, or a DatasetDict's splits)
    in their order, and the features as JSON; None when ``root`` is not one."""
    if not root.is_dir():
        return None
    if (root / "dataset_dict.json").is_file():
        splits = json.loads((root / "dataset_dict.json").read_text()).get("splits", [])
        files: list[str] = []
        features = ""
        for split in splits:
            one = _save_to_disk_files(root / split)
            if one is not None:
                files += one[0]
                features = features or one[1]
        return files, features
    state = root / "state.json"
    if not state.is_file():
        return None
    data_files = json.loads(state.read_text()).get("_data_files", [])
    info = root / "dataset_info.json"
    features = ""
    if info.is_file():
        features = json.dumps(json.loads(info.read_text()).get("features") or {})
    return [str(root / f["filename"]) for f in data_files], features


def hf_cache_folder(
    name: str, *, cache: str | os.PathLike | None = None, repo_type: str = "datasets"
) -> Path | None:
    """The local snapshot of a hub repo (``org/name``) in the Hugging Face cache, or
    None: no download is ever tried. Looks in ``cache``, else ``$HF_HUB_CACHE`` (default
    ``~/.cache/huggingface/hub``), for ``datasets--org--name/snapshots/<revision>``
    (``models--…`` with ``repo_type="models"``), the revision ``refs/main`` names.

    >>> hf_cache_folder("nobody/nothing", cache="/no/such/cache") is None
    True
    """
    if name.count("/") != 1 or name.startswith((".", "/", "~")):
        return None
    hub = Path(
        cache
        or os.environ.get("HF_HUB_CACHE")
        or Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"
    )
    repo = hub / (f"{repo_type}--" + name.replace("/", "--"))
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return None
    ref = repo / "refs" / "main"
    if ref.is_file() and (snapshots / ref.read_text().strip()).is_dir():
        return snapshots / ref.read_text().strip()
    found = sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def scan(
    root: str | os.PathLike,
    *,
    recursive: bool = True,
    column: str | None = None,
    text_column: str | None = None,
) -> Source:
    """A source to bill: a file, a folder (files and/or shards), a ``save_to_disk``
    folder, or a hub dataset name found in the local cache. See :class:`Source`.

    >>> scan("/no/such/folder").unit
    'file'
    """
    path = Path(root)
    if not path.exists():
        cached = hf_cache_folder(os.fspath(root))
        if cached is not None:
            path = cached
    return Source(path, recursive=recursive, column=column, text_column=text_column)


def _arrow_batches(path: str) -> tuple[Any, Iterator[Any]]:
    """(schema, record batches) of an arrow IPC stream (what ``save_to_disk`` and the
    ``datasets`` cache write) or IPC file, memory-mapped: nothing is read until used."""
    import pyarrow as pa

    try:
        reader = pa.ipc.open_stream(pa.memory_map(path))
        return reader.schema, iter(reader)
    except pa.ArrowInvalid:
        file = pa.ipc.open_file(pa.memory_map(path))
        return file.schema, (file.get_batch(i) for i in range(file.num_record_batches))


def _arrow_rows(path: str) -> int:
    """Rows of an arrow file, from its batches' headers (memory-mapped, cheap)."""
    try:
        return sum(b.num_rows for b in _arrow_batches(path)[1])
    except Exception:  # noqa: BLE001 - run_task reports why it cannot be read
        return 0


# --------------------------------------------------------------------------- columns


@dataclass(frozen=True)
class MediaColumn:
    """A column that holds media, and how."""

    name: str
    how: str  # "struct" ({bytes, path}), "binary", or "path" (strings)
    kind: str | None  # what the dataset's features say, when they do


def _hf_features(schema: Any, features_json: str = "") -> dict[str, Any]:
    """The ``datasets`` features: a save_to_disk folder's dataset_info.json, else the
    ``huggingface`` metadata a parquet shard written by ``datasets`` carries."""
    if features_json:
        return json.loads(features_json)
    meta = (schema.metadata or {}).get(b"huggingface")
    if not meta:
        return {}
    try:
        return json.loads(meta).get("info", {}).get("features", {}) or {}
    except ValueError:
        return {}


def _is_struct_media(t: Any) -> bool:
    import pyarrow as pa

    if not pa.types.is_struct(t):
        return False
    names = {t.field(i).name for i in range(t.num_fields)}
    return "bytes" in names


def media_columns(
    schema: Any, features_json: str = "", sample_row: dict | None = None
) -> list[MediaColumn]:
    """The media columns of an arrow schema, in schema order.

    >>> import pyarrow as pa
    >>> s = pa.schema([("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
    ...                ("wav", pa.binary()), ("label", pa.int64())])
    >>> [(c.name, c.how) for c in media_columns(s)]
    [('image', 'struct'), ('wav', 'binary')]
    """
    import pyarrow as pa

    features = _hf_features(schema, features_json)
    out = []
    for f in schema:
        hf_kind = _feature_kind(features.get(f.name))
        t = f.type
        if pa.types.is_list(t) or pa.types.is_large_list(t):  # Sequence(Image()) and kin
            inner = t.value_type
            if _is_struct_media(inner) or pa.types.is_binary(inner):
                out.append(MediaColumn(f.name, "list", hf_kind))
        elif _is_struct_media(t):
            out.append(MediaColumn(f.name, "struct", hf_kind))
        elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
            out.append(MediaColumn(f.name, "binary", hf_kind))
        elif (pa.types.is_string(t) or pa.types.is_large_string(t)) and (
            hf_kind is not None
            or (sample_row is not None and kind_of(str(sample_row.get(f.name) or "")))
        ):
            out.append(MediaColumn(f.name, "path", hf_kind))
    return out


def _feature_kind(feature: Any) -> str | None:
    """ "image" / "audio" / "video" from a ``datasets`` feature, looking inside lists
    (``[{"_type": "Image"}]``, ``{"_type": "Sequence", "feature": …}``)."""
    if isinstance(feature, list) and feature:
        return _feature_kind(feature[0])
    if not isinstance(feature, dict):
        return None
    if "feature" in feature:
        return _feature_kind(feature["feature"])
    return _HF_KINDS.get(feature.get("_type"))


def _type_name(t: Any) -> str:
    return str(t).split("<")[0]


def _choose(
    schema: Any, task: Task, first: dict | None
) -> tuple[list[MediaColumn], str | None, str | None]:
    """(media columns, text column, an error for the whole shard or None)."""
    import pyarrow as pa

    columns = media_columns(schema, task.features, first)
    names = schema.names
    if task.column is not None:
        if task.column not in names:
            return (
                [],
                None,
                (
                    f"--column {task.column!r} is not a column of this shard (columns: "
                    f"{', '.join(names)})"
                ),
            )
        chosen = [c for c in columns if c.name == task.column]
        if not chosen:
            t = schema.field(task.column).type
            if pa.types.is_string(t) or pa.types.is_large_string(t):
                chosen = [MediaColumn(task.column, "path", None)]
            else:
                return (
                    [],
                    None,
                    (
                        f"column {task.column!r} is {_type_name(t)}, not media: give an image/audio "
                        "struct {bytes, path}, a binary column or a column of paths"
                    ),
                )
        columns = chosen
    elif not columns:
        kinds = ", ".join(f"{f.name} ({_type_name(f.type)})" for f in schema)
        return (
            [],
            None,
            (
                f"no media column (an image/audio struct {{bytes, path}}, binary, or paths) among "
                f"{kinds}: pick one with --column"
            ),
        )
    text = task.text_column
    if text is not None and text not in names:
        return [], None, f"text column {text!r} is not a column of this shard"
    if text is None:
        text = next((n for n in TEXT_COLUMNS if n in names), None)
        if text is not None:
            t = schema.field(text).type
            if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
                text = None
    return columns, text, None


def _item(name: str, value: Any, column: MediaColumn, folder: str) -> Item | str:
    """One cell as an item, or why it cannot be one (a struct, bytes, or a path)."""
    if isinstance(value, dict):  # an HF struct {bytes, path}, alone or in a list
        raw, path = value.get("bytes"), value.get("path")
        if raw is None and not path:
            return f"{name}: no bytes and no path in this row"
        if raw is None:
            path = path if os.path.isabs(path) else os.path.join(folder, path)
        return Item(name, data=raw, path=path, kind=column.kind)
    if isinstance(value, bytes):
        return Item(name, data=value, kind=column.kind)
    if value is None:
        return f"{name}: empty (null) in this row"
    if column.how == "path" and isinstance(value, str) and value:
        path = value if os.path.isabs(value) else os.path.join(folder, value)
        return Item(name, path=path, kind=column.kind)
    return f"{name}: no path in this row"


def _row_samples(
    batch: Any, columns: list[MediaColumn], text: str | None, shard: str, first_row: int
) -> Iterator[Sample]:
    """Samples of one record batch: only the chosen columns are converted to Python."""
    folder = os.path.dirname(shard)
    data = {c.name: batch.column(c.name).to_pylist() for c in columns}
    texts = batch.column(text).to_pylist() if text is not None else None
    for i in range(batch.num_rows):
        sid = f"{shard}#{first_row + i}"
        items: list[Item] = []
        error = None
        for c in columns:
            value = data[c.name][i]
            if c.how == "list":
                values = [(f"{c.name}[{j}]", v) for j, v in enumerate(value or [])]
            else:
                values = [(c.name, value)]
            for name, v in values:
                item = _item(name, v, c, folder)
                if isinstance(item, str):
                    error = item
                    break
                items.append(item)
            if error is not None:
                break
        caption = texts[i] if texts is not None else None
        yield Sample(sid, tuple(items), text=caption, error=error)


def _table_samples(task: Task) -> Iterator[Sample]:
    """Samples of a parquet task (its row groups) or an arrow file, in small batches."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if task.format == "parquet":
        pf = pq.ParquetFile(task.path)
        schema = pf.schema_arrow
        groups = list(task.row_groups) or list(range(pf.metadata.num_row_groups))
        if not groups:
            return
        first_row = sum(pf.metadata.row_group(g).num_rows for g in range(groups[0]))
        strings = [
            f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
        ]
        peek = None
        if strings:  # a path column is told from its first value: read that value only
            head = next(pf.iter_batches(1, row_groups=groups[:1], columns=strings), None)
            peek = head.to_pylist()[0] if head is not None and head.num_rows else None
        columns, text, error = _choose(schema, task, peek)
        if error is not None:
            yield Sample(f"{task.path} ({task.rows} rows)", error=error)
            return
        wanted = [c.name for c in columns] + ([text] if text else [])
        batches: Iterable[Any] = pf.iter_batches(
            BATCH_ROWS, row_groups=groups, columns=wanted, use_threads=False
        )  # one thread per worker: the runner already runs one worker per core
    else:
        schema, it = _arrow_batches(task.path)
        first_row = 0
        head = next(it, None)
        if head is None:
            return
        peek = head.slice(0, 1).to_pylist()
        columns, text, error = _choose(schema, task, peek[0] if peek else None)
        if error is not None:
            yield Sample(f"{task.path} ({task.rows} rows)", error=error)
            return
        batches = _chain([head], it)
    for batch in batches:
        yield from _row_samples(batch, columns, text, task.path, first_row)
        first_row += batch.num_rows


def _chain(*its: Iterable[Any]) -> Iterator[Any]:
    for it in its:
        yield from it


# --------------------------------------------------------------------------- tars

# WebDataset's key rule (webdataset's base_plus_ext): the key is the member's path up to
# the first dot of its file name; the rest is the suffix ("a/b.seg.jpg" → "a/b", "seg.jpg").
_KEY = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")
_TEXT_SUFFIXES = ("txt", "text", "caption", "json")
_CAPTION_KEYS = ("caption", "text", "prompt", "txt", "sentence", "transcription")


def _caption(suffix: str, data: bytes) -> str:
    """A text member's caption: the file itself, or a JSON object's caption-like field."""
    text = data.decode("utf-8")
    if not suffix.endswith("json"):
        return text
    value = json.loads(text)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in _CAPTION_KEYS:
            if isinstance(value.get(key), str):
                return value[key]
        return ""
    return ""


def _group(shard: str, key: str, members: dict[str, bytes]) -> Sample:
    sid = f"{shard}#{key}"
    items, text = [], None
    for suffix, data in members.items():
        last = suffix.rsplit(".", 1)[-1].lower()
        if last in _TEXT_SUFFIXES:
            try:
                caption = _caption(last, data)
            except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError included
                return Sample(
                    sid, error=f"{suffix}: unreadable text ({' '.join(str(exc).split())})"
                )
            text = caption if text is None else text + "\n" + caption
            continue
        if kind_of("x." + last) is not None:
            items.append(Item(suffix, data=data, path=f"{key}.{suffix}"))
    if not items:
        have = ", ".join(sorted(members)) or "nothing"
        return Sample(sid, error=f"missing keys: no image, clip or video member (has {have})")
    return Sample(sid, tuple(items), text=text)


def _tar_samples(task: Task) -> Iterator[Sample]:
    """A WebDataset shard's samples, members grouped by key as the tar streams by; a
    shard truncated mid-member ends with one failure for the key it was reading."""
    key: str | None = None
    members: dict[str, bytes] = {}
    with open(task.path, "rb") as fh:
        try:
            with tarfile.open(fileobj=fh, mode="r|*") as tar:
                for info in tar:
                    if not info.isreg():
                        continue
                    m = _KEY.match(info.name)
                    if m is None:
                        continue
                    this, suffix = m.group(1), m.group(2)
                    if key is not None and this != key:
                        yield _group(task.path, key, members)
                        members = {}
                    key = this
                    member = tar.extractfile(info)
                    members[suffix] = member.read() if member is not None else b""
        except (tarfile.TarError, EOFError, OSError) as exc:
            where = f"{task.path}#{key}" if key is not None else task.path
            reason = " ".join(str(exc).split()) or type(exc).__name__
            yield Sample(
                where,
                error=f"tar shard truncated or corrupt while reading {key or 'its first member'!s}: {reason}",
            )  # noqa: E501
            return
    if key is not None:
        yield _group(task.path, key, members)


# --------------------------------------------------------------------------- one task


def task_samples(task: Task) -> Iterator[Sample]:
    """The samples of one task; a shard that cannot be opened is one failed sample."""
    if task.format == "files":
        for p in task.paths:
            yield Sample(p, (Item(p, path=p),))
        return
    try:
        if task.format == "tar":
            yield from _tar_samples(task)
        else:
            yield from _table_samples(task)
    except ImportError:
        yield Sample(
            task.path,
            error=f"reading {task.format} shards needs pyarrow: "
            "pip install pyarrow (a dependency of gemma-explore)",
        )
    except Exception as exc:  # noqa: BLE001 - a corrupt shard is a row, never a crash
        reason = " ".join(str(exc).split()) or type(exc).__name__
        yield Sample(task.path, error=f"cannot read this {task.format} shard: {reason}")


def run_task(
    task: Task,
    *,
    family: str,
    budgets: tuple[int | None, ...],
    text: Callable[[str], int] | None = None,
    per_sample: Callable[..., BillRow] = bill_sample,
) -> list[BillRow]:
    """Bill every sample of one task with ``per_sample`` (:func:`bill_sample`): what each
    runner's worker runs.

    >>> run_task(Task("files", paths=("a.txt",)), family="gemma4", budgets=(280,))[0].error
    'unsupported file type .txt (not an image, clip or video)'
    """
    return [per_sample(s, family=family, budgets=budgets, text=text) for s in task_samples(task)]
