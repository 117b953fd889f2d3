"""History has one home: ``CHANGELOG.md`` (what changed for users, per
version) and ``docs/log.md`` (dated measurement runs, which nothing else
quotes). Everything else (source, tests, benchmarks, tools, docs, the README,
the CI script, the workflow, the committed report) says what is true now and
why, never which tracker item, round, date, commit or machine it came from.

The markers, each a regular expression in :data:`MARKERS`:

- ``tracker``: ``issue 32``, ``issues 35-37``, ``PR 4``, ``#12``;
- ``round``: ``round five``, ``rounds 5 and 6``, ``round3``, ``the seventh
  round`` (a round of work; the decoding loop's rounds take no number);
- ``date``: ``2026-12-02``, ``December 2``, ``2 December 2026``,
  ``Dec 2026``, ``09:42 UTC``;
- ``commit``: 7 to 40 hex characters with a letter and a digit, in prose (a
  whole string literal is data, a digest prefix ending in ``...`` is a model
  file's fingerprint, a float such as ``3.4028e38`` is a number);
- ``machine``: a micro-architecture generation (``Zen 3``: what is true in
  general names the feature, AVX2 or AVX-512), the project's own machine
  (``the shared 2-core box``, ``this box``) and a load figure (``at load 4``,
  ``load average 8.6-11.4``): one run's conditions, which belong in the log
  (a report's own ``1-minute load 1.35`` is the run it shows, not history).

Data is not history: a committed report's run line (``**Run**: date ...
commit ...``) says which run the report shows.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The two files that keep history.
HISTORY_FILES = ("CHANGELOG.md", "docs/log.md")
#: Folders scanned (text files under them) and single files scanned.
FOLDERS = ("src", "tests", "benchmarks", "tools", "docs", ".github")
FILES = ("README.md", ".ci/run", "pyproject.toml", "conftest.py")
TEXT_SUFFIXES = {".py", ".md", ".yml", ".yaml", ".toml", ".cfg", ".ini", ".txt", ".sh"}

_NUMBER = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
MARKERS: dict[str, re.Pattern[str]] = {
    "tracker": re.compile(
        r"(?i)\b(?:issues?|PRs?|pull requests?|tickets?)\s+#?\d+"
        r"|(?<![\w&#/])#\d{1,5}(?![\w-])"
    ),
    "round": re.compile(
        rf"(?i)\brounds?\s+{_NUMBER}\b(?!\s+(?:by|times)\b|\s*(?:decimal|digit|place|significant))"
        r"|(?<![a-z])round[-_]?\d+\b"
        r"|\b(?:third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth)\s+round\b"
    ),
    "date": re.compile(
        r"\b20\d\d-[01]\d-[0-3]\d\b"
        rf"|\b{_MONTH}\.? [0-3]?\d(?:st|nd|rd|th)?\b(?!\s*(?:bits?|%))"
        rf"|\b[0-3]?\d {_MONTH} 20\d\d\b"
        rf"|\b{_MONTH} 20\d\d\b"
        r"|\b[0-2]\d:[0-5]\d UTC\b"
    ),
    "commit": re.compile(r"(?<![\w.\"'])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w\"']|\.\.\.)"),
    "machine": re.compile(
        r"(?i)\bzen ?\d\b"
        r"|\b(?:the|this|our|project's)\s+(?:shared\s+|busy\s+|loaded\s+|idle\s+|dev\s+)*\d+-core\b"
        r"|\b(?:this|the shared|the dev|the project's)\s+(?:box|host)\b"
        r"|\b(?:at|under)\s+(?:a\s+)?load(?:\s+average)?\s+(?:of\s+)?~?\d|\bload\s+average\s+(?:of\s+)?~?\d"
    ),
}
#: A committed report's run line: which run (date, commit, CPU) it shows.
RUN_LINE = re.compile(r"^\*\*Run(?: of `[^`]+`)?\*\*:")


def history_markers(text: str) -> list[tuple[int, str, str]]:
    """Every marker in ``text``, as ``(line number, kind, matched text)``;
    a committed report's run line is data and not read."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if RUN_LINE.match(line):
            continue
        for kind, pattern in MARKERS.items():
            found.extend((number, kind, m.group(0)) for m in pattern.finditer(line))
    return found


def scanned_files() -> list[Path]:
    """The text files that must say what is true now: everything under
    :data:`FOLDERS`, :data:`FILES` and the committed report's pages, less
    :data:`HISTORY_FILES`, this file (its examples) and build output."""
    paths = [ROOT / name for name in FILES]
    paths += sorted((ROOT / "report").glob("*.md"))
    for folder in FOLDERS:
        paths += sorted(
            p
            for p in (ROOT / folder).rglob("*")
            if p.is_file()
            and p.suffix in TEXT_SUFFIXES
            and not any(part == "__pycache__" or part.endswith(".egg-info") for part in p.parts)
        )
    skip = {ROOT / name for name in HISTORY_FILES} | {Path(__file__).resolve()}
    return [p for p in paths if p.exists() and p not in skip]


def test_no_history_outside_the_changelog_and_the_log():
    """Every scanned file is free of tracker numbers, rounds, dates, commit
    hashes and machine history; a failure lists each hit as
    ``path:line: [kind] text``."""
    hits = [
        f"{path.relative_to(ROOT)}:{number}: [{kind}] {text}"
        for path in scanned_files()
        for number, kind, text in history_markers(path.read_text(encoding="utf-8"))
    ]
    assert not hits, (
        f"{len(hits)} history markers outside {' and '.join(HISTORY_FILES)} "
        "(say what is true now and why; dated runs go to docs/log.md):\n" + "\n".join(hits)
    )


def test_history_files_exist():
    """The two homes of history are there, so the exemption names real files."""
    assert all((ROOT / name).is_file() for name in HISTORY_FILES)


CLEAN = '''\
def speedup(draft, k):
    """Paired ratio of plain decoding to speculative decoding with ``draft``
    at ``k`` drafts a round; the first round feeds the prompt, rounds one by
    one; bfloat16 rounds 8 times coarser; the reason ends "1-minute load
    1.35". Measured with
    AVX-512 kernels and with AVX2; a loaded machine widens the interval."""
    assert round(2.5, 2) == 2.5, "round 2 decimal places"
    return 0x7F3A9B1 + 3.4028e38  # the sha256 "141c395bfc03" is data
'''


def test_history_markers_pass_clean_text():
    """Decoding rounds, CPU features, hex constants, floats and a digest in
    a string literal are not history."""
    assert history_markers(CLEAN) == []


@pytest.mark.teeth
@pytest.mark.parametrize(
    ("bug", "line", "kind"),
    [
        ("issue", "# the targets of issue 32", "tracker"),
        ("issues_range", "added in issues 35-37.", "tracker"),
        ("hash_number", "fixed in #41", "tracker"),
        ("round_word", 'see docs/measurement.md "round five"', "round"),
        ("round_digits", "python tools/mutate.py --set round3", "round"),
        ("round_ordinal", "the seventh round timed them apart", "round"),
        ("iso_date", "Until 2026-12-02 the budget was 540 s.", "date"),
        ("month_date", "measured on December 2, idle", "date"),
        ("month_year", "as of Dec 2026", "date"),
        ("utc_time", "(09:42 UTC, one thread)", "date"),
        ("commit", ".ci/run on 4e8e4a3 took 5 minutes", "commit"),
        ("zen", "1.20 [1.20, 1.21] on a Zen 3", "machine"),
        ("our_box", "~100 s on the shared 2-core box", "machine"),
        ("this_box", "timed on this box", "machine"),
        ("load", "34.9 CPU s at load average 8.6-11.4", "machine"),
    ],
)
def test_history_markers_catches_history(bug, line, kind):
    """Each kind of marker, in a line of an otherwise clean text, is found
    with its kind."""
    found = history_markers(CLEAN + line + "\n")
    assert [k for _, k, _ in found] == [kind], (bug, found)
