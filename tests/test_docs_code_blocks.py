"""Every code block of README.md and docs/*.md runs as written and prints what the page shows, one
case per block (page:line).

- ```python blocks of a page run in order in one namespace (a case first runs the page's earlier
  blocks if they have not run yet), so a page's later blocks may use what its earlier ones made.
  A ``print(...)`` line that ends in a comment shows its output there, e.g.
  ``print(out["hs"].shape)  # (6, 8)``: what the call prints (every call, if it runs more than
  once) must read as the comment, runs of whitespace read as one space, and ``...`` in the comment
  stands for any text (``# Loop '/lstm/LSTM': still running ...``). So such a comment is the
  literal output, never a description of it.
- ```sh and ```console blocks hold commands: every line of a ```sh block, and in a ```console
  block the lines that start with ``$ ``; a line ending in ``\\`` continues on the next; ``&&``
  chains commands. Commands of tensorloop (``tensorloop``, ``.venv/bin/tensorloop``,
  ``python -m tensorloop``) run through click's runner and must exit 0, or with N where the line
  ends in ``# exit status N``. The set-up commands in ``SET_UP`` cannot run inside the test suite
  and are left out; any other command fails the case.
- In a ```console block, the lines after a command, up to the next ``$ `` line or the end of the
  block, are what it prints (stdout and stderr together): no lines means it prints nothing, and a
  line that is only ``...`` stands for any number of lines left out. The comparison
  (``normalise``) keeps it honest but lets timings vary: a number with a unit of time, rate or
  memory (``0.12 ms``, ``49,975 it/s``, ``65.9 MiB``) may differ, unit too (``303 ms`` may
  read ``1.26 s``), and so may
  the cells of a table's timing columns (a header naming ``ms``, ``runs``, ``/s``, ``MiB``,
  ``KiB``, or a ratio ``/ runtime``) and the ``diff`` cells of onnxruntime's and OpenVINO's rows
  (their rounding depends on the CPU: their ``ok`` must match). Everything else must match:
  values, dtypes, shapes, names, counts, statuses. rich's tables print at their natural width
  when the output is not a terminal (``cli.console``), so a column's width follows its widest
  cell: runs of spaces and of box-drawing rules read as one, and a changed timing may widen a
  column without failing the case.
- Blocks in any other language, or none (diagrams, pseudo-code, IR text), are not run.
- Each page runs in its own temporary folder that links the repository's ``examples/`` and
  ``tests/data/``: relative paths resolve as from the repository root, and the files the blocks
  write stay in the temporary folder.
- A block that imports an optional runtime (``OPTIONAL``) is skipped where it is not installed;
  ``tensorloop draw`` to a picture is skipped where Graphviz's ``dot`` is missing, and so is a
  command whose output shows a runtime (``OPTIONAL``) that is not installed.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import io
import re
import shlex
import shutil
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import tensorloop as tl
from tensorloop.cli import main

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED = ("examples", "tests/data")
"""Repository folders each page's temporary folder links, at the same relative paths."""

SET_UP = (
    re.compile(r"python3? -m venv\b"),
    re.compile(r"(\S*/)?(pip3?|python3? -m pip) install\b"),
    re.compile(r"bash \.ci/run\b"),
)
"""Commands that build the environment or run the whole suite: shown to readers, not run here."""

TENSORLOOP = re.compile(r"^(\S*/)?(tensorloop|python3? -m tensorloop)\s")
OPTIONAL = ("jax", "onnxruntime", "openvino")
EXIT_STATUS = re.compile(r"#\s*exit status (\d+)\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")
LEFT_OUT = "..."
"""A console output line that stands for any number of lines, and in a print line's comment for
any text."""

UNIT = r"(?:ms|µs|us|ns|s|it/s|runs/s|B|KiB|MiB|GiB)"
TIMING = re.compile(rf"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?\s?{UNIT}(?![\w/])")
"""A number with a unit of time, rate or memory (``303 ms``, ``1.26 s``): a timing, which may
differ, unit included."""
TIMING_HEADER = re.compile(r"\bms\b|\bruns\b|/s\b|\b[KMG]iB\b|^/ ")
"""A table column of timings (or of ratios of timings, or memory): its cells may differ."""
DIFF_HEADER = re.compile(r"\bdiff\b")
ANCHOR_RUNTIMES = ("onnxruntime", "openvino", "tensorloop-jax")
"""Runtimes whose differences from the reference depend on the CPU they run on (XLA's code
for a loop is made for the CPU's vector instructions)."""
VARIES = "<varies>"
BOX_RULE = re.compile(r"([━─═])\1+")
PRINT_COMMENT = re.compile(r"#\s?(.*?)\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    """The line of the opening fence, from 1."""
    language: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def read_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown page that run: python, sh and console."""
    blocks, lines = [], path.read_text(encoding="utf-8").splitlines()
    page, i = path.relative_to(ROOT).as_posix(), 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        if match.group(1) in ("python", "sh", "console"):
            blocks.append(Block(page, i + 1, match.group(1), "\n".join(lines[i + 1 : end])))
        i = end + 1
    return blocks


BLOCKS = [block for page in PAGES for block in read_blocks(page)]


@dataclass(frozen=True)
class Command:
    text: str
    status: int
    """The exit status it must end with."""
    shows: list[str] | None
    """The output the page shows (console blocks), or None (sh blocks: not shown)."""


def commands(block: Block) -> Iterator[Command]:
    """Each command of a shell block, with its exit status and the output the page shows."""
    joined: list[tuple[str, list[str] | None]] = []
    continued = False
    for line in block.text.splitlines():
        if continued:
            joined[-1] = (joined[-1][0][:-1] + " " + line.strip(), joined[-1][1])
        elif block.language == "sh":
            joined.append((line.strip(), None))
        elif line.startswith("$ "):
            joined.append((line.removeprefix("$ ").strip(), []))
        elif joined:
            shown = joined[-1][1]
            assert shown is not None
            shown.append(line)
        else:
            pytest.fail(f"{block.id}: output before the first command: {line!r}")
        continued = bool(joined) and joined[-1][0].endswith("\\")
    for line, shows in joined:
        if not line or line.startswith("#"):
            continue
        status = EXIT_STATUS.search(line)
        parts = [part.strip() for part in line.split("&&")]
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            yield Command(part, int(status.group(1)) if status else 0, shows if last else None)


# -- comparing output -----------------------------------------------------------------------------


def _cells(line: str, bar: str) -> list[str]:
    return [cell.strip() for cell in line.strip()[1:-1].split(bar)]


def normalise(lines: list[str]) -> list[str]:
    """``lines`` with what may vary replaced by ``VARIES`` (module docstring), runs of spaces and
    of box-drawing rules made one, and trailing spaces dropped; ``...`` lines kept."""
    out: list[str] = []
    timing: set[int] = set()
    diffs: set[int] = set()
    for line in lines:
        line = line.rstrip()
        if line.strip() == LEFT_OUT:
            out.append(LEFT_OUT)
            continue
        if line.startswith("┃") and line.endswith("┃"):  # a header row
            header = _cells(line, "┃")
            timing = {i for i, cell in enumerate(header) if TIMING_HEADER.search(cell)}
            diffs = {i for i, cell in enumerate(header) if DIFF_HEADER.search(cell)}
        elif line.startswith("│") and line.endswith("│"):  # a body row
            cells = _cells(line, "│")
            anchor = cells[0] in ANCHOR_RUNTIMES
            cells = [
                VARIES if cell and (i in timing or (anchor and i in diffs)) else cell
                for i, cell in enumerate(cells)
            ]
            line = "│ " + " │ ".join(cells) + " │"
        elif line[:1] in "┏┡┗└├╇┣":  # a rule
            line = BOX_RULE.sub(r"\1", line)
        else:
            line = TIMING.sub(VARIES, line)
        out.append(re.sub(r"\s+", " ", line).strip())
    return out


def assert_prints(command: str, shown: list[str], printed: str) -> None:
    """The output ``printed`` reads as the lines ``shown`` (``...`` lines match any lines)."""
    want, got = normalise(shown), normalise(printed.splitlines())
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line == LEFT_OUT else re.escape(line) + r"\n" for line in want
    )
    if re.fullmatch(pattern, "".join(line + "\n" for line in got)) is None:
        diff = "\n".join(difflib.unified_diff(want, got, "shown", "printed", lineterm=""))
        pytest.fail(f"$ {command}\nprints other than the page shows (normalised):\n{diff}")


def printed_as(comment: str, printed: str) -> bool:
    """Whether ``printed`` reads as a print line's comment (whitespace runs alike, ``...`` any
    text)."""
    parts = [re.escape(" ".join(part.split())) for part in comment.split(LEFT_OUT)]
    return re.fullmatch(".*?".join(parts), " ".join(printed.split()), re.S) is not None


def shown_prints(block: Block) -> dict[tuple[int, int], str]:
    """The ``print(...)`` call statements of ``block`` that end in a comment, by their first and
    last page line, with the comment (the output it shows)."""
    tree = ast.parse("\n" * block.line + block.text)
    lines = ("\n" * block.line + block.text).splitlines()
    shown = {}
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "print"
        ):
            continue
        end = node.end_lineno or node.lineno
        tail = lines[end - 1][node.end_col_offset :]
        comment = PRINT_COMMENT.match(tail.strip())
        if comment is not None:
            shown[(node.lineno, end)] = comment.group(1)
    return shown


class PrintRecorder:
    """``print`` for a page's namespace: prints as usual and records the text each page line
    printed, by the line of its call."""

    def __init__(self, page: str) -> None:
        self.page = page
        self.printed: dict[int, list[str]] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        caller = sys._getframe(1)
        if kwargs.get("file") is None and caller.f_code.co_filename == self.page:
            text = io.StringIO()
            print(*args, **{**kwargs, "file": text})
            self.printed.setdefault(caller.f_lineno, []).append(text.getvalue())
        print(*args, **kwargs)


# -- running the blocks ---------------------------------------------------------------------------


@dataclass
class PageState:
    """One page's temporary folder, its Python namespace, and how far its blocks have run."""

    cwd: Path
    namespace: dict[str, Any] = field(default_factory=dict)
    done: int = 0
    failed: str | None = None


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PageState]:
    return {}


def page_state(
    pages: dict[str, PageState], page: str, factory: pytest.TempPathFactory
) -> PageState:
    if page not in pages:
        cwd = factory.mktemp(page.replace("/", "_"))
        for folder in LINKED:
            (cwd / folder).parent.mkdir(parents=True, exist_ok=True)
            (cwd / folder).symlink_to(ROOT / folder, target_is_directory=True)
        # A page is read as a fresh interpreter runs it: the builder's names start over.
        tl.reset()
        pages[page] = PageState(cwd, {"print": PrintRecorder(page)})
    return pages[page]


def run_command(command: Command) -> None:
    if any(pattern.match(command.text) for pattern in SET_UP):
        return
    if TENSORLOOP.match(command.text) is None:
        pytest.fail(f"not a tensorloop command and not in SET_UP: {command.text!r}")
    args = shlex.split(command.text, comments=True)
    args = args[3:] if args[1] == "-m" else args[1:]
    picture = args[:1] == ["draw"] and not any(a.endswith(".dot") for a in args)
    if picture and shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    shown = "\n".join(command.shows or [])
    for module in OPTIONAL:
        if re.search(rf"\b{module}\b", shown) and importlib.util.find_spec(module) is None:
            pytest.skip(f"the output shows {module}, which is not installed")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == command.status, f"$ {command.text}\n{result.output}"
    if command.shows is not None:
        assert_prints(command.text, command.shows, result.output)


def run_python(block: Block, namespace: dict[str, Any]) -> None:
    for module in OPTIONAL:
        imported = re.search(rf"^\s*(import|from) {module}\b", block.text, re.M)
        if imported and importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    recorder = namespace["print"]
    recorder.printed.clear()
    code = compile("\n" * block.line + block.text, block.page, "exec")  # tracebacks: page lines
    exec(code, namespace)
    for (first, last), comment in shown_prints(block).items():
        texts = [t for line in range(first, last + 1) for t in recorder.printed.get(line, [])]
        assert texts, f"{block.page}:{last} printed nothing; the page shows {comment!r}"
        for text in texts:
            assert printed_as(comment, text), (
                f"{block.page}:{last} printed {text.rstrip()!r}; the page shows {comment!r}"
            )


def run_block(block: Block, state: PageState) -> None:
    if block.language == "python":
        run_python(block, state.namespace)
    else:
        for command in commands(block):
            run_command(command)


def run_in_order(block: Block, state: PageState) -> None:
    """Run ``block``, and first the blocks of its page before it that have not run; a block that
    failed fails the ones after it (a skipped one does not)."""
    page_blocks = [b for b in BLOCKS if b.page == block.page]
    for current in page_blocks[state.done : page_blocks.index(block) + 1]:
        if state.failed is not None:
            pytest.fail(f"block {state.failed} of this page failed; this block builds on it")
        state.done += 1
        try:
            run_block(current, state)
        except pytest.skip.Exception:
            if current is block:
                raise
        except BaseException:
            state.failed = current.id
            raise


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_code_block_runs_as_written(
    block: Block,
    pages: dict[str, PageState],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = page_state(pages, block.page, tmp_path_factory)
    monkeypatch.chdir(state.cwd)
    if [b for b in BLOCKS if b.page == block.page].index(block) < state.done:  # ran already, first
        assert state.failed != block.id, "it failed as a later block's prerequisite"
        return
    with warnings.catch_warnings():
        # The pages run models on jax that it places partly on the compiled backend, up front
        # (shapes known only at run time): a user sees that warning once; here it is no error.
        # The backend law still holds every run to its claims (conftest.py).
        warnings.filterwarnings("ignore", r"jax handed .* to compiled: ", tl.FallbackWarning)
        run_in_order(block, state)


def test_the_pages_blocks_are_found() -> None:
    """The fence parser sees the blocks (a page whose blocks it missed would pass vacuously)."""
    languages = {(b.page, b.language) for b in BLOCKS}
    assert {("README.md", "python"), ("README.md", "sh"), ("README.md", "console")} <= languages
    readme = [b for b in BLOCKS if b.page == "README.md"]
    assert sum(len(shown_prints(b)) for b in readme if b.language == "python") >= 5
    shells = [b for b in readme if b.language != "python"]
    assert sum(len(c.shows or []) for b in shells for c in commands(b)) >= 50


# -- the comparison itself ------------------------------------------------------------------------
BENCH = """\
┏━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━┓
┃ runtime              ┃ runs ┃ median ms ┃ / tensorloop-compiled ┃
┡━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━┩
│ tensorloop-compiled  │ 2121 │     0.231 │                 1.00x │
│ tensorloop-reference │  208 │     2.396 │                10.38x │
└──────────────────────┴──────┴───────────┴───────────────────────┘
loop scan: 6 iterations over 1 run in 0.12 ms (49,975 it/s)"""


def test_timings_may_differ_and_nothing_else() -> None:
    other = """\
┏━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━┓
┃ runtime              ┃ runs ┃ median ms ┃ / tensorloop-compiled ┃
┡━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━┩
│ tensorloop-compiled  │ 19 │     10.5 │                 1.00x │
│ tensorloop-reference │  7 │   123.396 │                9.1x │
└──────────────────────┴──────┴───────────┴───────────────────────┘
loop scan: 6 iterations over 1 run in 1.5 ms (4,000 it/s)"""
    assert_prints("bench", BENCH.splitlines(), other)
    for old, new in [
        ("tensorloop-reference", "tensorloop-jax"),
        ("6 iterations", "7 iterations"),
        ("1 run in", "2 runs in"),
        ("loop scan", "loop while"),
    ]:
        with pytest.raises(pytest.fail.Exception):
            assert_prints("bench", BENCH.splitlines(), other.replace(old, new))


def test_a_line_of_dots_stands_for_lines_left_out() -> None:
    printed = "a: 1\nb: 2\nc: 3\nd: 4\n"
    assert_prints("x", ["...", "b: 2", "...", "d: 4"], printed)
    assert_prints("x", ["a: 1", "..."], printed)
    with pytest.raises(pytest.fail.Exception):
        assert_prints("x", ["a: 1", "c: 3", "..."], printed)
    with pytest.raises(pytest.fail.Exception):
        assert_prints("x", [], printed)


def test_a_print_comment_is_the_literal_output() -> None:
    assert printed_as("(6, 8) 6", "(6, 8) 6\n")
    assert printed_as("[5. 5. 5.]", "[5.  5.  5.]\n")
    assert printed_as("Loop 'x': still running ...", "Loop 'x': still running after 3\n")
    assert printed_as("[('a',), ..., ('z',)]", "[('a',), ('b',), ('z',)]")
    assert not printed_as("(6, 8) 6", "(6, 8) 7\n")
    assert not printed_as("column sums: [5. 5. 5.]", "[5. 5. 5.]\n")
