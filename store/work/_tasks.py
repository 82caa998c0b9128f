"""Tasks: the unit of work proposals belong to.

A task has a title, a Markdown body, a priority, a risk (the default risk of its proposals), a
status and an optional assignee. ``task.create`` writes the row and its ``task.created`` event in
one transaction.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from store._ids import new_id, utc_now_iso
from store._rows import as_dict, fetch_row, from_row
from store.db import Database
from store.events import append_event
from store.work._vocabulary import (
    MAX_BODY_CHARS,
    MAX_TITLE_CHARS,
    Risk,
    TaskPriority,
    TaskStatus,
    check_agent_id,
    check_choice,
    check_object_id,
    check_text,
    page_query,
)

__all__ = ["Task", "TaskStore", "task_from_row"]


@dataclass(frozen=True)
class Task:
    """One task."""

    id: str
    title: str
    body_md: str
    priority: TaskPriority
    risk: Risk
    status: TaskStatus
    assignee: str | None
    created_by: str
    created_at: str
    updated_at: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape used by every interface."""
        return as_dict(self)


def task_from_row(row: sqlite3.Row) -> Task:
    """Build a :class:`Task` from a ``tasks`` row."""
    return from_row(
        Task,
        row,
        priority=TaskPriority(row["priority"]),
        risk=Risk(row["risk"]),
        status=TaskStatus(row["status"]),
    )


def load_task(conn: sqlite3.Connection, task_id: str) -> Task:
    """One task on an open connection, or :class:`NotFound`."""
    return task_from_row(fetch_row(conn, "tasks", "task", task_id))


class TaskStore:
    """Creates and reads tasks; every method is blocking (call it through ``Database.run``)."""

    def __init__(self, db: Database):
        self.db = db

    def create(
        self,
        *,
        title: object,
        body_md: object = "",
        priority: object = "normal",
        risk: object = "normal",
        assignee: object = None,
        actor: str,
    ) -> Task:
        """``task.create``: a new ``open`` task and its ``task.created`` event."""
        title_v = check_text("title", title, limit=MAX_TITLE_CHARS)
        body_v = check_text("body_md", body_md, limit=MAX_BODY_CHARS, blank_ok=True)
        priority_v = check_choice("priority", priority, TaskPriority)
        risk_v = check_choice("risk", risk, Risk)
        assignee_v = None if assignee in (None, "") else check_agent_id(assignee, "assignee")

        def write(conn: sqlite3.Connection) -> Task:
            now = utc_now_iso()
            task = Task(
                new_id("task"),
                title_v,
                body_v,
                priority_v,
                risk_v,
                TaskStatus.OPEN,
                assignee_v,
                actor,
                now,
                now,
            )
            conn.execute(
                "INSERT INTO tasks (id, title, body_md, priority, risk, status, assignee, created_by,"
                " created_at, updated_at) VALUES (:id, :title, :body_md, :priority, :risk, :status,"
                " :assignee, :created_by, :created_at, :updated_at)",
                as_dict(task),
            )
            append_event(
                conn,
                "task.created",
                actor=actor,
                task_id=task.id,
                payload={"title": title_v, "priority": priority_v, "risk": risk_v, "assignee": assignee_v},
            )
            return task

        return self.db.write(write)

    def get(self, task_id: object) -> Task:
        """One task by ID, or :class:`NotFound`."""
        id_v = check_object_id("task_id", task_id)
        return self.db.read(lambda conn: load_task(conn, id_v))

    def list(
        self, *, status: object = None, limit: object = None, cursor: object = None
    ) -> tuple[list[Task], str | None]:
        """Tasks oldest first (IDs sort by creation time), a page at a time; the next cursor or ``None``."""
        filters = {"status": None if status in (None, "") else check_choice("status", status, TaskStatus)}
        sql, params, count = page_query("tasks", filters, cursor=cursor, limit=limit)
        rows = self.db.read(lambda conn: conn.execute(sql, params).fetchall())
        tasks = [task_from_row(row) for row in rows[:count]]
        return tasks, (tasks[-1].id if len(rows) > count else None)
