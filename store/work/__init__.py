"""The work items: tasks, proposals, review rounds and votes, decisions, timelines."""

from __future__ import annotations

from store.work._apply import WorkspaceStore
from store.work._decisions import Decision, DecisionStore, decision_from_row
from store.work._proposals import ProposalStore, proposal_view
from store.work._records import Proposal, load_proposal
from store.work._rounds import Ballot, close_open_round, evaluate_consensus, leave_review
from store.work._tasks import Task, TaskStore, load_task
from store.work._timeline import TimelineStore
from store.work._vocabulary import (
    MAX_BODY_CHARS,
    MAX_LIST_ITEMS,
    MAX_TITLE_CHARS,
    DecisionOutcome,
    DecisionOutcomeWord,
    ProposalStatus,
    ProposalStatusWord,
    Risk,
    RiskWord,
    TaskPriority,
    TaskPriorityWord,
    TaskStatus,
    TaskStatusWord,
    Vote,
    VoteWord,
    check_object_id,
)
from store.work._votes import ReviewStore

__all__ = [
    "MAX_BODY_CHARS",
    "MAX_LIST_ITEMS",
    "MAX_TITLE_CHARS",
    "Ballot",
    "Decision",
    "DecisionOutcome",
    "DecisionOutcomeWord",
    "DecisionStore",
    "Proposal",
    "ProposalStatus",
    "ProposalStatusWord",
    "ProposalStore",
    "ReviewStore",
    "Risk",
    "RiskWord",
    "Task",
    "TaskPriority",
    "TaskPriorityWord",
    "TaskStatus",
    "TaskStatusWord",
    "TaskStore",
    "TimelineStore",
    "Vote",
    "VoteWord",
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
