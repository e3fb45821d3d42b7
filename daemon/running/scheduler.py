"""Periodic work: reconcile, verify and (opt-in) PLAN archival, on apscheduler's clock.

A job only submits a task to the worker's queue; the worker runs the same functions the CLI
runs (`sync_root`, `verify_root`, `archive_plans`), one at a time, so scheduled work never
races a batch for the index. An interval of 0 minutes turns that job off.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from carryd.daemon.config import Settings
    from carryd.daemon.running.worker import TaskName

log = logging.getLogger(__name__)


def planned_jobs(settings: Settings) -> dict[TaskName, float]:
    """Given settings, return each periodic task and its interval in minutes."""
    daemon = settings.daemon
    jobs: dict[TaskName, float] = {}
    if daemon.reconcile_minutes > 0:
        jobs["reconcile"] = daemon.reconcile_minutes
    if daemon.verify_minutes > 0:
        jobs["verify"] = daemon.verify_minutes
    if daemon.archive_plan and daemon.archive_minutes > 0:
        jobs["archive"] = daemon.archive_minutes
    return jobs


class Scheduler:
    """Own an apscheduler BackgroundScheduler whose jobs submit tasks to the worker."""

    def __init__(self, settings: Settings, submit: Callable[[TaskName], None]) -> None:
        self._settings = settings
        self._submit = submit
        self._scheduler: Any = None
        self._jobs: dict[TaskName, float] = {}

    def start(self) -> None:
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.schedulers.background import BackgroundScheduler

        # apscheduler logs every job addition and run at INFO; ours say what matters.
        logging.getLogger("apscheduler").setLevel(logging.WARNING)
        # One executor thread is plenty: a job only puts a task on the worker's queue.
        self._scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max_workers=1)},
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 300},
            timezone="UTC",
        )
        self._apply(planned_jobs(self._settings))
        self._scheduler.start()

    def reload(self, settings: Settings) -> None:
        """Reschedule from new settings (jobs whose interval did not change keep their timer)."""
        self._settings = settings
        if self._scheduler is not None:
            self._apply(planned_jobs(settings))

    def _apply(self, wanted: dict[TaskName, float]) -> None:
        for task in list(self._jobs):
            if wanted.get(task) != self._jobs[task]:
                self._scheduler.remove_job(task)
                del self._jobs[task]
        for task, minutes in wanted.items():
            if task not in self._jobs:
                self._scheduler.add_job(
                    self._submit, "interval", minutes=minutes, args=[task], id=task, name=task
                )
                self._jobs[task] = minutes
                log.info("every %g min: %s", minutes, task)

    @property
    def jobs(self) -> dict[TaskName, float]:
        return dict(self._jobs)

    def stop(self) -> None:
        """Shut the scheduler down and wait for its threads."""
        if self._scheduler is not None and self._scheduler.running:
            self._scheduler.shutdown(wait=True)
        self._scheduler = None
