# ruff: noqa: E501  (a mutant's snippet is quoted whole, as it stands in src/)
"""The capabilities' bug set (``tools/mutate.py --set capabilities``): the
ledger file's JSON Schema and format, and the README's claims table.

Written from ``src/`` and ``docs/`` alone (docs/ledger.md, docs/mutation.md,
tools/mutate.py and the earlier sets), before any of the two capabilities'
test files was opened, by a helper who did not write those tests.

- ``schema``: ``claims/claims.schema.json`` (shipped in the package; the
  harness searches the package's ``.json`` files too) and
  ``claims/ledgerfile.py`` (:data:`FORMAT`, :data:`SCHEMA_PATH`, writing the
  file, refusing another format). The schema's slips: an enum narrowed or a
  word misspelt, a required key dropped, extra keys allowed, a pattern or a
  bound off by one; the module's: the format bumped or its check loosened,
  the refusal's message without its command, a key not written, a write not
  atomic, a reader's list of known words one short.
- ``readme-table``: ``report/assemble.py`` (``readme_rows``,
  ``readme_header``, ``readme_table``, ``update_readme`` and the markers):
  the statement for the title, the models' order, the primary's verdict in
  every column, the verdict's mark dropped, rows from the ledger rather than
  the catalogue, a column short, a marker lost or renamed, the table run
  into the end marker, the write not atomic, the other models dropped.

Same format as tools/mutants.py (:class:`mutants.Mutant`); ids ``cap-schema-NN``
and ``cap-readme-NN``; ``python tools/mutate.py --set capabilities --list``
locates every snippet.
"""

from __future__ import annotations

from mutants import Mutant

M = Mutant

MUTANTS: tuple[Mutant, ...] = (
    # --- claims/claims.schema.json -----------------------------------------------------------
    M(
        "cap-schema-01",
        "schema",
        "schema's verdict enum narrowed: 'not decided here' missing",
        '"holds", "not decided here", "skipped", "not covered"]',
        '"holds", "skipped", "not covered"]',
    ),
    M(
        "cap-schema-02",
        "schema",
        "schema's outcome enum narrowed: 'untimed' missing",
        '"inconclusive", "untimed", "passed", "skipped"]',
        '"inconclusive", "passed", "skipped"]',
    ),
    M(
        "cap-schema-03",
        "schema",
        "schema's part enum narrowed: 'teeth' missing",
        '"timed part", "teeth", "method"',
        '"timed part", "method"',
    ),
    M(
        "cap-schema-04",
        "schema",
        "schema's claim no longer requires 'beside' (a key the writer always writes)",
        '"parts", "defining", "undecided", "beside", "reasons"',
        '"parts", "defining", "undecided", "reasons"',
    ),
    M(
        "cap-schema-05",
        "schema",
        "schema's test no longer requires 'reads_model'",
        '"part", "not_run", "reads_model"]',
        '"part", "not_run"]',
    ),
    M(
        "cap-schema-06",
        "schema",
        "schema's top level allows keys it does not name",
        '"model_free_tables"],\n  "additionalProperties": false,',
        '"model_free_tables"],\n  "additionalProperties": true,',
    ),
    M(
        "cap-schema-07",
        "schema",
        "schema's format const is 1 (not FORMAT)",
        '"const": 2',
        '"const": 1',
    ),
    M(
        "cap-schema-08",
        "schema",
        "schema's claim id pattern takes one digit only (Q10, Q11 refused)",
        '"pattern": "^[A-Z][0-9]+$"',
        '"pattern": "^[A-Z][0-9]$"',
    ),
    M(
        "cap-schema-09",
        "schema",
        "schema's model_sha256 pattern is a commit's 40 hex digits, not a SHA-256's 64",
        'SHA-256 of that model\'s checkpoint.", "type": ["string", "null"], "pattern": "^[0-9a-f]{64}$"',
        'SHA-256 of that model\'s checkpoint.", "type": ["string", "null"], "pattern": "^[0-9a-f]{40}$"',
    ),
    M(
        "cap-schema-10",
        "schema",
        "schema's beside counts may be 0 (a count of no tests)",
        '"additionalProperties": {"type": "integer", "minimum": 1}',
        '"additionalProperties": {"type": "integer", "minimum": 0}',
    ),
    M(
        "cap-schema-11",
        "schema",
        "schema's part verdict 'not run' misspelt 'not-run'",
        '{"const": "not run"}',
        '{"const": "not-run"}',
    ),
    M(
        "cap-schema-12",
        "schema",
        "schema's meta.threads may not be null (runmeta gives None when not known)",
        '"torch\'s thread count.", "type": ["integer", "null"]',
        '"torch\'s thread count.", "type": "integer"',
    ),
    # --- claims/ledgerfile.py ------------------------------------------------------------------
    M(
        "cap-schema-13",
        "schema",
        "FORMAT bumped to 3 (the schema, the committed ledgers and docs say 2)",
        "FORMAT = 2\n",
        "FORMAT = 3\n",
    ),
    M(
        "cap-schema-14",
        "schema",
        "SCHEMA_PATH names a file that is not shipped",
        'with_name("claims.schema.json")',
        'with_name("schema.json")',
    ),
    M(
        "cap-schema-15",
        "schema",
        "a file without 'format' read as current (docs: refused the same way)",
        'if data.get("format") != FORMAT:',
        'if data.get("format", FORMAT) != FORMAT:',
    ),
    M(
        "cap-schema-16",
        "schema",
        "only a newer format refused: an older integer format read as current",
        'if data.get("format") != FORMAT:',
        'if not isinstance(data.get("format"), int) or data.get("format") > FORMAT:',
    ),
    M(
        "cap-schema-17",
        "schema",
        "the refusal of another format no longer says how to write a current one",
        'f"format {FORMAT}: write it again with `python -m pytest --claims-json FILE`"',
        'f"format {FORMAT}"',
    ),
    M(
        "cap-schema-18",
        "schema",
        "to_json drops model_free_tables (the reader tolerates it, the schema requires it)",
        '            "model_free_tables": list(self.model_free_tables),\n',
        "",
    ),
    M(
        "cap-schema-19",
        "schema",
        "LedgerFile.write not atomic (a plain write_text)",
        'return atomic_write(path, json.dumps(self.to_json(), indent=1, default=str) + "\\n")',
        'path.write_text(json.dumps(self.to_json(), indent=1, default=str) + "\\n")\n        return path',
    ),
    M(
        "cap-schema-20",
        "schema",
        "to_json returns Python objects (tuples, enums), not the JSON it writes",
        "return json.loads(json.dumps(data, default=str))",
        "return data",
    ),
    M(
        "cap-schema-21",
        "schema",
        "the reader's known verdicts one short: a ledger with a 'not covered' claim refused",
        'e["verdict"] not in VERDICTS',
        'e["verdict"] not in VERDICTS[:-1]',
    ),
    M(
        "cap-schema-22",
        "schema",
        "the reader's known outcomes one short: a test that errored refused",
        't["outcome"] not in OUTCOMES',
        't["outcome"] not in OUTCOMES[1:]',
    ),
    # --- report/assemble.py: the README's claims table ------------------------------------------
    M(
        "cap-readme-01",
        "readme-table",
        "the claim column holds the statement, not the title",
        "[c.id, c.title, c.any_model] + [verdict_mark",
        "[c.id, c.statement, c.any_model] + [verdict_mark",
    ),
    M(
        "cap-readme-02",
        "readme-table",
        "the primary ledger's verdict last (the header puts it first)",
        "ledgers = [ledger, *(others or {}).values()]",
        "ledgers = [*(others or {}).values(), ledger]",
    ),
    M(
        "cap-readme-03",
        "readme-table",
        "every verdict column the primary ledger's",
        "verdict_mark(led.verdict(c.id)) for led in ledgers]",
        "verdict_mark(ledger.verdict(c.id)) for led in ledgers]",
    ),
    M(
        "cap-readme-04",
        "readme-table",
        "verdicts written bare (no bold for broken / does not reproduce)",
        "verdict_mark(led.verdict(c.id)) for led in ledgers]",
        "str(led.verdict(c.id)) for led in ledgers]",
    ),
    M(
        "cap-readme-05",
        "readme-table",
        "rows from the primary ledger's claims, not the catalogue (a claim the run left out has no row)",
        "        for c in CLAIMS.values()\n    ]",
        "        for c in ledger.claims\n    ]",
        file="report/assemble.py",
    ),
    M(
        "cap-readme-06",
        "readme-table",
        "header without the primary model's column (a column short)",
        "labels = [multimodel.model_label(ledger), *(others or {})]",
        "labels = [*(others or {})]",
    ),
    M(
        "cap-readme-07",
        "readme-table",
        "the other models' verdicts dropped from the rows (header keeps their columns)",
        "return markdown_table(readme_header(ledger, others), readme_rows(ledger, others))",
        "return markdown_table(readme_header(ledger, others), readme_rows(ledger))",
    ),
    M(
        "cap-readme-08",
        "readme-table",
        "update_readme writes the primary model's table only",
        '"\\n" + readme_table(ledger, others) + "\\n"',
        '"\\n" + readme_table(ledger) + "\\n"',
    ),
    M(
        "cap-readme-09",
        "readme-table",
        "the begin marker dropped on writing (the next update finds no markers)",
        "atomic_write(readme, head + README_BEGIN + ",
        "atomic_write(readme, head + ",
    ),
    M(
        "cap-readme-10",
        "readme-table",
        "the table's last row runs into the end marker (no newline before it)",
        'readme_table(ledger, others) + "\\n" + README_END + tail',
        "readme_table(ledger, others) + README_END + tail",
    ),
    M(
        "cap-readme-11",
        "readme-table",
        "only the begin marker checked: a README without the end marker fails with a bare ValueError",
        "if README_BEGIN not in text or README_END not in text:",
        "if README_BEGIN not in text:",
    ),
    M(
        "cap-readme-12",
        "readme-table",
        "update_readme not atomic (a plain write_text)",
        "    atomic_write(readme, head + README_BEGIN + ",
        "    Path(readme).write_text(head + README_BEGIN + ",
    ),
    M(
        "cap-readme-13",
        "readme-table",
        "the end marker's text changed (the README's marker no longer matches)",
        'README_END = "<!-- end of claims table -->"',
        'README_END = "<!-- end claims table -->"',
    ),
    M(
        "cap-readme-14",
        "readme-table",
        "a folder named as the README passes the first check (IsADirectoryError, not ValueError)",
        "if not Path(readme).is_file():",
        "if not Path(readme).exists():",
    ),
)
