"""Every code block of README.md and docs/*.md runs as written, one case per block (page:line).

- ```python blocks of a page run in order in one namespace (a case first runs the page's earlier
  blocks if they have not run yet), so a page's later blocks may use what its earlier ones made.
- ```sh and ```console blocks hold commands: every line of a ```sh block, and in a ```console
  block the lines that start with ``$ `` (the other lines show output and are not compared); a
  line ending in ``\\`` continues on the next; ``&&`` chains commands. Commands of tensorloop
  (``tensorloop``, ``.venv/bin/tensorloop``, ``python -m tensorloop``) run through click's runner
  and must exit 0, or with N where the line ends in ``# exit status N``. The set-up commands in
  ``SET_UP`` cannot run inside the test suite and are left out; any other command fails the case.
- Blocks in any other language, or none (diagrams, pseudo-code, IR text), are not run.
- Each page runs in its own temporary folder that links the repository's ``examples/`` and
  ``tests/data/``: relative paths resolve as from the repository root, and the files the blocks
  write stay in the temporary folder.
- A block that imports an optional runtime (``OPTIONAL``) is skipped where it is not installed;
  ``tensorloop draw`` to a picture is skipped where Graphviz's ``dot`` is missing.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
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


def commands(block: Block) -> Iterator[tuple[str, int]]:
    """Each command of a shell block with the exit status it must end with."""
    joined: list[str] = []
    for line in block.text.splitlines():
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + " " + line.strip()
        elif block.language == "sh" or line.startswith("$ "):
            joined.append(line.removeprefix("$ ").strip())
    for line in joined:
        if not line or line.startswith("#"):
            continue
        status = EXIT_STATUS.search(line)
        for command in line.split("&&"):
            yield command.strip(), int(status.group(1)) if status else 0


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
        pages[page] = PageState(cwd)
    return pages[page]


def run_command(command: str, status: int) -> None:
    if any(pattern.match(command) for pattern in SET_UP):
        return
    if TENSORLOOP.match(command) is None:
        pytest.fail(f"not a tensorloop command and not in SET_UP: {command!r}")
    args = shlex.split(command, comments=True)
    args = args[3:] if args[1] == "-m" else args[1:]
    picture = args[:1] == ["draw"] and not any(a.endswith(".dot") for a in args)
    if picture and shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == status, f"$ {command}\n{result.output}"


def run_block(block: Block, state: PageState) -> None:
    if block.language == "python":
        for module in OPTIONAL:
            imported = re.search(rf"^\s*(import|from) {module}\b", block.text, re.M)
            if imported and importlib.util.find_spec(module) is None:
                pytest.skip(f"{module} is not installed")
        code = compile("\n" * block.line + block.text, block.page, "exec")  # tracebacks: page lines
        exec(code, state.namespace)
    else:
        for command, status in commands(block):
            run_command(command, status)


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
    run_in_order(block, state)


def test_the_pages_blocks_are_found() -> None:
    """The fence parser sees the blocks (a page whose blocks it missed would pass vacuously)."""
    languages = {(b.page, b.language) for b in BLOCKS}
    assert {("README.md", "python"), ("README.md", "sh"), ("README.md", "console")} <= languages
