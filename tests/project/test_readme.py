"""README.md and docs/ stay true and short.

* The README's examples run: its ``sh``/``bash`` blocks' ``cvxrank`` lines through the command
  line and its ``python`` blocks in a fresh interpreter, in the order they appear and in one
  temporary working folder (the Python example loads the model file the command-line
  example saved). The ``python`` blocks of ``docs/*.md`` run the same way, each on its own.
  They read the real data (``../shared/data``, rewritten to the ``shared_data`` fixture's
  path) and skip cleanly without it.
* Every concrete ``cvxrank`` command in the docs' shell blocks parses (subcommand, options
  and their values), without running: some of them take minutes.
* The README stays under 10,000 characters; links between the pages point at files and
  headings that exist; no page carries issue numbers or history ("used to", "previously",
  ...): the pages describe what the code does.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]

#: How the pages name the real data folder (relative to the project root).
SHARED = "../shared/data"

#: Largest README, in characters (and bytes).
README_LIMIT = 10_000

#: A fenced code block: its language and its text.
BLOCK = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)

#: Issue numbers ("issue 9", "issue-3", "issue #18", "#18"), not anchors (``(#fit)``) nor
#: HTML entities.
ISSUE = re.compile(r"\bissues?[\s-]+#?\d+|(?<![\w&/])#\d{1,3}\b", re.I)

#: Phrases that tell how the code got here instead of what it does.
HISTORY = (
    re.compile(r"\bused to\b", re.I),
    re.compile(r"\bwas\b.{0,80}?\bthen\b", re.I | re.S),
    re.compile(r"\bpreviously\b", re.I),
    re.compile(r"\bno longer\b", re.I),
    re.compile(r"\bearlier (version|code|commit)s?\b", re.I),
)

#: A markdown link ``[text](target)``.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")

TIMEOUT = 600


def blocks(path: Path) -> list[tuple[str, str]]:
    """The fenced code blocks of a page, in order: (language, text)."""
    return [(m.group(1).lower(), m.group(2)) for m in BLOCK.finditer(path.read_text("utf-8"))]


def prose(path: Path) -> str:
    """A page without its code blocks (output tables such as the extreme-C map are data)."""
    return BLOCK.sub("", path.read_text("utf-8"))


def cvxrank_commands(code: str, *, folders: bool = False) -> list[str]:
    """The ``cvxrank ...`` command lines of a shell block, continuation lines joined (with
    ``folders``, also its ``mkdir -p ...`` lines)."""
    joined = re.sub(r"\\\n\s*", " ", code)
    starts = ("cvxrank ", "mkdir -p ") if folders else ("cvxrank ",)
    return [line.strip() for line in joined.splitlines() if line.strip().startswith(starts)]


def argv_of(line: str) -> list[str]:
    """The arguments of a ``cvxrank`` command line (after ``cvxrank``, comments dropped)."""
    return shlex.split(line, comments=True)[1:]


def localized(text: str, shared_data: Path) -> str:
    return text.replace(SHARED, shared_data.as_posix())


def run(args: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0, (
        f"{what} exited with {result.returncode}\nstdout:\n{result.stdout[-3000:]}\n"
        f"stderr:\n{result.stderr[-3000:]}"
    )
    return result


def run_command(line: str, cwd: Path, shared_data: Path) -> None:
    argv = argv_of(localized(line, shared_data))
    if line.startswith("mkdir -p "):
        for folder in argv[1:]:
            (cwd / folder).mkdir(parents=True, exist_ok=True)
        return
    run([sys.executable, "-m", "cvxrank.cli.main", *argv], cwd, f"`{line}`")


def run_python(code: str, cwd: Path, shared_data: Path,
               where: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-c", localized(code, shared_data)], cwd,
               f"the python block of {where}")


# --------------------------------------------------------------------------- examples


def test_readme_examples_run_in_order(shared_data, tmp_path):
    """The command-line example fits, saves, predicts and evaluates; the Python example fits
    the same model, loads the saved one and prints what its comments say. Their outputs land
    in ``tmp_path``."""
    kinds = []
    for language, code in blocks(README):
        if language in ("sh", "bash"):
            for line in cvxrank_commands(code, folders=True):
                run_command(line, tmp_path, shared_data)
                kinds.append("cli")
        elif language == "python":
            result = run_python(code, tmp_path, shared_data, "README.md")
            check_stated_output(code, result.stdout)
            kinds.append("python")
    assert "cli" in kinds and "python" in kinds
    assert (tmp_path / "results" / "model.json").is_file()
    assert (tmp_path / "results" / "scores.txt").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]  # nothing elsewhere


def test_readme_commands_write_only_into_the_ignored_results_folder() -> None:
    """Every output path of the README's commands is under ``results/``, which
    ``.gitignore`` lists, so following the README leaves ``git status`` clean."""
    assert "results/" in (README.parent / ".gitignore").read_text("utf-8").splitlines()
    outputs = []
    for language, code in blocks(README):
        if language in ("sh", "bash"):
            for line in cvxrank_commands(code):
                argv = argv_of(line)
                outputs += [argv[i + 1] for i, a in enumerate(argv[:-1])
                            if a in ("--save-model", "--out", "--trec-run", "--json-out")]
    assert outputs and all(p.startswith("results/") for p in outputs), outputs


def check_stated_output(code: str, stdout: str) -> None:
    """Each ``print(...)  # value`` line of a block printed that value (a number to the
    decimals stated; the comment's text up to a colon otherwise)."""
    stated = [line.split("#", 1)[1].split(":")[0].strip()
              for line in code.splitlines() if line.startswith("print(") and "#" in line]
    printed = stdout.splitlines()
    assert len(printed) == len(stated), (stated, printed)
    for claim, output in zip(stated, printed, strict=True):
        if re.fullmatch(r"-?\d+\.(\d+)", claim):
            decimals = len(claim.split(".")[1])
            assert abs(float(output) - float(claim)) <= 0.5 * 10.0**-decimals, (claim, output)
        else:
            assert output.strip() == claim, (claim, output)


@pytest.mark.parametrize("page", [p for p in DOCS if any(lang == "python" for lang, _ in
                                                          blocks(p))],
                         ids=lambda p: p.name)
def test_docs_python_examples_run(page, shared_data, tmp_path):
    for language, code in blocks(page):
        if language == "python":
            run_python(code, tmp_path, shared_data, f"docs/{page.name}")


def docs_commands() -> list[tuple[str, str]]:
    """Every concrete ``cvxrank`` command of the docs' shell blocks (page, line): those
    without placeholders (``[...]``, ``A | B``, ``(...)``, upper-case names)."""
    found = []
    for page in PAGES:
        for language, code in blocks(page):
            if language not in ("sh", "bash"):
                continue
            for line in cvxrank_commands(code):
                if re.search(r"[\[\]|()]|\.\.\.|\b[A-Z]{2,}\b", line.split("#")[0]):
                    continue
                found.append((page.name, line))
    return found


@pytest.mark.parametrize(("page", "line"), docs_commands(),
                         ids=[f"{p}:{i}" for i, (p, _) in enumerate(docs_commands())])
def test_docs_commands_parse(page, line):
    """The subcommand exists and takes every option given, with values it accepts."""
    from cvxrank.cli.main import build_parser, command_of

    argv = argv_of(line)
    command = command_of(argv)
    assert command is not None, f"{page}: `{line}` names no subcommand"
    args, extras = build_parser([command]).parse_known_args(argv)
    assert not extras, f"{page}: `{line}`: unknown arguments {extras}"
    assert callable(getattr(args, "func", None))


def test_the_docs_show_commands():
    assert len(docs_commands()) >= 8


# --------------------------------------------------------------------------- the pages


def test_readme_is_short():
    text = README.read_text("utf-8")
    assert len(text) < README_LIMIT
    assert len(text.encode("utf-8")) < README_LIMIT


def test_readme_keeps_the_two_commands():
    text = README.read_text("utf-8")
    assert "make verify" in text and "make test" in text
    makefile = (ROOT / "Makefile").read_text("utf-8")
    # what the README says they do: set up, then `cvxrank verify` / the whole test suite
    assert re.search(r"^verify: install\n\t\S*cvxrank verify$", makefile, re.M)
    assert re.search(r"^test: install\n\t\S*python -m pytest -q (-n 2 (--dist loadgroup )?)?tests$",
                     makefile, re.M)


def test_readme_lists_every_subcommand():
    from cvxrank.cli.main import COMMANDS

    text = README.read_text("utf-8")
    for name in COMMANDS:
        assert f"`cvxrank {name}" in text, name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_issue_numbers(page):
    hits = ISSUE.findall(prose(page)) + [
        m for _, code in blocks(page) for m in ISSUE.findall(code)]
    assert not hits, f"{page.name}: {hits}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_history(page):
    text = page.read_text("utf-8")
    hits = [m.group(0) for pattern in HISTORY for m in pattern.finditer(text)]
    assert not hits, f"{page.name}: {hits}"


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*)$", prose(path), re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_resolve(page):
    broken = []
    for target in LINK.findall(prose(page)):
        if re.match(r"[a-z]+://", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"
