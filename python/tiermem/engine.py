"""The task engine under :func:`tiermem.sweep` and ``tiermem reproduce all``: run one
function over a list of items in this process, in local processes, or on a Ray cluster.

Every backend gives the same contract: results come back in item order; a task that
raises (or whose worker dies) is retried once; one that fails twice is reported with its
item, never dropped. What happened is in :class:`TaskReport`.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError, TiermemError

__all__ = ["BACKENDS", "TaskFailure", "TaskReport", "TasksFailedError", "run_tasks", "check_ray_address"]

#: The engines :func:`run_tasks` knows.
BACKENDS = ("local", "ray")

#: Attempts per task: the first run and one retry.
ATTEMPTS = 2


@dataclass
class TaskFailure:
    """One failed attempt of one task."""

    index: int
    item: Any
    attempt: int
    error: str


@dataclass
class TaskReport:
    """What the engine did: ``retried`` lists first attempts that failed (their retry
    succeeded or is in ``failed``); ``failed`` lists tasks whose retry failed too."""

    backend: str
    tasks: int = 0
    retried: list[TaskFailure] = field(default_factory=list)
    failed: list[TaskFailure] = field(default_factory=list)


class TasksFailedError(TiermemError):
    """Tasks failed twice; ``report.failed`` names each with its item and error, and
    ``results`` holds every task that succeeded (``None`` for the failed ones)."""

    def __init__(self, report: TaskReport, results: list[Any]) -> None:
        first = report.failed[0]
        super().__init__(
            f"{len(report.failed)} of {report.tasks} tasks failed twice; first: task {first.index} "
            f"({first.item!r}): {first.error}"
        )
        self.report = report
        self.results = results


def check_ray_address(address: str, timeout_s: float = 3.0) -> None:
    """Raise :class:`ConfigError` naming ``address`` unless something answers there.

    ``ray.init`` waits a long time on an address where nothing listens; this answers in
    ``timeout_s``.
    """
    host, sep, port_text = address.strip().removeprefix("ray://").rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ConfigError(
            f"field `address`: {address!r} is not HOST:PORT; give the Ray head's address, e.g. 127.0.0.1:6379"
        )
    try:
        with socket.create_connection((host, int(port_text)), timeout=timeout_s):
            pass
    except OSError as e:
        raise ConfigError(
            f"field `address`: no Ray cluster answers at {address} ({e.strerror or e}); "
            "start one with `ray start --head` or give the head's HOST:PORT"
        ) from None


def run_tasks(
    fn: Callable[[Any], Any],
    items: Sequence[Any],
    backend: str = "local",
    address: str | None = None,
    jobs: int = 1,
    on_result: Callable[[int, Any], None] | None = None,
) -> tuple[list[Any], TaskReport]:
    """``[fn(item) for item in items]`` on ``backend``; returns the results and the report.

    ``backend="local"`` runs in this process (``jobs <= 1``) or in ``jobs`` processes;
    ``backend="ray"`` runs each item as a Ray task on the cluster at ``address`` (a local
    Ray instance when ``None``; the caller's ``ray.init`` is reused). ``fn`` must be
    importable by the workers (a module-level function). ``on_result(index, result)`` is
    called as each task finishes. Raises :class:`TasksFailedError` when a task fails twice.
    """
    if backend not in BACKENDS:
        raise ConfigError(f"field `backend`: unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    report = TaskReport(backend=backend, tasks=len(items))
    results: list[Any] = [None] * len(items)
    done = [False] * len(items)

    def finish(i: int, value: Any) -> None:
        results[i] = value
        done[i] = True
        if on_result is not None:
            on_result(i, value)

    def failed(i: int, attempt: int, err: BaseException) -> bool:
        """Record a failed attempt; True when the task gets another."""
        failure = TaskFailure(index=i, item=items[i], attempt=attempt, error=_describe(err))
        if attempt < ATTEMPTS:
            report.retried.append(failure)
            return True
        report.failed.append(failure)
        return False

    if backend == "ray":
        _run_ray(fn, items, address, finish, failed)
    elif jobs <= 1 or len(items) <= 1:
        for i, item in enumerate(items):
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    value = fn(item)
                except Exception as e:  # noqa: BLE001 - any task error is reported, then retried
                    if failed(i, attempt, e):
                        continue
                    break
                finish(i, value)
                break
    else:
        _run_pool(fn, items, jobs, finish, failed)
    if report.failed:
        raise TasksFailedError(report, results)
    return results, report


def _describe(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[-1] if text else ''}".rstrip(": ")


def _run_pool(fn, items, jobs, finish, failed) -> None:
    attempts = [0] * len(items)
    queue = list(range(len(items)))
    while queue:
        # A worker that dies breaks the whole pool: the tasks it took down are retried in
        # a new pool.
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            running: dict[Future, int] = {}
            for i in queue:
                attempts[i] += 1
                running[pool.submit(fn, items[i])] = i
            queue = []
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    i = running.pop(fut)
                    try:
                        finish(i, fut.result())
                    except Exception as e:  # noqa: BLE001
                        if failed(i, attempts[i], e):
                            queue.append(i)


def _call(fn: Callable[[Any], Any], item: Any) -> Any:
    """A Ray task: ``fn(item)`` (Ray wraps functions, not partials or other callables)."""
    return fn(item)


def _run_ray(fn, items, address, finish, failed) -> None:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "field `backend`: \"ray\" needs Ray, which is not installed; "
            "`pip install tiermem[ray]` or `make setup-ray`, or use backend=\"local\""
        ) from None
    started_here = not ray.is_initialized()
    if started_here:
        if address is not None and address not in ("auto", "local"):
            check_ray_address(address)
        ray.init(address=address, log_to_driver=False, include_dashboard=False, configure_logging=False)
    try:
        # max_retries=0: the retry is ours, so that it is reported with the task.
        task = ray.remote(max_retries=0)(_call)
        fn_ref = ray.put(fn)  # shipped once (a partial may carry a whole base config)
        attempts = [1] * len(items)
        pending = {task.remote(fn_ref, item): i for i, item in enumerate(items)}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            i = pending.pop(ref)
            try:
                finish(i, ray.get(ref))
            except Exception as e:  # noqa: BLE001 - a task's error, or RayError for a dead worker
                if failed(i, attempts[i], e):
                    attempts[i] += 1
                    pending[task.remote(fn_ref, items[i])] = i
    finally:
        if started_here:
            ray.shutdown()
