"""Label Studio JSON export (a list of tasks with their annotations) to canonical rows.

One annotation is one judgment: ``completed_by`` is the worker, the annotation ``id`` the
judgment id, ``created_at`` the time and ``lead_time`` the duration. The answer is the result
whose ``from_name`` is the mapped ``value`` (``choices``, ``rating``, ``number``, ``taxonomy``
paths, or the Pairwise tag's ``selected``). Cancelled (skipped) annotations are dropped;
``ground_truth`` annotations become the item's gold value instead of a judgment (the option
``ground_truth`` chooses: ``gold``, ``judgment`` or ``both``). The export is one JSON document,
so it is loaded whole. See ``docs/platforms/labelstudio.md``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from monitor.core.errors import InputError, NotFound, UsageError
from monitor.ingest.jsondoc import json_array_elements
from monitor.ingest.platforms.mapping import (
    Kind,
    Record,
    Request,
    Rows,
    Where,
    canonical_value,
    checked_request,
    reader,
    seconds,
    utc_iso,
    utc_time,
)
from monitor.ingest.rows import BadRecord, SourceRow
from monitor.ingest.safe import unstorable

VALUE_KEYS = ("choices", "rating", "number", "selected", "taxonomy")  # selected: Pairwise tag
MISSING = object()
OPTIONS = ("ground_truth",)
GROUND_TRUTH = ("gold", "judgment", "both")
PATH_SEPARATOR = "/"  # between the levels of a Taxonomy path
Task = tuple[int, Any]  # the line a task starts on, and the task


def _check(request: Request) -> None:
    ground_truth = request.options.get("ground_truth", "gold").strip().lower() or "gold"
    if ground_truth not in GROUND_TRUTH:
        raise UsageError(
            f"option ground_truth: expected gold, judgment or both, got "
            f"'{request.options['ground_truth']}'",
            hint="gold: the item's gold value only; judgment: an ordinary judgment; both",
        )
    worker_key = request.mapping.get("worker", "id")
    if worker_key not in ("id", "email"):
        raise UsageError(
            f"--map worker={worker_key}: Label Studio names annotators by id or email",
            hint="use --map worker=id or --map worker=email",
        )


def _load(path: Path) -> list[Task]:
    """The tasks of the export with the line each starts on; text that is not UTF-8 or not a
    JSON array refuses the file at the line and character where it goes wrong, and so does an
    element that is not a task (the file is not a Label Studio JSON export)."""
    name = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFound(f"no such file: {name}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        char = len(data[start : exc.start].decode("utf-8-sig", "replace")) + 1
        raise InputError.at(
            name, line, None, "not UTF-8 text", "export the file as UTF-8", char
        ) from None
    tasks = json_array_elements(name, text)
    for line, task in tasks:
        if not isinstance(task, dict) or not isinstance(task.get("annotations", []), list):
            raise Where(name, line).error(
                "expected a task object with an 'annotations' list",
                hint="export from Label Studio with the JSON format (not JSON_MIN)",
            )
    return tasks


def _rows(path: Path, request: Request, notes: list[str]) -> Iterator[Record]:
    """Read a Label Studio JSON export as canonical judgment rows and gold/text item rows."""
    return _task_rows(str(path), _load(path), request, notes)


def read_tasks(
    source: str,
    tasks: list[Task],
    *,
    kind: Kind,
    mapping: dict[str, str] | None = None,
    options: dict[str, str] | None = None,
) -> Rows:
    """The rows of Label Studio tasks already read (from its API: ``(task id, task)``, the id
    standing for the line in messages), mapped as the export reader maps them (``--map``,
    ``--option ground_truth``); a usage error comes at once."""
    request = checked_request(
        "Label Studio", kind, mapping, options, options_known=OPTIONS, check=_check
    )
    return Rows(lambda notes: _task_rows(source, tasks, request, notes))


def annotation_role(annotation: dict[str, Any], kind: str, options: dict[str, str] | None) -> str:
    """What an annotation becomes, as the rows say: ``judgment``, ``gold`` (the item's gold
    value), ``both``, or ``none`` (skipped, or a pair's ground-truth mark)."""
    ground_truth = (options or {}).get("ground_truth", "gold").strip().lower() or "gold"
    if annotation.get("was_cancelled") is True:
        return "none"
    if annotation.get("ground_truth") is not True or ground_truth == "judgment":
        return "judgment"
    if kind == "pairwise":
        return "none" if ground_truth == "gold" else "judgment"
    return ground_truth


def task_item(task: dict[str, Any], spec: str) -> str | None:
    """The item a task stands for under ``--map item=SPEC`` (``id`` or ``data.NAME``); None
    when the task does not have it (its rows say why)."""
    try:
        return _task_field(task, spec, "item", Where("", None))
    except InputError:
        return None


def _task_rows(
    name: str, tasks: list[Task], request: Request, notes: list[str]
) -> Iterator[Record]:
    mapping = request.mapping
    ground_truth = request.options.get("ground_truth", "gold").strip().lower() or "gold"
    worker_key = mapping.get("worker", "id")
    from_name = mapping.get("value") or _default_from_name(name, tasks)
    reading = _Reading(request, from_name, worker_key, ground_truth)
    item_spec = mapping.get("item", "")
    if not item_spec:
        all_have_id = all(isinstance(t.get("data"), dict) and "id" in t["data"] for _, t in tasks)
        item_spec = "data.id" if tasks and all_have_id else "id"
    for line, task in tasks:
        where = Where(name, line)
        try:
            annotations = _annotations(task, where)
            fields, text = reading.task_fields(task, item_spec, where)
        except InputError as exc:
            yield BadRecord(line, _raw(task), exc.problems[0])
            continue
        if text is not None:
            yield text
        for annotation in annotations:
            try:
                rows = reading.annotation(task, annotation, fields, where)
            except InputError as exc:
                yield BadRecord(line, _raw(annotation), exc.problems[0])
                continue
            yield from rows
    mixed = [w for w in reading.gold_from if w in reading.judges]
    if mixed and ground_truth == "gold":
        notes.append(
            "warning: gold values come from ground-truth annotations of annotators who also have "
            f"ordinary judgments ({', '.join(mixed)}); --option ground_truth=judgment keeps "
            "those annotations as judgments, ground_truth=both as both"
        )


read = reader("Label Studio", _rows, options=OPTIONS, check=_check)


def _raw(value: Any) -> str:  # noqa: ANN401 - a task or an annotation
    return json.dumps(value, ensure_ascii=False, default=str)


class _Reading:
    """What the rows of one export are read with, and what the reading found out."""

    def __init__(self, request: Request, from_name: str, worker_key: str, ground_truth: str):
        self.kind, self.codes, self.mapping = request.kind, request.codes, request.mapping
        self.from_name, self.worker_key, self.ground_truth = from_name, worker_key, ground_truth
        self.seen: set[str] = set()  # items whose text is given
        self.judges: set[str] = set()  # annotators with ordinary judgments
        self.gold_from: dict[str, None] = {}  # annotators whose ground truth became gold

    def task_fields(
        self, task: dict[str, Any], item_spec: str, where: Where
    ) -> tuple[dict[str, Any], SourceRow | None]:
        """The fields every judgment of the task has (item, or left and right), and the item
        row of its text when it is the first task of the item."""
        fields: dict[str, Any] = {}
        if self.kind == "pairwise":
            fields["left"] = _task_field(task, self.mapping.get("left", "data.left"), "left", where)
            fields["right"] = _task_field(
                task, self.mapping.get("right", "data.right"), "right", where
            )
            return fields, None
        item = fields["item"] = _task_field(task, item_spec, "item", where)
        if "text" not in self.mapping or item in self.seen:
            return fields, None
        text = _task_field(task, self.mapping["text"], "text", where)
        self.seen.add(item)
        return fields, SourceRow(where.line or 0, {"item": item, "text": text}, table="item")

    def annotation(
        self,
        task: dict[str, Any],
        annotation: dict[str, Any],
        fields: dict[str, Any],
        where: Where,
    ) -> list[SourceRow]:
        """The rows of one annotation: a judgment, the item's gold value, both or none."""
        line = where.line or 0
        if _flag(annotation, "was_cancelled", task, where):
            return []
        raw = _answer(task, annotation, self.from_name, where.at(self.from_name))
        value = canonical_value(self.kind, raw, self.codes, where.at(self.from_name))
        marked = _flag(annotation, "ground_truth", task, where)
        rows = []
        if marked and self.kind == "pairwise":
            if self.ground_truth == "gold":
                return []  # a pair has no gold value; the mark is not a judgment either
        elif marked and self.ground_truth != "judgment":
            rows.append(SourceRow(line, {"item": fields["item"], "gold": value}, table="item"))
            if self.ground_truth == "gold":
                author = _author(annotation, self.worker_key)
                if author is not None:
                    self.gold_from.setdefault(author)
                return rows
        worker = _worker(annotation, self.worker_key, where)
        row = {**fields, "worker": worker}
        row["preference" if self.kind == "pairwise" else "value"] = value
        row.update(_times(annotation, where))
        extra: dict[str, Any] = {"task_id": task.get("id")}
        data = task.get("data")
        if isinstance(data, dict) and isinstance(data.get("pair_id"), str):
            extra["pair_id"] = data["pair_id"]  # a task of ``monitor pairs plan``
        rows.append(SourceRow(line, row, table="judgment", extra=extra))
        self.judges.add(worker)
        return rows


def _annotations(task: dict[str, Any], where: Where) -> list[dict[str, Any]]:
    annotations = task.get("annotations") or []
    for annotation in annotations:
        if not isinstance(annotation, dict):
            raise where.at("annotations").error(
                f"an annotation of task {_shown(task.get('id'))} is not a JSON object"
            )
    return annotations


def _flag(annotation: dict[str, Any], key: str, task: dict[str, Any], where: Where) -> bool:
    value = annotation.get(key)
    if value is None or isinstance(value, bool):
        return bool(value)
    raise where.at(key).error(
        f"expected true or false in annotation {_shown(annotation.get('id'))} of task "
        f"{_shown(task.get('id'))}, got {_json_type(value)}"
    )


def _results(annotation: dict[str, Any], label: str, where: Where) -> list[dict[str, Any]]:
    """The annotation's ``result`` list (none when absent); anything else is refused."""
    results = annotation.get("result")
    if results is None:
        return []
    if not isinstance(results, list):
        raise where.at("result").error(
            f"expected a list in {label}, got {_json_type(results)}",
            hint="export from Label Studio with the JSON format",
        )
    for result in results:
        if not isinstance(result, dict):
            raise where.at("result").error(
                f"a result in {label} is {_json_type(result)}, not a JSON object"
            )
    return results


def _label(task: dict[str, Any], annotation: dict[str, Any]) -> str:
    return f"annotation {_shown(annotation.get('id'))} of task {_shown(task.get('id'))}"


def _shown(value: Any) -> str:
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else "?"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _default_from_name(name: str, tasks: list[Task]) -> str:
    """The only control tag (``from_name``) the results of the export name; an annotation of
    the wrong shape is passed over here (it is refused when it is read)."""
    found: dict[str, None] = {}
    for _, task in tasks:
        for annotation in task.get("annotations") or ():
            if not isinstance(annotation, dict) or annotation.get("was_cancelled") is True:
                continue
            results = annotation.get("result")
            if not isinstance(results, list):
                continue
            for result in results:
                if isinstance(result, dict) and "from_name" in result:
                    found.setdefault(str(result["from_name"]))
    if len(found) == 1:
        return next(iter(found))
    if not found:
        raise Where(name, None).error(
            "no annotation results in the export", hint="is anything annotated yet?"
        )
    raise Where(name, None).error(
        "several control tags: " + ", ".join(found),
        hint="choose the from_name with --map value=NAME",
    )


def _task_field(task: dict[str, Any], spec: str, key: str, where: Where) -> str:
    """``id`` (the task id), ``data.NAME`` or ``NAME`` (a field of the task data, dotted)."""
    if spec == "id":
        value = task.get("id", MISSING)
    else:
        value = task.get("data", {})
        for part in spec.removeprefix("data.").split("."):
            value = value.get(part, MISSING) if isinstance(value, dict) else MISSING
    if isinstance(value, dict | list):
        raise where.at(spec).error(
            f"{_json_type(value)} in task {_shown(task.get('id'))}, not a name or a number",
            hint=f"choose a field holding an id with --map {key}=FIELD",
        )
    if value is MISSING or value is None:
        data = task.get("data")
        fields = ", ".join("data." + k for k in data) if isinstance(data, dict) else "none"
        raise where.at(spec).error(
            f"missing in task {task.get('id')}",
            hint=f"task fields: id, {fields}; choose one with --map {key}=FIELD",
        )
    if isinstance(value, float) and (why := unstorable(value)):  # NaN would become 'nan'
        raise where.at(spec).error(*why)
    return value if isinstance(value, str) else str(value)


def _answer(task: dict[str, Any], annotation: dict[str, Any], from_name: str, where: Where) -> Any:
    label = _label(task, annotation)
    results = _results(annotation, label, where)
    mine = [r for r in results if r.get("from_name") == from_name]
    if not mine:
        others = ", ".join(dict.fromkeys(str(r.get("from_name")) for r in results)) or "none"
        raise where.error(
            f"no result in {label}",
            hint=f"from_names in it: {others}; skip empty annotations in Label Studio "
            "or choose the from_name with --map value=NAME",
        )
    if len(mine) > 1:
        raise where.error(f"several results in {label}", hint="one result per annotation is read")
    value = mine[0].get("value")
    for key in VALUE_KEYS:
        if isinstance(value, dict) and key in value:
            if key == "taxonomy":
                return _taxonomy(value[key], label, where)
            return value[key]
    kind = mine[0].get("type", "unknown")
    raise where.error(
        f"cannot read a '{_shown(kind)}' result in {label}",
        hint="supported: Choices, Rating, Number, Taxonomy, Pairwise",
    )


def _taxonomy(paths: Any, label: str, where: Where) -> list[str]:
    """Taxonomy paths (``[["Animals", "Cat"], ["Plants"]]``) as ``Animals/Cat``, ``Plants``."""
    if not isinstance(paths, list):
        raise where.error(f"expected a list of taxonomy paths in {label}, got {_json_type(paths)}")
    out = []
    for path in paths:
        parts = path if isinstance(path, list) else [path]
        if not parts or not all(isinstance(p, str) and p.strip() for p in parts):
            raise where.error(
                f"cannot read the taxonomy path {json.dumps(path)} in {label}",
                hint='expected lists of names like [["Animals", "Cat"]]',
            )
        out.append(PATH_SEPARATOR.join(p.strip() for p in parts))
    return out


def _author(annotation: dict[str, Any], key: str) -> str | None:
    """The annotator of a ground-truth annotation when it can be told (no error otherwise)."""
    try:
        return _worker(annotation, key, Where("", None))
    except InputError:
        return None


def _worker(annotation: dict[str, Any], key: str, where: Where) -> str:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        who = who.get(key)
    elif key == "email":
        who = None
    if not isinstance(who, str | int) or isinstance(who, bool) or str(who).strip() == "":
        raise where.at("completed_by").error(
            f"no annotator {key} in annotation {annotation.get('id')}",
            hint="export with annotator details, or use --map worker=id",
        )
    return str(who).strip()


def _times(annotation: dict[str, Any], where: Where) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if annotation.get("id") is not None:
        if not isinstance(annotation["id"], str | int) or isinstance(annotation["id"], bool):
            raise where.at("id").error(
                f"an annotation id is {_json_type(annotation['id'])}, not a number or a string"
            )
        out["judgment_id"] = str(annotation["id"])
    created = annotation.get("created_at")
    if created:
        moment = utc_time(str(created), where.at("created_at"), "expected ISO 8601")
        out["created_at"] = utc_iso(moment)
    lead = annotation.get("lead_time")
    if lead is not None:
        try:
            out["duration_s"] = seconds(lead)
        except (TypeError, ValueError):
            text = str(lead) if len(str(lead)) <= 60 else str(lead)[:57] + "..."
            raise where.at("lead_time").error(f"cannot read '{text}' as seconds") from None
    return out
