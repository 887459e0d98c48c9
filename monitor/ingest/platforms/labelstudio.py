"""Label Studio JSON export (a list of tasks with their annotations) to canonical rows.

One annotation is one judgment: ``completed_by`` is the worker, the annotation ``id`` the
judgment id, ``created_at`` the time and ``lead_time`` the duration. The answer is the result
whose ``from_name`` is the mapped ``value`` (``choices``, ``rating``, ``number``, or the Pairwise
tag's ``selected``). Cancelled (skipped) annotations are dropped; ``ground_truth`` annotations
become the item's gold value instead of a judgment. The export is one JSON document, so it is
loaded whole. See ``docs/platforms/labelstudio.md``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from monitor.errors import NotFound, UsageError
from monitor.ingest.platforms.mapping import (
    Kind,
    Where,
    canonical_value,
    check_args,
    json_array_elements,
    pairwise_codes,
    parse_iso,
    seconds,
    utc_iso,
)
from monitor.ingest.rows import SourceRow

VALUE_KEYS = ("choices", "rating", "number", "selected")  # selected: the Pairwise tag
MISSING = object()


def read(
    path: Path,
    *,
    kind: Kind,
    mapping: dict[str, str] | None = None,
    options: dict[str, str] | None = None,
) -> Iterator[SourceRow]:
    """Read a Label Studio JSON export as canonical judgment rows and gold/text item rows."""
    mapping, _ = check_args("Label Studio", kind, mapping, options)
    worker_key = mapping.get("worker", "id")
    if worker_key not in ("id", "email"):
        raise UsageError(
            f"--map worker={worker_key}: Label Studio names annotators by id or email",
            hint="use --map worker=id or --map worker=email",
        )
    codes = pairwise_codes(mapping.get("pairwise"))
    return _rows(Path(path), kind, mapping, worker_key, codes)


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
    path: Path, kind: str, mapping: dict[str, str], worker_key: str, codes: dict[str, str]
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
        for annotation in task.get("annotations", []):
            if not isinstance(annotation, dict) or annotation.get("was_cancelled"):
                continue
            raw = _answer(task, annotation, from_name, where.at(from_name))
            value = canonical_value(kind, raw, codes, where.at(from_name))
            if annotation.get("ground_truth"):
                if kind != "pairwise":
                    yield SourceRow(line, {"item": fields["item"], "gold": value}, table="item")
                continue
            row = dict(fields)
            row["worker"] = _worker(annotation, worker_key, where)
            row["preference" if kind == "pairwise" else "value"] = value
            row.update(_times(annotation, where))
            extra = {"task_id": task.get("id")}
            yield SourceRow(line, row, table="judgment", extra=extra)


def _default_from_name(name: str, tasks: list[tuple[int, Any]]) -> str:
    found: dict[str, None] = {}
    for _, task in tasks:
        for annotation in task.get("annotations", []):
            if isinstance(annotation, dict) and not annotation.get("was_cancelled"):
                for result in annotation.get("result") or []:
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
    if value is MISSING or value is None:
        data = task.get("data")
        fields = ", ".join("data." + k for k in data) if isinstance(data, dict) else "none"
        raise where.at(spec).error(
            f"missing in task {task.get('id')}",
            hint=f"task fields: id, {fields}; choose one with --map {key}=FIELD",
        )
    return value if isinstance(value, str) else str(value)


def _answer(task: dict[str, Any], annotation: dict[str, Any], from_name: str, where: Where) -> Any:
    results = [r for r in annotation.get("result") or [] if isinstance(r, dict)]
    mine = [r for r in results if r.get("from_name") == from_name]
    label = f"annotation {annotation.get('id')} of task {task.get('id')}"
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
            return value[key]
    kind = mine[0].get("type", "unknown")
    raise where.error(
        f"cannot read a '{kind}' result in {label}",
        hint="supported: Choices, Rating, Number, Pairwise",
    )


def _worker(annotation: dict[str, Any], key: str, where: Where) -> str:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        who = who.get(key)
    elif key == "email":
        who = None
    if who is None or isinstance(who, bool) or str(who).strip() == "":
        raise where.at("completed_by").error(
            f"no annotator {key} in annotation {annotation.get('id')}",
            hint="export with annotator details, or use --map worker=id",
        )
    return str(who).strip()


def _times(annotation: dict[str, Any], where: Where) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if annotation.get("id") is not None:
        out["judgment_id"] = str(annotation["id"])
    created = annotation.get("created_at")
    if created:
        try:
            out["created_at"] = utc_iso(parse_iso(str(created)))
        except ValueError:
            raise where.at("created_at").error(
                f"cannot read '{created}' as a time", hint="expected ISO 8601"
            ) from None
    lead = annotation.get("lead_time")
    if lead is not None:
        try:
            out["duration_s"] = seconds(lead)
        except (TypeError, ValueError):
            raise where.at("lead_time").error(f"cannot read '{lead}' as seconds") from None
    return out
