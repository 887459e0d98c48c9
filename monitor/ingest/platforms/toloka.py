"""Toloka assignments export (TSV with ``INPUT:``, ``OUTPUT:``, ``GOLDEN:``, ``ASSIGNMENT:`` columns),
declared.

One row is one task of one assignment, one judgment: ``ASSIGNMENT:worker_id`` is the worker,
``ASSIGNMENT:submitted`` the time (Toloka writes UTC without an offset) and
``submitted - started`` the duration. An assignment is a task suite of one or more tasks, so the
judgment id is ``ASSIGNMENT:assignment_id`` + ``/`` + a digest of the task's ``INPUT:`` values:
the same whether or not the export carries ``ASSIGNMENT:task_id`` (kept in the payload).
SUBMITTED, ACCEPTED and APPROVED rows are kept; REJECTED only with the option
``keep_rejected``; SKIPPED, EXPIRED and ACTIVE rows carry no answer and are skipped. A filled
``GOLDEN:`` column becomes the item's gold value. See ``docs/platforms/toloka.md``.
"""

from __future__ import annotations

from monitor.ingest.platforms.export import Clock, Export, Statuses
from monitor.ingest.platforms.mapping import parse_iso

WORKER = "ASSIGNMENT:worker_id"

TOLOKA = Export(
    platform="Toloka",
    delimiter="\t",
    worker=WORKER,
    required=(WORKER,),
    expected="expected a Toloka assignments TSV (INPUT:..., OUTPUT:..., ASSIGNMENT:worker_id)",
    inputs="INPUT:",
    answers="OUTPUT:",
    gold=("GOLDEN:", ""),
    items=("INPUT:item", "INPUT:item_id", "INPUT:id", "ASSIGNMENT:task_id"),
    judgment="ASSIGNMENT:assignment_id",
    suites=True,
    task="ASSIGNMENT:task_id",
    submitted="ASSIGNMENT:submitted",
    started="ASSIGNMENT:started",
    clock=Clock(parse_iso, "expected ISO 8601 like 2025-11-03T09:12:45.123"),
    statuses=Statuses(
        "ASSIGNMENT:status",
        rejected=frozenset({"REJECTED"}),
        skipped=frozenset({"SKIPPED", "EXPIRED", "ACTIVE"}),
        kept=frozenset({"SUBMITTED", "ACCEPTED", "APPROVED", ""}),
        expected="expected SUBMITTED, ACCEPTED, APPROVED, REJECTED, SKIPPED, EXPIRED or ACTIVE",
    ),
    payload={
        "ASSIGNMENT:task_id": "task_id",
        "ASSIGNMENT:status": "status",
        "INPUT:pair_id": "pair_id",
    },
    empty_worker="export assignments, not tasks",
    answer_word="output",
    no_answer=("no OUTPUT column", "choose one with --map value=COLUMN"),
)

read = TOLOKA.reader()
