"""Every relative link in README.md, CHANGELOG.md and docs/ reaches a file, and every #anchor a
heading of its page as GitHub renders it (docs/development.md, "Docs that run")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!\!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*```")


def github_slug(heading: str) -> str:
    """GitHub's heading anchor: the rendered text lowercased, punctuation but `-` and `_`
    dropped, spaces turned into `-` (github.com/gjtorikian/html-pipeline, TocFilter)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link renders as its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    in_fence = False
    for line in page.read_text().splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            slug = github_slug(heading.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
        found.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line))
    return found


def links(page: Path) -> list[tuple[int, str]]:
    found = []
    in_fence = False
    for number, line in enumerate(page.read_text().splitlines(), start=1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        without_code = re.sub(r"`[^`]*`", "", line)
        found += [(number, target) for target in LINK.findall(without_code)]
    return found


def test_github_slugs() -> None:
    assert github_slug("A CI fleet (`bench/sweep_load.py`)") == "a-ci-fleet-benchsweep_loadpy"
    assert github_slug("`render_manifest(request, *, environ) -> dict`") == (
        "render_manifestrequest--environ---dict"
    )
    assert (
        github_slug("FakeGpuCloud, FakeHost (runpod-deploy)")
        == "fakegpucloud-fakehost-runpod-deploy"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    broken = []
    for number, target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...: not checked here
            continue
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        if not destination.exists():
            broken.append(f"line {number}: {target}: no such file")
            continue
        if anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"line {number}: {target}: no heading #{anchor} in {destination.name}")
    assert not broken, f"{page.relative_to(REPO)}:\n" + "\n".join(broken)
