"""The documentation points somewhere: every relative link and image of README.md and docs/*.md resolves (and its
#anchor names a heading of the page), every docs/ path named in prose exists, and docs/reproduction.md names
every experiment `crossner-hf reproduce --help` offers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
IMG_TAG = re.compile(r"<img\b[^>]*\bsrc=[\"']([^\"']+)[\"']", re.I)
PROSE_PATH = re.compile(r"(?<![\w/.-])(docs/[\w./-]+\.(?:md|png|svg|jpg))")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _text(page: Path) -> str:
    """The page without its fenced code blocks (their text is commands and output, not links)."""
    return FENCE.sub("", page.read_text(encoding="utf-8"))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", _text(page), re.M)}


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """``page: target (why)`` for each relative link, image or docs/ path in prose that does not resolve."""
    text = _text(page)
    targets = [m.group(1) for pattern in (INLINE_LINK, REFERENCE, IMG_TAG) for m in pattern.finditer(text)]
    bad = []
    for target in targets:
        if SCHEME.match(target) or target.startswith("//"):
            continue  # a URL: not this checkout's to resolve
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            bad.append(f"{page.name}: {target} (no {resolved.relative_to(root) if resolved.is_relative_to(root) else resolved})")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            bad.append(f"{page.name}: {target} (no heading #{fragment} in {resolved.name})")
    for m in PROSE_PATH.finditer(text):  # a path named in prose reads from the repository's root
        if not (root / m.group(1)).exists():
            bad.append(f"{page.name}: {m.group(1)} (named in the text; no such file)")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_and_image_resolves(page):
    assert not broken_links(page), "links that point nowhere: " + "; ".join(broken_links(page))


def test_the_check_catches_what_it_looks_for(tmp_path):
    """A page with each kind of broken reference, and the working forms beside them: only the broken ones are
    reported (so the test above can fail)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "picture.png").write_bytes(b"\x89PNG")
    (docs / "other.md").write_text("# Other page\n\n## The `flags`, in short\n")
    page = docs / "page.md"
    page.write_text(
        "# Page\n\n"
        "[ok](other.md) [ok anchor](other.md#the-flags-in-short) ![ok](picture.png) [self](#page) "
        "[web](https://example.org/x.md) docs/other.md\n"
        "[from docs/](docs/other.md) ![image](docs/picture.png) [anchor](other.md#nothing) docs/gone.md\n"
        "<img src=\"missing.png\">\n\n[ref]: nowhere.md\n\n```bash\n[in code](nowhere-either.md)\n```\n")
    found = broken_links(page, tmp_path)
    assert [f.split(" (")[0] for f in found] == [
        "page.md: docs/other.md", "page.md: docs/picture.png", "page.md: other.md#nothing", "page.md: nowhere.md",
        "page.md: missing.png", "page.md: docs/gone.md"]


def test_reproduction_page_names_every_experiment_reproduce_offers(capsys):
    from crossner_hf.cli import main

    with pytest.raises(SystemExit) as exit_code:
        main(["reproduce", "--help"])
    assert exit_code.value.code == 0
    usage = capsys.readouterr().out
    choices = re.search(r"\{([a-z0-9,-]+)\}", usage.split("positional arguments:")[1])
    assert choices, "reproduce --help lists no experiment choices"
    offered = choices.group(1).split(",")
    assert len(offered) >= 12
    page = (ROOT / "docs" / "reproduction.md").read_text(encoding="utf-8")
    named = {e for e in offered if f"`{e}`" in page}
    assert named == set(offered), f"docs/reproduction.md does not name {sorted(set(offered) - named)}"
