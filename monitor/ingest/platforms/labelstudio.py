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

from monitor.errors import InputError, NotFound, UsageError
from monitor.ingest.platforms.mapping import (
    Kind,
    Rows,
    Where,
    canonical_value,
    check_args,
    json_array_elements,
    pairwise_codes,
    seconds,
    utc_iso,
    utc_time,
)
from monitor.ingest.rows import SourceRow
from monitor.ingest.safe import unstorable

VALUE_KEYS = ("choices", "rating", "number", "selected", "taxonomy")  # selected: Pairwise tag
MISSING = object()
OPTIONS = ("ground_truth",)
GROUND_TRUTH = ("gold", "judgment", "both")
PATH_SEPARATOR = "/"  # between the levels of a Taxonomy path


def read(
    path: Path,
    *,
    kind: Kind,
    mapping: dict[str, str] | None = None,
    options: dict[str, str] | None = None,
) -> Iterator[SourceRow]:
    """Read a Label Studio JSON export as canonical judgment rows and gold/text item rows."""
    mapping, options = check_args("Label Studio", kind, mapping, options, option_names=OPTIONS)
    ground_truth = options.get("ground_truth", "gold").strip().lower() or "gold"
    if ground_truth not in GROUND_TRUTH:
        raise UsageError(
            f"option ground_truth: expected gold, judgment or both, got '{options['ground_truth']}'",
            hint="gold: the item's gold value only; judgment: an ordinary judgment; both",
        )
    worker_key = mapping.get("worker", "id")
    if worker_key not in ("id", "email"):
        raise UsageError(
            f"--map worker={worker_key}: Label Studio names annotators by id or email",
            hint="use --map worker=id or --map worker=email",
        )
    codes = pairwise_codes(mapping.get("pairwise"))
    path = Path(path)
    return Rows(lambda notes: _rows(path, kind, mapping, worker_key, codes, ground_truth, notes))


def _load(path: Path) -> list[tuple[int, Any]]:
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise NotFound(f"no such file: {name}") from None
    except UnicodeDecodeError:
        raise Where(name, None).error("not UTF-8 text", hint="export the file as UTF-8") from None
    tasks = json_array_elements(name, text)
    for line, task in tasks:
        if not isinstance(task, dict) or not isinstance(task.get("annotations", []), list):
            raise Where(name, line).error(
                "expected a task object with an 'annotations' list",
                hint="export from Label Studio with the JSON format (not JSON_MIN)",
            )
    return tasks


def _rows(
    path: Path,
    kind: str,
    mapping: dict[str, str],
    worker_key: str,
    codes: dict[str, str],
    ground_truth: str,
    notes: list[str],
) -> Iterator[SourceRow]:
    name = str(path)
    tasks = _load(path)
    from_name = mapping.get("value") or _default_from_name(name, tasks)
    left, right = mapping.get("left", "data.left"), mapping.get("right", "data.right")
    item_spec = mapping.get("item", "")
    if not item_spec:
        all_have_id = all(isinstance(t.get("data"), dict) and "id" in t["data"] for _, t in tasks)
        item_spec = "data.id" if tasks and all_have_id else "id"
    seen: set[str] = set()
    judges: set[str] = set()  # annotators with ordinary judgments
    gold_from: dict[str, None] = {}  # annotators whose ground truth became gold
    for line, task in tasks:
        where = Where(name, line)
        fields: dict[str, Any] = {}
        if kind == "pairwise":
            fields["left"] = _task_field(task, left, "left", where)
            fields["right"] = _task_field(task, right, "right", where)
        else:
            item = fields["item"] = _task_field(task, item_spec, "item", where)
            if "text" in mapping and item not in seen:
                seen.add(item)
                text = _task_field(task, mapping["text"], "text", where)
                yield SourceRow(line, {"item": item, "text": text}, table="item")
        for annotation in _annotations(task, where):
            if _flag(annotation, "was_cancelled", task, where):
                continue
            raw = _answer(task, annotation, from_name, where.at(from_name))
            value = canonical_value(kind, raw, codes, where.at(from_name))
            marked = _flag(annotation, "ground_truth", task, where)
            if marked and kind == "pairwise":
                if ground_truth == "gold":
                    continue  # a pair has no gold value; the mark is not a judgment either
            elif marked and ground_truth != "judgment":
                yield SourceRow(line, {"item": fields["item"], "gold": value}, table="item")
                if ground_truth == "gold":
                    author = _author(annotation, worker_key)
                    if author is not None:
                        gold_from.setdefault(author)
                    continue
            worker = _worker(annotation, worker_key, where)
            judges.add(worker)
            row = dict(fields)
            row["worker"] = worker
            row["preference" if kind == "pairwise" else "value"] = value
            row.update(_times(annotation, where))
            extra = {"task_id": task.get("id")}
            yield SourceRow(line, row, table="judgment", extra=extra)
    mixed = [w for w in gold_from if w in judges]
    if mixed and ground_truth == "gold":
        notes.append(
            "warning: gold values come from ground-truth annotations of annotators who also have "
            f"ordinary judgments ({', '.join(mixed)}); --option ground_truth=judgment keeps "
            "those annotations as judgments, ground_truth=both as both"
        )


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


def _default_from_name(name: str, tasks: list[tuple[int, Any]]) -> str:
    found: dict[str, None] = {}
    for line, task in tasks:
        where = Where(name, line)
        for annotation in _annotations(task, where):
            if not _flag(annotation, "was_cancelled", task, where):
                for result in _results(annotation, _label(task, annotation), where):
                    if "from_name" in result:
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
