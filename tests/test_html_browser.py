"""The HTML report of traces/core/ in a real headless Chromium (Debian's package).

The page must render (a screenshot that is not blank), every violating trace must have its
section and SVG in the DOM the browser built, with the first non-conforming event marked, and a
link to one trace's picture (`report.html#trace-N`) must show that picture with the highlighted
event: a solid disc of the highlight colour, which nothing else on the page draws (text and
the panel's border are too thin for a 9 x 9 block); a trace whose bad event no action allows
also shows the expected moves in their colour.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from browser import chromium, dump_dom, screenshot  # noqa: F401 (chromium is a fixture)
from conftest import CORE, invoke
from PIL import Image, ImageChops, ImageFilter
from resumecheck.htmlreport import BAD, EXPECTED, anchor

pytestmark = pytest.mark.slow

SECTION = re.compile(r'<section id="(trace-\d+)" class="trace">(.*?)</section>', re.S)


def _rgb(colour: str) -> tuple[int, int, int]:
    return (int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """traces/core/ as an HTML page, and the JSON verdicts of the same run's inputs."""
    folder = tmp_path_factory.mktemp("html")
    page = invoke("--format", "html", "--no-progress", CORE)
    assert page.returncode == 1, page
    (folder / "report.html").write_text(page.stdout, encoding="utf-8")
    verdicts = invoke("--format", "json", "--no-progress", CORE).json()["traces"]
    return folder / "report.html", verdicts


def _violations(verdicts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The violating traces by the anchor of their picture (the row number in the table)."""
    return {anchor(n): v for n, v in enumerate(verdicts) if v["status"] == "violates"}


def _image(path: Path) -> Image.Image:
    return Image.open(path).convert("RGB")


def _share_not_white(image: Image.Image) -> float:
    grey = image.convert("L").histogram()
    return 1 - grey[255] / (image.width * image.height)


def _has_block(image: Image.Image, colour: str, side: int) -> bool:
    """Whether `side` x `side` pixels in a row all have exactly `colour`."""
    diff = ImageChops.difference(image, Image.new("RGB", image.size, _rgb(colour))).convert("L")
    mask = diff.point(lambda v: 255 if v == 0 else 0)
    return mask.filter(ImageFilter.MinFilter(side)).getbbox() is not None


def _count(image: Image.Image, colour: str) -> int:
    diff = ImageChops.difference(image, Image.new("RGB", image.size, _rgb(colour))).convert("L")
    return diff.histogram()[0]


def test_the_dom_holds_the_picture_of_every_violating_trace(
    chromium: str,  # noqa: F811
    report: tuple[Path, list[dict[str, Any]]],
) -> None:
    page, verdicts = report
    dom = dump_dom(chromium, page.as_uri())
    sections = dict(SECTION.findall(dom))
    violations = _violations(verdicts)
    assert len(violations) >= 40
    assert set(sections) == set(violations), sorted(set(sections) ^ set(violations))
    for name, verdict in violations.items():
        body = sections[name]
        # the timeline, and the checkpoints the trace made when it made any before the bad event
        assert body.count('aria-label="timeline of trace') == 1, name
        assert body.count("<svg") == 1 + body.count('aria-label="checkpoints and their'), name
        marked = re.search(r"<g><title>(event \d+): [^<]*</title><circle [^>]*r=\"9\"", body)
        assert marked and marked.group(1) == f"event {verdict['event_index']}", name
        assert f'href="#{name}"' in dom  # the table links to it
        if not verdict["properties"]:
            assert "what a correct runtime could have done instead" in body, name


def test_the_page_renders(chromium: str, report: tuple[Path, list[dict[str, Any]]]) -> None:  # noqa: F811
    page, _ = report
    shot = _image(screenshot(chromium, page.as_uri(), page.with_name("page.png")))
    assert shot.size == (1400, 900)
    assert _share_not_white(shot) > 0.02, "the page rendered blank"
    # The top of the page is the summary table, with verdicts in the highlight colour, and no
    # picture yet.
    assert _count(shot, BAD) > 0
    assert not _has_block(shot, BAD, 9)


def test_a_link_to_one_trace_shows_its_picture_with_the_highlighted_event(
    chromium: str,  # noqa: F811
    report: tuple[Path, list[dict[str, Any]]],
) -> None:
    page, verdicts = report
    violations = _violations(verdicts)
    with_property = next(n for n, v in violations.items() if v["properties"])
    no_action = next(n for n, v in violations.items() if not v["properties"])
    for name in (with_property, no_action):
        url = f"{page.as_uri()}#{name}"
        shot = _image(screenshot(chromium, url, page.with_name(f"{name}.png")))
        assert _share_not_white(shot) > 0.02, f"{url} rendered blank"
        assert _has_block(shot, BAD, 9), f"{url}: no highlighted event in view"
        if name == no_action:
            assert _count(shot, EXPECTED) > 50, f"{url}: the expected moves are not shown"
