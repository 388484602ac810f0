"""The runners of a bill's tasks: a process pool here, or Ray Data on a cluster.

Both map the same function, :func:`~gemma_explore.bill.sources.run_task` with the one
per-sample function :func:`~gemma_explore.bill.core.bill_sample`, over the same
:class:`~gemma_explore.bill.sources.Task` objects, and stream the rows back to the caller's
tally and writers. Nothing runner-specific reaches the arithmetic.

* ``local``: ``multiprocessing`` workers take tasks in order (``imap``), so rows arrive in
  the order of the source; ``workers=1`` runs in this process.
* ``ray``: the tasks become a Ray Data dataset (``ray.data.from_items``) and
  ``map_batches`` runs ``run_task`` on Ray's workers; rows come back pickled in an arrow
  column. It joins a running cluster (``ray.init(address="auto")``) or, when none runs,
  starts a local one. Why tasks and not ``read_parquet`` / ``read_webdataset``: those
  readers fail the whole job on one truncated tar or corrupt footer (the bill lists such
  shards as rows instead), lose the row number a failure is reported with, and would
  ship every image's bytes through the object store; a task ships a path and row groups,
  and the worker reads only the headers it needs. The shards must be readable from every
  node (a shared filesystem), and ``gemma_explore`` installed there.

>>> RUNNERS
('local', 'ray')
"""

from __future__ import annotations

import functools
import itertools
import os
import pickle
from collections.abc import Callable, Iterable, Iterator

from gemma_explore.bill.core import BillRow, bill_sample
from gemma_explore.bill.sources import Task, run_task

__all__ = ["RUNNERS", "local_rows", "ray_rows", "start_ray"]

RUNNERS = ("local", "ray")


def local_rows(
    tasks: Iterable[Task],
    *,
    family: str,
    budgets: tuple[int | None, ...],
    text: Callable[[str], int] | None = None,
    workers: int | None = None,
    per_sample: Callable[..., BillRow] = bill_sample,
) -> Iterator[tuple[Task, list[BillRow]]]:
    """Run tasks on ``workers`` processes (default: every core), yielding each task with
    its rows in the order of ``tasks``. Tasks are taken lazily: memory stays flat."""
    workers = (os.cpu_count() or 1) if workers is None else max(1, int(workers))
    job = functools.partial(
        _task_with_rows, family=family, budgets=budgets, text=text, per_sample=per_sample
    )
    if workers == 1:
        yield from map(job, tasks)
        return
    import multiprocessing

    pool = multiprocessing.get_context().Pool(workers)
    finished = False
    try:
        yield from pool.imap(job, tasks)
        finished = True
    finally:
        # Done: close() lets each worker take its sentinel and exit. terminate() only when
        # the caller stopped early: a SIGTERM can land while a worker holds the task
        # queue's lock (the others then wait on it for ever), and a worker forked after
        # Ray started inherits Ray's SIGTERM handler.
        if finished:
            pool.close()
        else:
            pool.terminate()
        pool.join()


def _task_with_rows(task: Task, **kwargs) -> tuple[Task, list[BillRow]]:
    return task, run_task(task, **kwargs)


def start_ray(num_cpus: int | None = None) -> str:
    """Join the running Ray cluster, or start a local one; says which.

    A cluster already joined in this process is used as it is (a test's local Ray, a
    notebook's ``ray.init``).
    """
    import ray

    if ray.is_initialized():
        return "the Ray instance this process already joined"
    if os.environ.get("RAY_ADDRESS") or os.path.exists("/tmp/ray/ray_current_cluster"):
        try:
            ray.init(address="auto", log_to_driver=False)
            return "a running Ray cluster (address='auto')"
        except (ConnectionError, RuntimeError, ValueError):
            pass  # a stale address file: start our own
    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    return f"a local Ray started here ({num_cpus or os.cpu_count()} CPUs)"


def _ray_batch(batch: dict, **kwargs) -> dict:
    """``run_task`` over a batch of task rows; rows go back pickled (one bytes column)."""
    out, owners = [], []
    for i in range(len(batch["format"])):
        task = Task.from_dict({k: batch[k][i] for k in batch})
        rows = run_task(task, **kwargs)
        out += [pickle.dumps(r) for r in rows] or [b""]  # an empty shard still reports
        owners += [int(batch["_task"][i])] * max(1, len(rows))
    return {"row": out, "_task": owners}


def ray_rows(
    tasks: Iterable[Task],
    *,
    family: str,
    budgets: tuple[int | None, ...],
    text: Callable[[str], int] | None = None,
    workers: int | None = None,
    per_sample: Callable[..., BillRow] = bill_sample,
) -> Iterator[tuple[Task, list[BillRow]]]:
    """Run tasks as a Ray Data dataset; yields each task's rows as they stream back.

    ``workers`` caps the concurrent Ray tasks (default: what the cluster offers). The
    task list is built first (a task is a path and a few numbers, not data).
    """
    import ray.data

    start_ray(workers)
    listed = list(tasks)
    if not listed:
        return
    items = [{**t.as_dict(), "_task": i} for i, t in enumerate(listed)]
    ds = ray.data.from_items(items, override_num_blocks=len(items))
    kwargs = {"family": family, "budgets": budgets, "text": text, "per_sample": per_sample}
    compute = ray.data.TaskPoolStrategy(size=workers) if workers else None
    mapped = ds.map_batches(_ray_batch, fn_kwargs=kwargs, batch_size=1, compute=compute)
    # batch_size=None: Ray's blocks as they are, one per task (never re-cut across tasks)
    for batch in mapped.iter_batches(batch_size=None, batch_format="numpy"):
        groups = itertools.groupby(
            zip(batch["_task"], batch["row"], strict=True), key=lambda pair: int(pair[0])
        )
        for index, pairs in groups:
            rows = [pickle.loads(r) for _, r in pairs if len(r)]
            yield listed[index], rows
