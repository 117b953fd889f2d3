# ruff: noqa: E501  (a mutant's snippet is quoted whole, as it stands in src/)
"""The ledger reader's bug set (``tools/mutate.py --set ledger-reader``): the
validation of a ledger on read, and running the tests of one claim by name.

Written from ``src/`` and ``docs/`` alone (docs/ledger.md, docs/running.md,
docs/commands.md, docs/mutation.md and tools/mutate.py), before any of the
two capabilities' test files was opened, by a helper who did not write
those tests.

- ``reader``: ``core/io.py`` (:func:`read_json`: a regular file only, at most
  64 MiB, nested at most 32 deep, every number finite), ``report/reading.py``
  (:func:`read_ledger`: one entry per claim, every table known and each row
  checked), ``claims/tables.py`` (:func:`check_row`: each field of its
  annotated type), ``ledger/reuse.py`` (``--model-free-from`` read through
  the same reader), ``ledger/model_under_test.py`` (``AFTERTRAIN_MODEL=``
  empty refused) and ``ledger/record.py`` (a figure refusing a bool). The
  slips: a bound off by one or in the wrong unit, ``>`` for ``>=``, a kind of
  file let through, the depth not counting objects, ``isfinite`` read as
  ``isnan``, ``NaN`` parsed, a duplicate let through, one table shape or
  one field type left unchecked, the message without the row type, the
  reader bypassed, an empty variable falling back to the default.
- ``by-claim``: ``ledger/claim_marker.py`` (:func:`selected_claims`,
  :func:`reason`, :func:`not_selected`, :class:`ByClaim`), ``ledger/plugin.py``
  (the keywords, the ledger told the selection) and ``ledger/state.py``.
  The slips: the comma split or the strip dropped, an unknown ID let
  through, the known IDs not listed, the order as given, the deselection
  inverted or keeping tests with no claim, the deselected not reported, the
  selection cut to the first ID, the verdict or the reason of a claim not
  selected wrong, the keywords not added, the ledger not told.

Same format as tools/mutants.py (:class:`mutants.Mutant`); ids
``lr-read-NN`` and ``lr-claim-NN``; ``python tools/mutate.py --set
ledger-reader --list`` locates every snippet.
"""

from __future__ import annotations

from mutants import Mutant

M = Mutant

MUTANTS: tuple[Mutant, ...] = (
    # --- core/io.py: read_json ---------------------------------------------------------------
    M(
        "lr-read-01",
        "reader",
        "size bound taken as >=: a file of exactly MAX_JSON_BYTES is refused",
        "    if st.st_size > MAX_JSON_BYTES:\n",
        "    if st.st_size >= MAX_JSON_BYTES:\n",
    ),
    M(
        "lr-read-02",
        "reader",
        "size bound in the wrong unit: 64 MB (10**6) instead of 64 MiB",
        "MAX_JSON_BYTES = 64 * 2**20",
        "MAX_JSON_BYTES = 64 * 10**6",
    ),
    M(
        "lr-read-03",
        "reader",
        "depth bound off by one: 33 deep read",
        "MAX_JSON_DEPTH = 32",
        "MAX_JSON_DEPTH = 33",
    ),
    M(
        "lr-read-04",
        "reader",
        "depth compared with >=: a file exactly 32 deep is refused",
        "    if _depth(value) > MAX_JSON_DEPTH:\n",
        "    if _depth(value) >= MAX_JSON_DEPTH:\n",
    ),
    M(
        "lr-read-05",
        "reader",
        "_depth does not descend into objects: nested dicts are unbounded",
        "level = [v for x in level for v in (x.values() if isinstance(x, dict) else x)]",
        "level = [v for x in level for v in (() if isinstance(x, dict) else x)]",
    ),
    M(
        "lr-read-06",
        "reader",
        "a character device (/dev/zero, /dev/null) passes the regular-file check",
        "    if not stat.S_ISREG(st.st_mode):\n",
        "    if not (stat.S_ISREG(st.st_mode) or stat.S_ISCHR(st.st_mode)):\n",
    ),
    M(
        "lr-read-07",
        "reader",
        "finiteness read as isnan: 1e999 (inf) accepted as a figure",
        "    if not math.isfinite(value):\n        raise _NotFinite(text)",
        "    if math.isnan(value):\n        raise _NotFinite(text)",
    ),
    M(
        "lr-read-08",
        "reader",
        "parse_constant dropped: NaN and Infinity literals parsed as floats",
        "text, parse_constant=_not_finite, parse_float=_finite_float, parse_int=_bounded_int",
        "text, parse_float=_finite_float, parse_int=_bounded_int",
    ),
    # --- report/reading.py: read_ledger -------------------------------------------------------
    M(
        "lr-read-09",
        "reader",
        "duplicate check counts > 2: a claim entered twice passes (the first silently kept)",
        "twice = sorted({i for i in ids if ids.count(i) > 1}, key=ids.index)",
        "twice = sorted({i for i in ids if ids.count(i) > 2}, key=ids.index)",
    ),
    M(
        "lr-read-10",
        "reader",
        "a one-row table's row is never checked (only lists and dicts of rows)",
        "rows = table.values() if isinstance(table, dict) else table if isinstance(table, list) else [table]",
        "rows = table.values() if isinstance(table, dict) else table if isinstance(table, list) else []",
    ),
    M(
        "lr-read-11",
        "reader",
        "a table name this version does not know is accepted",
        "        return f\"is not a table this version knows ({', '.join(SPECS)})\"",
        "        return None",
    ),
    # --- claims/tables.py: check_row -------------------------------------------------------
    M(
        "lr-read-12",
        "reader",
        "check_row: a bool counts as a number (True in a float field)",
        "is_number = isinstance(value, (int, float)) and not isinstance(value, bool)",
        "is_number = isinstance(value, (int, float))",
    ),
    M(
        "lr-read-13",
        "reader",
        "check_row: an int field accepts a float (1.5)",
        "if hint is int and not (is_number and isinstance(value, int)):",
        "if hint is int and not is_number:",
    ),
    M(
        "lr-read-14",
        "reader",
        "check_row: a str field's type is not checked (bool only)",
        "if hint in (str, bool) and not isinstance(value, hint):",
        "if hint is bool and not isinstance(value, hint):",
    ),
    M(
        "lr-read-15",
        "reader",
        "check_row: an X | None field holding a value is never checked",
        "return _value_problem(value, inner[0]) if len(inner) == 1 else None",
        "return None",
    ),
    M(
        "lr-read-16",
        "reader",
        "check_row: a nested row's fields are not checked (its type only)",
        "        check_row(value)\n        return None",
        "        return None",
    ),
    M(
        "lr-read-17",
        "reader",
        "check_row's message without the row type (the field alone)",
        'raise ValueError(f"{type(row).__name__}.{f.name} must be {problem}")',
        'raise ValueError(f"{f.name} must be {problem}")',
    ),
    # --- ledger/reuse.py, model_under_test.py, record.py ----------------------------------------
    M(
        "lr-read-18",
        "reader",
        "--model-free-from bypasses read_json (json.loads of the whole file: a folder, a pipe, NaN, depth unchecked)",
        "    data = read_json(path, FLAG)\n",
        '    data = __import__("json").loads(Path(path).read_text())\n',
    ),
    M(
        "lr-read-19",
        "reader",
        "AFTERTRAIN_MODEL= (empty) not refused: falls back to the default model",
        'if config.getoption("aftertrain_model", None) is None and given is not None and not given.strip():',
        'if config.getoption("aftertrain_model", None) is None and given is not None and given.isspace():',
    ),
    M(
        "lr-read-20",
        "reader",
        "claim_record.measured's figure accepts a bool (True shown as 1.00)",
        "if not all(v is None or (isinstance(v, _NUMBER) and not isinstance(v, bool)) for v in items):",
        "if not all(v is None or isinstance(v, _NUMBER) for v in items):",
    ),
    # --- ledger/claim_marker.py, plugin.py, state.py: --claim ID ------------------------------
    M(
        "lr-claim-01",
        "by-claim",
        "--claim Q2,Q3: the comma split dropped (one ID 'Q2,Q3', refused as unknown)",
        'named = [v.strip() for value in values for v in value.split(",")]',
        "named = [v.strip() for value in values for v in [value]]",
    ),
    M(
        "lr-claim-02",
        "by-claim",
        "--claim 'Q2, Q3': the strip dropped (' Q3' refused as unknown)",
        'named = [v.strip() for value in values for v in value.split(",")]',
        'named = [v for value in values for v in value.split(",")]',
    ),
    M(
        "lr-claim-03",
        "by-claim",
        "an unknown ID after the first is accepted (silently ignored)",
        "unknown = [v for v in named if v not in CLAIMS]",
        "unknown = [v for v in named[:1] if v not in CLAIMS]",
    ),
    M(
        "lr-claim-04",
        "by-claim",
        "the refusal of an unknown ID does not list the known ones",
        "f\"{FLAG} {', '.join(map(repr, unknown))}: not a claim of CLAIMS.md; \"\n            f\"known IDs: {', '.join(CLAIMS)}\"",
        'f"{FLAG} {\', \'.join(map(repr, unknown))}: not a claim of CLAIMS.md; "\n            f"see CLAIMS.md"',
    ),
    M(
        "lr-claim-05",
        "by-claim",
        "the selection in the order given, duplicates kept (not CLAIMS.md order, once each)",
        "return tuple(c for c in CLAIMS if c in named)",
        "return tuple(named)",
    ),
    M(
        "lr-claim-06",
        "by-claim",
        "deselection inverted: the tests of the other claims run",
        "(keep if self.ids & set(claim_ids(item)) else drop).append(item)",
        "(drop if self.ids & set(claim_ids(item)) else keep).append(item)",
    ),
    M(
        "lr-claim-07",
        "by-claim",
        "tests without any claim marker are kept too",
        "(keep if self.ids & set(claim_ids(item)) else drop).append(item)",
        "(keep if not claim_ids(item) or self.ids & set(claim_ids(item)) else drop).append(item)",
    ),
    M(
        "lr-claim-08",
        "by-claim",
        "the dropped tests are removed without pytest_deselected (no 'N deselected')",
        "            config.hook.pytest_deselected(items=drop)\n",
        "",
        file="ledger/claim_marker.py",
    ),
    M(
        "lr-claim-09",
        "by-claim",
        "only the first selected claim's tests run",
        "self.ids = frozenset(ids)",
        "self.ids = frozenset(ids[:1])",
    ),
    M(
        "lr-claim-10",
        "by-claim",
        "a claim not selected shows 'not covered' instead of skipped",
        "        verdict=SKIPPED,\n        title=claim.title,",
        '        verdict="not covered",\n        title=claim.title,',
        file="ledger/claim_marker.py",
    ),
    M(
        "lr-claim-11",
        "by-claim",
        "the reason of a claim not selected loses 'not selected'",
        "return f\"not selected: this run ran only {' '.join(f'{FLAG} {c}' for c in ids)}\"",
        "return f\"this run ran only {' '.join(f'{FLAG} {c}' for c in ids)}\"",
    ),
    M(
        "lr-claim-12",
        "by-claim",
        "a test's claim IDs are not added to its keywords (-k Q2 finds nothing)",
        "                    item.extra_keyword_matches.update(ids)\n",
        "",
    ),
    M(
        "lr-claim-13",
        "by-claim",
        "the ledger is not told the selection: every other claim 'not covered'",
        "controller.ledger.selected = chosen",
        "controller.ledger.selected = None",
    ),
    M(
        "lr-claim-14",
        "by-claim",
        "a claim not selected carries no not-run part (its reason lost from the entry)",
        "        not_run=(NotRun(Part.ASSERTIONS, reason),),\n",
        "        not_run=(),\n",
        file="ledger/claim_marker.py",
    ),
)
