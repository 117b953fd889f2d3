"""A griffe extension for the documentation site (mkdocs.yml): the docstrings'
reStructuredText as Markdown (mkdocstrings renders docstrings as Markdown).

The source's docstrings cross-reference with Sphinx roles
(``:class:`Report```, ``:func:`~aftertrain.stats.chi2```,
``:attr:`Claim.defining <aftertrain.claims.catalogue.Claim.defining>```);
mkdocstrings renders docstrings as Markdown, where a role would show as
typed. Each becomes the code span of the text it shows (``Report``,
``chi2``, ``Claim.defining``), a literal block's ``::`` a plain colon, and a
simple table (columns under ``=====  =====`` borders) a Markdown table.

Griffe sees no module attribute assigned by unpacking
(``FAILURE, EDGE, MISMATCH = "failure", "edge", "mismatch"``); each name of
such a line becomes an attribute with its value, so a page can document it.
"""

from __future__ import annotations

import ast
import re

import griffe

#: ``:role:`text``` or ``:py:role:`~text <target>```: the shown text is group 1.
_ROLE = re.compile(r":(?:py:)?[a-z]+:`~?([^`<]+?)(?:\s*<[^`>]+>)?`")
#: A simple table's border: runs of ``=`` separated by spaces, one per column.
_BORDER = re.compile(r"^=+(?: +=+)+ *$")
#: A paragraph that ends with ``::`` introduces a literal (indented) block.
_LITERAL = re.compile(r"(?<=\S)::$", re.MULTILINE)


def markdown_of(text: str) -> str:
    """``text`` with every role a code span of its last dotted part when it
    was written ``~a.b``, else of its whole text, and ``::`` line ends as ``:``."""

    def span(match: re.Match[str]) -> str:
        shown = match.group(1).strip()
        if match.group(0).split("`", 1)[1].startswith("~"):
            shown = shown.rsplit(".", 1)[-1]
        return f"`{shown}`"

    return tables_of(_LITERAL.sub(":", _ROLE.sub(span, text)))


def _row(line: str, starts: list[int]) -> str:
    """A simple table's line as a Markdown row: a column runs from the start
    of its border run to the start of the next."""
    cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def tables_of(text: str) -> str:
    """``text`` with each simple table (a border, header rows, a border, body
    rows, a border) as a Markdown table."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        ends = [j for j in range(i + 1, len(lines)) if _BORDER.match(lines[j])][:2]
        if not (_BORDER.match(lines[i]) and len(ends) == 2):
            out.append(lines[i])
            i += 1
            continue
        starts = [m.start() for m in re.finditer(r"=+", lines[i])]
        header, body = lines[i + 1 : ends[0]], lines[ends[0] + 1 : ends[1]]
        out += ["", *(_row(h, starts) for h in header), "|" + " --- |" * len(starts)]
        out += [*(_row(b, starts) for b in body if b.strip()), ""]
        i = ends[1] + 1
    return "\n".join(out)


class RstAsMarkdown(griffe.Extension):
    """Rewrites each object's docstring once, as griffe loads it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_of(obj.docstring.value)

    def on_module_members(self, *, node: ast.AST | object, mod: griffe.Module, **kwargs: object) -> None:
        if not isinstance(node, ast.Module):
            return  # loaded by inspection: every attribute was seen
        for line in node.body:
            if not (isinstance(line, ast.Assign) and len(line.targets) == 1):
                continue
            names, values = line.targets[0], line.value
            if not (isinstance(names, ast.Tuple) and isinstance(values, ast.Tuple)):
                continue
            for name, value in zip(names.elts, values.elts, strict=True):
                if isinstance(name, ast.Name) and name.id not in mod.members:
                    attribute = griffe.Attribute(
                        name.id, lineno=line.lineno, endlineno=line.end_lineno, value=ast.unparse(value)
                    )
                    attribute.labels.add("module-attribute")
                    mod.set_member(name.id, attribute)
