"""The work items: tasks, proposals, review rounds and votes, decisions, timelines."""

from __future__ import annotations

from store.work._apply import WorkspaceStore
from store.work._decisions import DecisionStore, decision_from_row
from store.work._proposals import ProposalStore, load_proposal, proposal_view
from store.work._rounds import close_open_round, evaluate_consensus, leave_review
from store.work._tasks import TaskStore, load_task
from store.work._timeline import TimelineStore
from store.work._vocabulary import MAX_BODY_CHARS, MAX_LIST_ITEMS, MAX_TITLE_CHARS, check_object_id
from store.work._votes import ReviewStore

__all__ = [
    "MAX_BODY_CHARS",
    "MAX_LIST_ITEMS",
    "MAX_TITLE_CHARS",
    "DecisionStore",
    "ProposalStore",
    "ReviewStore",
    "TaskStore",
    "TimelineStore",
    "WorkspaceStore",
    "check_object_id",
    "close_open_round",
    "decision_from_row",
    "evaluate_consensus",
    "leave_review",
    "load_proposal",
    "load_task",
    "proposal_view",
]
