"""``tensorloop draw``: DOT clusters and back edges, SVG/PNG from Graphviz, and the HTML page
folding a loop's body on click in headless Chromium."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import tensorloop as tl
from tensorloop.cli import main
from tensorloop.tools.draw import DrawError, loop_kind, render, to_dot

DATA = Path(__file__).resolve().parent.parent / "data"
LSTM = DATA / "torch_lstm_gru_torchscript.onnx"
BRANCH_WITH_LOOP = DATA / "openvino_converted" / "branch_with_loop_torch.xml"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
NO_DOT = shutil.which("dot") is None
needs_dot = pytest.mark.skipif(NO_DOT, reason="Graphviz's dot is absent: apt-get install graphviz")


def nested_model() -> tl.Model:
    """A scan over xs whose body runs a 4-trip for loop, then an If whose then-branch holds a
    while loop: three loops nested up to three deep, and a branch."""
    tl.reset()  # the loops' names ('scan', 'fori', ...) whatever ran before
    xs = tl.placeholder("float32", (5, 3), name="xs")
    h0 = tl.placeholder("float32", (3,), name="h0")
    limit = tl.placeholder("float32", (), name="limit")

    def step(h: Any, x: Any) -> Any:
        acc = tl.fori_loop(0, 4, lambda i, a: a * 0.5 + x, h)

        def grow(a: Any) -> Any:
            return tl.while_loop(lambda v: tl.reduce_sum(v) < limit, lambda v: v * 2.0 + 1.0, a)

        new = tl.cond(tl.reduce_sum(acc) > 0, grow, tl.tanh, acc)
        return new, new

    final, hs = tl.scan(step, h0, xs)
    return tl.Model({"final": final, "hs": hs})


@pytest.fixture(scope="module")
def nested_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("draw") / "nested.tl"
    tl.save(nested_model(), path)
    return path


def draw(model: Path, out: Path, *extra: str) -> str:
    result = CliRunner().invoke(main, ["draw", str(model), "-o", str(out), *extra])
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.output
    return out.read_text(encoding="utf-8") if out.suffix in (".dot", ".svg", ".html") else ""


def clusters(dot: str) -> list[tuple[int, str]]:
    """(nesting depth, title) of every cluster, in order."""
    found, depth = [], 0
    for line in dot.splitlines():
        if line.strip().startswith("subgraph cluster_"):
            depth += 1
        elif line.strip() == "{":
            depth += 100  # a row of ports (rank=same), not a cluster
        elif line.strip() == "}":
            depth -= 100 if depth >= 100 else 1
        m = re.search(r'fillcolor="[^"]+" fontsize=11 id=L\d+ label="([^"]*)"', line)
        if m:
            found.append((depth, m.group(1).replace("\\l", "\n").strip()))
    return found


def back_edges(dot: str) -> list[str]:
    return [line.strip() for line in dot.splitlines() if "tl-back" in line and "->" in line]


def test_nested_loops_and_branch_as_nested_clusters(nested_file: Path, tmp_path: Path) -> None:
    dot = draw(nested_file, tmp_path / "nested.dot")
    titles = clusters(dot)
    assert [(d, t.split(":")[0]) for d, t in titles] == [
        (1, "Loop 'scan'"),
        (2, "Loop 'fori'"),
        (2, "If"),
        (3, "then"),
        (4, "Loop 'while'"),
        (3, "else"),
    ]
    title = dict((t.split(":")[0], t) for _, t in titles)
    assert title["Loop 'scan'"].startswith("Loop 'scan': scan, 5 trips\n1 carried, 1 sliced, 1 ")
    assert title["Loop 'fori'"].startswith("Loop 'fori': for, 4 trips\n1 carried, 0 sliced")
    assert title["Loop 'while'"].startswith("Loop 'while': while, until the condition fails")
    # One dashed back edge per carried value, and the while loop's continue edge.
    back = back_edges(dot)
    assert len(back) == 4 and all("style=dashed" in e and "constraint=false" in e for e in back)
    assert sum("label=continue" in e for e in back) == 1
    # Outer values enter through the body's ports; constants are folded into labels.
    assert re.search(r'label="slice %x0 \(axis 0\)\\nf32\[3\]"', dot)
    assert "label=init" in dot and "label=slice" in dot
    assert "max_trip_count = 4" in dot and "← 0.5" in dot
    assert 'label="Constant\\n' not in dot
    # The fori body is inside the scan body: its nodes hide with either.
    assert re.search(r'label="Mul\\nf32\[3\]\\n← 0.5" class="tl-op tl-in-L0 tl-in-L1"', dot)

    shown = draw(nested_file, tmp_path / "shown.dot", "--constants", "show")
    assert 'label="Constant\\nf32[]\\n0.5"' in shown
    hidden = draw(nested_file, tmp_path / "hidden.dot", "--constants", "hide")
    assert 'label="Constant\\n' not in hidden and "← 0.5" not in hidden


def test_loop_kind_of_the_bundled_shapes(nested_file: Path) -> None:
    graph = tl.load(nested_file).graph
    kinds = {n.name: loop_kind(tl.Loop(n)) for _, n in graph.walk() if n.op == "Loop"}
    assert kinds == {"scan": "scan", "fori": "for", "while": "while"}


def test_lstm_exporter_model(tmp_path: Path) -> None:
    dot = draw(LSTM, tmp_path / "lstm.dot")
    titles = [t for _, t in clusters(dot)]
    assert sum(t.startswith("Loop '/lstm/LSTM") for t in titles) == 4
    assert sum(t.startswith("Loop '/gru/GRU'") for t in titles) == 1
    assert all(": scan, one trip per slice\n" in t for t in titles)
    assert any("stack (axis 0, reversed)" in line for line in dot.splitlines())
    assert len(back_edges(dot)) == 4 * 2 + 1  # h and c per LSTM direction, h for the GRU
    assert 'label="Constant\\n' not in dot and "← /lstm/Constant_1_output_0 = [4]" in dot


def test_openvino_branch_with_loop(tmp_path: Path) -> None:
    dot = draw(BRANCH_WITH_LOOP, tmp_path / "bwl.dot")
    titles = clusters(dot)
    assert [d for d, _ in titles] == [1, 2, 3, 2]  # the loop is inside the then-branch
    heads = ("If 'prim::If/If': 1 output", "then: ", "Loop 'prim::Loop/Loop': ", "else: ")
    assert all(t.startswith(h) for (_, t), h in zip(titles, heads, strict=True))
    assert back_edges(dot)


@needs_dot
def test_svg_and_png_files(nested_file: Path, tmp_path: Path) -> None:
    svg = draw(nested_file, tmp_path / "nested.svg")
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert sum("cluster" in (g.get("class") or "") for g in root.iter()) == 6
    png = tmp_path / "nested.png"
    draw(nested_file, png)
    data = png.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


def test_errors_are_one_line(nested_file: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(main, ["draw", str(nested_file), "-o", str(tmp_path / "x.jpg")])
    assert bad.exit_code == 2 and "x.jpg' ends in none of .dot" in bad.output
    assert "Traceback" not in bad.output
    missing = runner.invoke(main, ["draw", str(nested_file), "-o", "/nonexistent/x.svg"])
    assert missing.exit_code == 1 and "no such folder /nonexistent" in missing.output
    assert len(missing.output.strip().splitlines()) == 1
    assert runner.invoke(main, ["draw", str(nested_file)]).exit_code == 2  # no -o
    with pytest.raises(DrawError, match="constants must be"):
        to_dot(tl.load(nested_file).graph, constants="nope")  # type: ignore[arg-type]


def test_dot_output_needs_no_graphviz(
    nested_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot on it
    graph = tl.load(nested_file).graph
    assert render(graph, tmp_path / "g.gv").read_text().startswith("digraph model {")
    result = CliRunner().invoke(main, ["draw", str(nested_file), "-o", str(tmp_path / "g.svg")])
    assert result.exit_code == 1 and "needs Graphviz's 'dot' program" in result.output


# -- the HTML page in headless Chromium --------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("headless Chromium is absent: install Debian's chromium and chromium-driver")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ):
        options.add_argument(flag)
    service = webdriver.ChromeService(executable_path=str(CHROMEDRIVER))
    driver = webdriver.Chrome(options=options, service=service)  # fresh profile per session
    try:
        yield driver
    finally:
        driver.quit()


def visible(driver: Any, selector: str) -> list[bool]:
    from selenium.webdriver.common.by import By

    return [e.is_displayed() for e in driver.find_elements(By.CSS_SELECTOR, selector)]


@needs_dot
def test_html_folds_a_loop_body_on_click(browser: Any, nested_file: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    page = draw(nested_file, tmp_path / "nested.html")
    assert "<svg" in page and "<script>" in page and "http" not in page.split("<svg")[0]
    assert not re.search(r"""(src|href)=["']https?:""", page)  # nothing fetched from a network
    browser.get((tmp_path / "nested.html").as_uri())
    fori = browser.find_element(By.XPATH, "//*[@class='cluster tl-body tl-in-L0'][@id='L1']")
    title = fori.find_element(By.TAG_NAME, "text")
    assert title.text.startswith("▾ Loop 'fori': for, 4 trips")
    body = "g.node.tl-in-L1"  # the fori body's nodes; its ports carry no tl-in-L1
    ports = "g.node.tl-param.tl-in-L0:not(.tl-in-L1):not(.tl-in-L2)"
    assert visible(browser, body) and all(visible(browser, body))
    assert all(visible(browser, "g.edge.tl-in-L1"))
    n_ports = len(visible(browser, ports))

    title.click()
    assert not any(visible(browser, body)) and not any(visible(browser, "g.edge.tl-in-L1"))
    assert fori.get_attribute("data-collapsed") == "true" and title.text.startswith("▸ Loop")
    assert all(visible(browser, ports)) and len(visible(browser, ports)) == n_ports
    assert all(visible(browser, "g.node.tl-in-L2"))  # the If beside it stays open

    # Folding the scan around it hides the fori cluster; unfolding keeps the fori folded.
    scan_title = browser.find_element(By.CSS_SELECTOR, "g#L0 text")
    scan_title.click()
    assert not fori.is_displayed() and not any(visible(browser, "g.tl-in-L0"))
    scan_title.click()
    assert fori.is_displayed() and not any(visible(browser, body))

    title.click()
    assert all(visible(browser, body)) and fori.get_attribute("data-collapsed") == "false"

    browser.find_element(By.ID, "tl-collapse").click()
    assert not any(visible(browser, "g.tl-in-L0")) and all(visible(browser, "g.tl-input"))
    browser.find_element(By.ID, "tl-expand").click()
    assert all(visible(browser, "g.tl-in-L0"))


@needs_dot
def test_html_of_an_exporter_model_opens(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    draw(BRANCH_WITH_LOOP, tmp_path / "bwl.html")
    browser.get((tmp_path / "bwl.html").as_uri())
    bodies = browser.find_elements(By.CSS_SELECTOR, "g.tl-body")
    assert len(bodies) == 4
    loop = next(b for b in bodies if b.find_element(By.TAG_NAME, "text").text.startswith("▾ Loop"))
    inside = f"g.node.tl-in-{loop.get_attribute('id')}"
    assert all(visible(browser, inside))
    loop.find_element(By.TAG_NAME, "text").click()
    assert not any(visible(browser, inside))
