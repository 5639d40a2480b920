"""The performance figures of README.md and docs/*.md are quotes from benchmarks/RESULTS.md.

A unit of prose (a paragraph, a list item or a table row; fenced code blocks and inline code left
out, so the sample outputs of commands are not claims) that states a ratio (``0.09x`` or with the
multiplication sign, ``3 x faster``; not a size such as ``100 x 100``) or a time (``28.503 ms``,
``17 µs``) must link a section of benchmarks/RESULTS.md (``benchmarks/RESULTS.md#anchor``, a
heading's GitHub anchor), and each of its figures must appear in a section it links: a ratio as
``Nx`` (either sign), a time as the number ``N`` (a table cell or the text). So a claim cannot
drift from the measurements, and a figure that no measurement backs fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

TIMES = "\u00d7"
"""The multiplication sign, as the pages write ratios (``x`` reads alike)."""
RATIO = re.compile(rf"(?<![\w.])(\d+(?:\.\d+)?)\s?[{TIMES}x](?!\w)(?!\s*\d)")
"""``0.09x``, ``3 x faster``; not ``100 x 100`` (a size) nor ``u8xs8``."""
TIME = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?(?:ms|µs|us|ns)\b")
LINK = re.compile(r"\]\(([^)\s]*benchmarks/RESULTS\.md(?:#[^)\s]*)?)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^```")


def prose_lines(text: str) -> list[str | None]:
    """The page's lines, with fenced code blocks as None (a break between units)."""
    lines: list[str | None] = []
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            lines.append(None)
        else:
            lines.append(None if fenced else line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading (before duplicates are numbered)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def sections(text: str) -> dict[str, str]:
    """Each heading's anchor with its section: the text up to the next heading of its level or
    above (subsections included)."""
    lines = text.splitlines()
    prose = prose_lines(text)
    headings = []
    seen: dict[str, int] = {}
    for i, line in enumerate(prose):
        match = HEADING.match(line) if line is not None else None
        if match is None:
            continue
        anchor = slug(match.group(2))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        headings.append((i, len(match.group(1)), anchor if count == 0 else f"{anchor}-{count}"))
    found = {}
    for k, (start, level, anchor) in enumerate(headings):
        end = next((i for i, lv, _ in headings[k + 1 :] if lv <= level), len(lines))
        found[anchor] = "\n".join(lines[start:end])
    return found


@dataclass(frozen=True)
class Unit:
    page: str
    line: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def units(path: Path) -> list[Unit]:
    """The paragraphs, list items and table rows of a page's prose, inline code removed."""
    page = path.relative_to(ROOT).as_posix()
    found: list[Unit] = []
    current: list[str] = []
    first = 0

    def close() -> None:
        if current:
            found.append(Unit(page, first + 1, re.sub(r"`[^`]*`", "", " ".join(current))))
            current.clear()

    for i, line in enumerate(prose_lines(path.read_text(encoding="utf-8"))):
        stripped = "" if line is None else line.strip()
        starts = re.match(r"([-*]|\d+\.)\s|\||#", stripped) is not None
        if not stripped or starts:
            close()
        if stripped:
            if not current:
                first = i
            current.append(stripped)
            if stripped.startswith(("|", "#")):
                close()
    close()
    return found


def figures(text: str) -> list[tuple[str, str]]:
    """The ratios and times ``text`` states, as (kind, number)."""
    return [("ratio", m.group(1)) for m in RATIO.finditer(text)] + [
        ("time", m.group(1)) for m in TIME.finditer(text)
    ]


def backed(kind: str, number: str, section: str) -> bool:
    """Whether ``section`` holds the figure: a ratio with its sign, a time's number."""
    digits = re.escape(number)
    if kind == "ratio":
        return re.search(rf"(?<![\w.]){digits}\s?[{TIMES}x](?!\w)", section) is not None
    return re.search(rf"(?<![\w.,]){digits}(?![\d])", section) is not None


RESULT_SECTIONS = sections(RESULTS.read_text(encoding="utf-8"))
CLAIMS = [unit for path in PAGES for unit in units(path) if figures(unit.text)]


@pytest.mark.parametrize("unit", CLAIMS, ids=[unit.where for unit in CLAIMS])
def test_each_figure_is_quoted_from_a_linked_section_of_the_results(unit: Unit) -> None:
    anchors = [link.partition("#")[2] for link in LINK.findall(unit.text)]
    assert anchors, (
        f"{unit.where} states {figures(unit.text)} without linking a section of "
        f"benchmarks/RESULTS.md: {unit.text}"
    )
    unknown = [anchor for anchor in anchors if anchor not in RESULT_SECTIONS]
    assert not unknown, f"{unit.where} links no heading of benchmarks/RESULTS.md: {unknown}"
    linked = "\n".join(RESULT_SECTIONS[anchor] for anchor in anchors)
    missing = [
        f"{n}{TIMES}" if kind == "ratio" else f"{n} (a time)"
        for kind, n in figures(unit.text)
        if not backed(kind, n, linked)
    ]
    assert not missing, f"{unit.where}: {missing} appear in no section it links ({anchors})"


def test_the_readme_claims_are_found() -> None:
    """The scan sees the README's performance figures (a scan that missed them would pass)."""
    readme = [unit for unit in CLAIMS if unit.page == "README.md"]
    assert sum(len(figures(unit.text)) for unit in readme) >= 20
    assert {kind for unit in readme for kind, _ in figures(unit.text)} == {"ratio", "time"}


def test_the_scan_tells_claims_from_sizes() -> None:
    assert figures(f"0.09{TIMES} on while, 7.55x on the op, 3 x faster; 28.503 ms and 17 µs") == [
        ("ratio", "0.09"),
        ("ratio", "7.55"),
        ("ratio", "3"),
        ("time", "28.503"),
        ("time", "17"),
    ]
    assert figures(f"a 100 {TIMES} 100 loop, a 3 x 3 map, the u8{TIMES}s8 kernel, x23, 2 s") == []
    assert slug("2026-11-26: the jax backend (issue #12) — the current state") == (
        "2026-11-26-the-jax-backend-issue-12--the-current-state"
    )
    section = f"| while | 0.11{TIMES} (0.08-0.11) |\n│ tl:compiled │ 28.503 │ 0.11x │"
    assert backed("ratio", "0.11", section) and backed("time", "28.503", section)
    assert not backed("ratio", "0.1", section) and not backed("time", "28.5", section)
