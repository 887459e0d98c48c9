"""Amazon Mechanical Turk batch results (the CSV the requester site downloads), declared.

One assignment is one judgment: ``WorkerId`` is the worker, ``AssignmentId`` the judgment id,
``SubmitTime`` the time (MTurk's ``Mon Nov 03 09:12:45 PST 2025``, converted to UTC) and
``WorkTimeInSeconds`` the duration. The answer is an ``Answer.*`` column or a key of the JSON in
``Answer.taskAnswers`` (crowd-html-elements forms). Rejected assignments are skipped unless the
option ``keep_rejected`` is set. A HIT asking several questions (``Input.item1..N``,
``Answer.q1..N``) is read with ``{n}`` in the mapping: one judgment per (assignment, n), id
``AssignmentId/n``. See ``docs/platforms/mturk.md``.
"""

from __future__ import annotations

from monitor.ingest.platforms.export import Clock, Export, Statuses
from monitor.ingest.platforms.mapping import parse_mturk_time

MTURK = Export(
    platform="MTurk",
    delimiter=",",
    worker="WorkerId",
    required=("AssignmentId", "WorkerId"),
    expected="expected an MTurk batch results CSV (HITId, AssignmentId, WorkerId, ...)",
    inputs="Input.",
    answers="Answer.",
    items=("Input.item", "Input.item_id", "Input.id", "HITId"),
    task_answers="Answer.taskAnswers",
    judgment="AssignmentId",
    submitted="SubmitTime",
    worked="WorkTimeInSeconds",
    worked_hint="expected a number like 93",
    clock=Clock(parse_mturk_time, "expected MTurk's format like 'Mon Nov 03 09:12:45 PST 2025'"),
    statuses=Statuses("AssignmentStatus", rejected=frozenset({"REJECTED"})),
    payload={
        "HITId": "hit_id",
        "AssignmentStatus": "assignment_status",
        "Input.pair_id": "pair_id",
    },
    no_answer=("no answer column (Answer.*)", "is this an MTurk batch results file?"),
)

read = MTURK.reader()
