"""The build-it track: five parts of the course's story, written by the learner in about
twenty lines each, and checked against transformers' and vLLM's own functions.

Each exercise is one module of this folder, in Karpathy's ``exercise.md`` shape: the
module's docstring is the exercise (the goal, the spec, how it is checked), and its
function is a blank that raises ``NotImplementedError``. ``README.md`` beside them lists
the track. The checks (``checks.py``) are ordinary pytest tests that call the real
libraries, through the package's parity harness where a tower must run:

======================  ==========================================================
``resize``              Gemma 4's resize for a budget (transformers' size function)
``audio_slots``         Gemma 3n's real audio tokens and its 188 slots (the tower)
``newlines``            vLLM's Gemma 3n newline merge (``_apply_token_matches``)
``raw_audio``           Unified's ``ceil(samples / 640)`` against vLLM's mel count
``video_stamps``        one video's timestamped expansion (``replace_video_token``)
======================  ==========================================================

A learner works in a folder of their own, never in this one (its blanks must stay
blank: the suite proves the checks fail on them)::

    python -m gemma_explore.course.buildit start my_build    # copies the five blanks
    python -m gemma_explore.course.buildit check my_build     # runs the checks on them
    python -m gemma_explore.course.buildit check my_build -k resize

(or ``GEMMA_EXPLORE_BUILDIT=my_build pytest <this folder>/checks.py``). The reference
solutions are sealed in :mod:`~gemma_explore.course.buildit.sealed` and open only for a
teacher (``GEMMA_EXPLORE_TEACHER=1``): ``check reference`` runs the same checks on them.

>>> [name for name in TRACK][:2]
['resize', 'audio_slots']
>>> implementation("resize").resize_for_budget(600, 800, 70)
Traceback (most recent call last):
NotImplementedError: Your turn: write Gemma 4's resize (see this module's docstring).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import types
from pathlib import Path

from gemma_explore.course.buildit.sealed import TRACK, reference

__all__ = ["HERE", "SOURCE_ENV", "TRACK", "implementation", "start"]

HERE = Path(__file__).resolve().parent  # the blanks (and, in a checkout, a learner's edits)

# Which implementations the checks load: unset or "package" (this folder's files), a
# folder (a learner's copies, from `start`), or "reference" (a teacher's sealed ones).
SOURCE_ENV = "GEMMA_EXPLORE_BUILDIT"


def implementation(name: str, source: str | os.PathLike | None = None) -> types.ModuleType:
    """The module that implements exercise ``name``, from ``source`` (default: the
    environment's :data:`SOURCE_ENV`, else this folder).

    >>> implementation("video_stamps").expand_video.__name__
    'expand_video'
    """
    if name not in TRACK:
        raise KeyError(f"No build-it exercise {name!r}; the track is {', '.join(TRACK)}.")
    where = str(source or os.environ.get(SOURCE_ENV) or "package")
    if where == "reference":
        return reference(name)
    if where == "package":
        return importlib.import_module(f"gemma_explore.course.buildit.{name}")
    path = Path(where) / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: `start {where}` copies the blanks there.")
    spec = importlib.util.spec_from_file_location(f"buildit_learner_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def start(folder: str | os.PathLike) -> list[Path]:
    """Copy the five blanks (and the track's README) into ``folder``, keeping any file
    already there (a learner's work is never overwritten). Returns the files copied.

    >>> import tempfile; start(tempfile.mkdtemp())[0].name
    'README.md'
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in ("README.md", *(f"{n}.py" for n in TRACK)):
        if not (out / name).exists():
            shutil.copyfile(HERE / name, out / name)
            copied.append(out / name)
    return copied
