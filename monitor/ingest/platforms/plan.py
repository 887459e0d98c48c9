"""Which columns of a tabular export hold what: the plan the engine follows for every record.

From the header, the :class:`~monitor.ingest.platforms.export.Export` declaration and the
user's mapping: the worker column, where the answer is (one column, a group of checkbox
columns, or a key of a JSON answers column), its gold column, the item or the two items of a
pair, the item text; once per question number when the mapping holds ``{n}``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from monitor.ingest.platforms.mapping import Where, json_value, on_shaped, truthy_cell
from monitor.ingest.platforms.table import missing_column, numbered, resolve_column

__all__ = ["Answer", "Columns", "Plan", "plan_slots"]


class Columns(Protocol):
    """What a plan reads of an :class:`~monitor.ingest.platforms.export.Export` declaration:
    its columns, and the words of its messages."""

    @property
    def worker(self) -> str: ...
    @property
    def required(self) -> tuple[str, ...]: ...
    @property
    def expected(self) -> str: ...
    @property
    def missing_hints(self) -> Mapping[str, str]: ...
    @property
    def inputs(self) -> str: ...
    @property
    def answers(self) -> str: ...
    @property
    def items(self) -> tuple[str, ...]: ...
    @property
    def task_answers(self) -> str: ...
    @property
    def answer_word(self) -> str: ...
    @property
    def no_answer(self) -> tuple[str, str]: ...

    def input_columns(self, header: list[str]) -> list[str]: ...
    def answer_columns(self, header: list[str]) -> list[str]: ...
    def gold_of(self, column: str) -> str | None: ...


@dataclass
class Answer:
    """Where the answer lives: ``column`` (one column), ``columns`` (checkbox columns whose
    names after ``name`` are the labels), ``json`` (the key ``name`` of the JSON answers
    column), ``json_group`` (its keys starting with ``name``) or ``json_auto`` (decided by the
    first record). ``gold`` are the gold columns of the same shape (for ``column``/``columns``),
    ``gold_name`` the start of a gold group's names."""

    how: str
    name: str = ""
    columns: tuple[str, ...] = ()
    gold: tuple[str, ...] = ()
    gold_name: str = ""


@dataclass
class Plan:
    """The columns one judgment of a record is read from."""

    worker: str
    answer: Answer
    item: str = ""
    left: str = ""
    right: str = ""
    text: str = ""

    def ids(self) -> tuple[str, ...]:
        """The columns naming what was judged (the item, or the two items of a pair)."""
        return tuple(c for c in (self.item, self.left, self.right) if c)


def plan_slots(
    export: Columns, name: str, header: list[str], kind: str, mapping: dict[str, str]
) -> list[tuple[str | None, Plan]]:
    """One plan per question number ``n`` when a mapping value holds ``{n}``, else one plan
    (number None)."""
    return [
        (n, _plan(export, name, header, kind, m)) for n, m in _slots(export, name, header, mapping)
    ]


def _slots(
    export: Columns, name: str, header: list[str], mapping: dict[str, str]
) -> list[tuple[str | None, dict[str, str]]]:
    """The mapping once per question number ``n`` when a value holds ``{n}``, else once.

    Each ``{n}`` spec matches the header columns (written in full or without the inputs' or
    the answers' prefix) it stands for; every such spec must find the same numbers.
    """
    templated = {k: v for k, v in mapping.items() if "{n}" in v}
    if not templated:
        return [(None, mapping)]
    found: dict[str, dict[str, str]] = {}
    for key, spec in templated.items():
        numbers: dict[str, str] = {}
        for prefix in dict.fromkeys(("", export.inputs, export.answers)):
            head, _, tail = (prefix + spec).partition("{n}")
            star = tail.endswith("*")
            tail = tail.removesuffix("*")
            pattern = re.compile(
                re.escape(head) + r"(\d+)" + re.escape(tail) + (".*" if star else "")
            )
            seen: dict[str, str] = {}
            for column in header:
                match = pattern.fullmatch(column)
                if match:
                    n = str(int(match.group(1)))
                    if not star and seen.setdefault(n, column) != column:
                        raise Where(name, 1, column).error(
                            f"'{seen[n]}' and '{column}' are both number {n} of {spec}",
                            hint="rename one of the columns",
                        )
                    numbers.setdefault(n, match.group(1))
            if numbers:
                break
        if not numbers:
            raise Where(name, 1, spec).error(
                "no column in the header matches",
                hint=f"{{n}} stands for a number: e.g. --map {key}={export.inputs}item{{n}}",
            )
        found[key] = numbers
    keys = list(found)
    first = set(found[keys[0]])
    for key in keys[1:]:
        if set(found[key]) != first:
            a, b = templated[keys[0]], templated[key]
            only_a = sorted(first - set(found[key]), key=int)
            only_b = sorted(set(found[key]) - first, key=int)
            raise Where(name, 1).error(
                f"'{a}' and '{b}' do not have the same numbers",
                hint=f"n only in {a}: {', '.join(only_a) or 'none'}; "
                f"n only in {b}: {', '.join(only_b) or 'none'}",
            )
    return [
        (n, {k: v.replace("{n}", found[k][n]) if k in found else v for k, v in mapping.items()})
        for n in sorted(first, key=int)
    ]


def _plan(
    export: Columns, name: str, header: list[str], kind: str, mapping: dict[str, str]
) -> Plan:
    inputs = export.input_columns(header)
    for required in export.required:
        if required not in header and not (required == export.worker and "worker" in mapping):
            hint = export.missing_hints.get(required, export.expected)
            raise Where(name, 1, required).error("not in the header", hint=hint)
    worker = mapping.get("worker", export.worker)
    if worker not in header:
        raise missing_column(name, "worker", worker, [export.worker, *inputs])
    plan = Plan(worker, _answer(export, name, header, kind, mapping.get("value")))

    def column(key: str, spec: str, candidates: list[str]) -> str:
        found = resolve_column(spec, header, (export.inputs,))
        if found is None:
            raise missing_column(name, key, spec, candidates)
        return found

    if kind == "pairwise":
        plan.left = column("left", mapping.get("left", export.inputs + "left"), inputs)
        plan.right = column("right", mapping.get("right", export.inputs + "right"), inputs)
        return plan
    fallback = export.items[-1]
    if "item" in mapping:
        plan.item = column("item", mapping["item"], [*inputs, fallback])
    else:
        plan.item = next((c for c in export.items if c in header), "")
        if not plan.item:
            raise missing_column(name, "item", fallback, inputs)
    if "text" in mapping:
        plan.text = column("text", mapping["text"], inputs)
    return plan


def _answer(export: Columns, name: str, header: list[str], kind: str, spec: str | None) -> Answer:
    answers = export.answer_columns(header)
    json_answers = bool(export.task_answers) and export.task_answers in header
    golden = kind != "pairwise"
    if spec is None:
        if len(answers) == 1:
            return _with_gold(export, header, Answer("column", answers[0]), golden)
        if len(answers) > 1:
            raise _several(export, name, header, answers)
        if json_answers:
            return Answer("json_auto")
        raise Where(name, 1).error(*export.no_answer)
    if spec.endswith("*"):
        prefix = spec[:-1]
        for full in dict.fromkeys((prefix, export.answers + prefix)):
            group = tuple(c for c in header if c.startswith(full) and c != export.task_answers)
            if group and full:
                return _with_gold(export, header, Answer("columns", full, group), golden)
        if json_answers:
            return Answer("json_group", prefix.removeprefix(export.answers))
    else:
        found = resolve_column(spec, header, (export.answers,))
        if found is not None:
            return _with_gold(export, header, Answer("column", found), golden)
        if json_answers:
            return Answer("json", spec.removeprefix(export.answers))
    raise missing_column(name, "value", spec, answers or export.input_columns(header))


def _with_gold(export: Columns, header: list[str], answer: Answer, golden: bool) -> Answer:
    """The answer with its gold columns, when the export has them for every answer column."""
    columns = answer.columns if answer.how == "columns" else (answer.name,)
    gold = tuple(export.gold_of(c) or "" for c in columns)
    if golden and gold and all(g and g in header for g in gold):
        answer.gold = gold
        if answer.how == "columns":
            answer.gold_name = export.gold_of(answer.name) or ""
    return answer


def _several(export: Columns, name: str, header: list[str], answers: list[str]) -> Exception:
    """Several answer columns and no ``--map value``: the columns, and when they are numbered
    questions, the mapping that reads one judgment per question."""
    families = numbered(answers)
    grouped = {c for f in families for c in f.values()}
    shown = [f.shown() for f in families] + [c for c in answers if c not in grouped]
    hint = "choose one with --map value=COLUMN"
    if families:
        value = families[0]
        items = [f for f in numbered(export.input_columns(header)) if set(f) == set(value)]
        item = _item_family(items)
        words = f"--map value={value.template}"
        if item is not None:
            words = f"--map item={item.template} {words}"
        hint = f"numbered questions: read one judgment per question with {words}"
        if len(families) > 1:
            hint += " (or --map value=" + families[1].template + ")"
    word = export.answer_word
    return Where(name, 1).error(f"several {word} columns: " + ", ".join(shown), hint=hint)


def _item_family(families: list[Any]) -> Any:  # noqa: ANN401 - a Numbered or None
    """The numbered inputs that most look like an item's id (``id``, then ``item`` in the
    name), else the first."""
    for word in ("id", "item"):
        for family in families:
            if word in family.template.lower():
                return family
    return families[0] if families else None


# --- a column of JSON answers (MTurk's Answer.taskAnswers) ---------------------------------


def json_answer(
    export: Columns, answer: Answer, rec: Mapping[str, str], where: Where
) -> tuple[Any, str]:
    """The raw answer ``answer`` names in the JSON answers column, and that column's name."""
    column = export.task_answers
    where = where.at(column)
    found = task_answers(rec[column], where)
    if answer.how == "json":
        if answer.name not in found:
            raise where.error(
                f"no answer '{answer.name}'",
                hint="answers here: " + (", ".join(found) or "none"),
            )
        return found[answer.name], column
    group = {k[len(answer.name) :]: v for k, v in found.items() if k.startswith(answer.name)}
    if not group:
        raise where.error(
            f"no answer '{answer.name}*'", hint="answers here: " + (", ".join(found) or "none")
        )
    return group, column


def settle_json(export: Columns, answer: Answer, rec: Mapping[str, str], where: Where) -> None:
    """Decide from this record which answers of the JSON column an unmapped plan reads: the
    only key that is not a checkbox, else all of them when all are. Several plain keys are a
    problem of the mapping (raised); a record whose JSON cannot be read decides nothing."""
    try:
        found = task_answers(rec[export.task_answers], where.at(export.task_answers))
    except Exception:  # noqa: BLE001 - the record's own problem, reported when it is read
        return
    plain = [k for k, v in found.items() if not on_shaped(v)]
    if len(plain) == 1:
        answer.how, answer.name = "json", plain[0]
    elif not plain and found:
        answer.how, answer.name = "json_group", ""
    elif found:
        raise where.at(export.task_answers).error(
            "several answers: " + ", ".join(found), hint="choose one with --map value=NAME"
        )


def task_answers(text: str, where: Where) -> dict[str, Any]:
    """The one object of a JSON answers cell (a JSON list holding one object)."""
    parsed = json_value(text, where) if text.strip() else []
    if isinstance(parsed, list) and len(parsed) == 1:
        parsed = parsed[0]
    if not isinstance(parsed, dict):
        raise where.error(
            "expected a JSON list holding one object", hint='like [{"relevance": {"3": true}}]'
        )
    return parsed


def checked(answer_name: str, columns: tuple[str, ...], rec: Mapping[str, str]) -> list[str]:
    """The labels of the checked boxes of a group of checkbox columns (the names after
    ``answer_name``)."""
    return [c[len(answer_name) :] for c in columns if truthy_cell(rec[c])]
