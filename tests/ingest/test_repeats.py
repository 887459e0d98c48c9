"""Rows of one file that give one judgment id to different judgments (monitor.ingest.repeats):
found in one chunk and across chunks, exactly the rows an online reading can name."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.ingest.repeats import Repeats, _Run, clash_words


def record(line: int, external: str | None, value: str, worker: str = "w") -> tuple[Any, ...]:
    """A label judgment record (the validator's tuple) with its line."""
    key = f"id:{external}" if external is not None else f"sha256:{worker}/{value}/{line}"
    return (worker, "i", None, value, key, external, None, None, None, None, line)


def test_a_repeated_id_with_another_answer_in_one_chunk() -> None:
    repeats = Repeats(pairwise=False)
    chunk = [record(2, "a", "cat"), record(3, "b", "cat"), record(4, "a", "dog"),
             record(5, "b", "cat"), record(6, None, "x"), record(7, None, "x")]  # fmt: skip
    [clash] = repeats.clashes(chunk)[0]
    assert (clash.lines, clash.indices, clash.earlier) == ((2, 4), (0, 2), None)


def test_across_chunks_and_a_third_row() -> None:
    repeats = Repeats(pairwise=False)
    assert repeats.clashes([record(2, "a", "cat"), record(3, "b", "cat")])[0] == []
    # line 9 repeats 'b' as it was (a duplicate); line 10 gives 'a' another answer
    [clash] = repeats.clashes([record(9, "b", "cat"), record(10, "a", "dog")])[0]
    assert (clash.lines, clash.indices, clash.earlier) == ((2, 10), (1,), 2)
    # a third row of 'a', even with the first answer, is set aside with the others
    [again] = repeats.clashes([record(11, "a", "cat")])[0]
    assert (again.lines, again.indices, again.earlier) == ((2, 10, 11), (0,), None)


def test_another_worker_is_another_judgment() -> None:
    repeats = Repeats(pairwise=True)
    pref = ("w1", "x", "y", "left", "id:1", "1", None, None, None, 2)
    assert repeats.clashes([pref, (*pref[:-1], 3)])[0] == []  # the same judgment twice
    [clash] = repeats.clashes([("w2", *pref[1:-1], 4)])[0]
    assert clash.lines == (2, 4)


def test_runs_find_ids_whose_first_halves_are_equal() -> None:
    import numpy as np

    hi = np.array([5, 5, 5, 9], dtype=np.uint64)
    lo = np.array([1, 3, 7, 0], dtype=np.uint64)
    run = _Run(hi, lo, np.zeros(4, dtype=np.int64), np.arange(4))
    found = run.find(np.array([5, 5, 9, 4, 10], dtype=np.uint64),
                     np.array([7, 2, 0, 1, 0], dtype=np.uint64))  # fmt: skip
    assert found.tolist() == [2, -1, 3, -1, -1]


def test_clash_words_name_the_other_lines() -> None:
    assert clash_words("A1", [9]) == (
        "the judgment id 'A1' is also on line 9, and these rows do not give the same judgment"
        " (worker, item, answer)",
        "one id names one judgment: which one is meant? Correct the file; with --skip-invalid"
        " all of these rows are set aside",
    )
    assert clash_words("A1", [2, 9, 9, 15])[0].startswith(
        "the judgment id 'A1' is also on lines 2, 9 and 15,"
    )


def _oracle(
    rows: list[tuple[str, str]], sizes: list[int]
) -> list[tuple[int, tuple[int, ...], int | None]]:
    """What an online reading chunk by chunk can set aside: per chunk and id, the rows of this
    chunk with that id once the file has given it two judgments (its first row included, when
    it came in an earlier chunk, as 'earlier')."""
    first: dict[str, tuple[str, int]] = {}  # id -> (judgment, line)
    aside: set[str] = set()
    out = []
    start = 0
    for size in sizes:
        chunk = list(enumerate(rows[start : start + size], start))
        start += size
        by_id: dict[str, list[int]] = {}
        for line, (ident, _) in chunk:
            by_id.setdefault(ident, []).append(line)
        earlier = dict(first)
        for ident, lines in by_id.items():
            judged = {rows[n][1] for n in lines}
            reference = earlier.get(ident)
            if ident in aside:
                out.append((lines[0], tuple(lines), None))
            elif len(judged | ({reference[0]} if reference else set())) > 1:
                aside.add(ident)
                out.append((lines[0], tuple(lines), reference[1] if reference else None))
            elif reference is None:
                first[ident] = (rows[lines[0]][1], lines[0])
    return sorted(out)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(st.sampled_from("abcde"), st.sampled_from("xy")), max_size=40),
    cuts=st.lists(st.integers(1, 7), min_size=1, max_size=12),
    max_run=st.sampled_from([1, 3, 1 << 21]),
)
def test_online_clashes_match_the_oracle(
    rows: list[tuple[str, str]], cuts: list[int], max_run: int
) -> None:
    """Whatever the chunks and however the ids of earlier chunks are kept (runs merged or
    kept apart)."""
    sizes = []
    total = 0
    while total < len(rows):
        size = cuts[len(sizes) % len(cuts)]
        sizes.append(size)
        total += size
    repeats = Repeats(pairwise=False, max_run=max_run)
    got = []
    start = 0
    for size in sizes:
        chunk = [record(n, ident, value) for n, (ident, value) in enumerate(rows, 0)]
        chunk = chunk[start : start + size]
        for clash in repeats.clashes(chunk)[0]:
            lines = tuple(start + i for i in clash.indices)
            got.append((lines[0], lines, clash.earlier))
        start += size
    assert sorted(got) == _oracle(rows, sizes)
