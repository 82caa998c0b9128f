"""The task tools: ``task.create``, ``task.get``, ``task.list``."""

from __future__ import annotations

from pydantic import Field

from capabilities.mcp._registry import ToolArgs, ToolCall, ToolResult, ToolSpec
from capabilities.mcp._results import Proposal, Task
from store.work import MAX_BODY_CHARS, MAX_TITLE_CHARS, RiskWord, TaskPriorityWord, TaskStatusWord

__all__ = ["TOOLS"]


class CreateArgs(ToolArgs):
    """Arguments of ``task.create``."""

    title: str = Field(description="A short title.", max_length=MAX_TITLE_CHARS)
    body_md: str = Field(
        default="", description="Markdown description of the work.", max_length=MAX_BODY_CHARS
    )
    priority: TaskPriorityWord = Field(default="normal", description="low, normal, high or urgent.")
    risk: RiskWord = Field(default="normal", description="The default risk of the task's proposals.")
    assignee: str | None = Field(
        default=None, description="The agent the task is assigned to.", max_length=200
    )


class GetArgs(ToolArgs):
    """Arguments of ``task.get``."""

    task_id: str = Field(description="The task (T-...).", max_length=200)


class ListArgs(ToolArgs):
    """Arguments of ``task.list``."""

    status: TaskStatusWord | None = Field(default=None, description="Only tasks with this status.")
    limit: int | None = Field(default=None, description="Page size, 1..500 (default 50).", ge=1, le=500)
    cursor: str | None = Field(default=None, description="next_cursor of the previous page.", max_length=200)


class TaskResult(ToolResult):
    """The answer of ``task.create``."""

    task: Task


class TaskDetailResult(ToolResult):
    """The answer of ``task.get``."""

    task: Task
    proposals: list[Proposal]


class TaskPageResult(ToolResult):
    """The answer of ``task.list``."""

    tasks: list[Task]
    next_cursor: str | None


async def _create(call: ToolCall) -> TaskResult:
    args: CreateArgs = call.args
    store = call.services.store
    task = await store.db.run(
        store.tasks.create,
        title=args.title,
        body_md=args.body_md,
        priority=args.priority,
        risk=args.risk,
        assignee=args.assignee,
        actor=call.principal.actor,
    )
    return TaskResult.model_validate({"task": task.to_dict()})


async def _get(call: ToolCall) -> TaskDetailResult:
    args: GetArgs = call.args
    store = call.services.store
    task = await store.db.run(store.tasks.get, args.task_id)
    proposals, _ = await store.db.run(store.proposals.list, task_id=task.id, limit=500)
    return TaskDetailResult.model_validate({"task": task.to_dict(), "proposals": proposals})


async def _list(call: ToolCall) -> TaskPageResult:
    args: ListArgs = call.args
    store = call.services.store
    tasks, cursor = await store.db.run(
        store.tasks.list, status=args.status, limit=args.limit, cursor=args.cursor
    )
    return TaskPageResult.model_validate({"tasks": [task.to_dict() for task in tasks], "next_cursor": cursor})


TOOLS = [
    ToolSpec(
        name="task.create",
        description="Create a task (status open). Proposals belong to a task.",
        args_model=CreateArgs,
        handler=_create,
        title="Create a task",
        result_model=TaskResult,
    ),
    ToolSpec(
        name="task.get",
        description="One task and its proposals.",
        args_model=GetArgs,
        handler=_get,
        title="Get a task",
        result_model=TaskDetailResult,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="task.list",
        description="Tasks, oldest first, a page at a time (pass next_cursor back as cursor).",
        args_model=ListArgs,
        handler=_list,
        title="List tasks",
        result_model=TaskPageResult,
        read_only=True,
        idempotent=True,
    ),
]
