"""mkdocs hooks of npurt's site: pages whose content is generated from the code.

`<!-- npurt:settings-table -->` becomes the settings registry's table (npurt.envvars),
`<!-- npurt:cli -->` the help of every `npurt` subcommand, from its argparse parser, and
`<!-- npurt:examples -->` the list of examples/ with each one's docstring and the command that
runs it, so these pages never drift from the code.
"""
from __future__ import annotations

import ast
import os
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "src"))
REPO = "https://github.com/npurt/npurt/blob/main"


def run_command(rel: str) -> str:
    """How an example runs (what CI runs too)."""
    if rel.startswith("examples/pyacl/"):
        return f"npurt run {rel}"
    if rel.startswith("examples/torch/"):
        return f"npurt run --torch-npu {rel}"
    if rel.startswith("examples/distributed/"):
        return f"npurt launch -n 2 {rel}"
    return f"python {rel}"


def _examples() -> str:
    parts = []
    for folder in sorted({os.path.dirname(p) for p in _example_files()}):
        parts.append(f"## {folder}/\n")
        for rel in [p for p in _example_files() if os.path.dirname(p) == folder]:
            with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
                doc = ast.get_docstring(ast.parse(f.read())) or ""
            first = doc.split("\n\n")[0].replace("\n", " ")
            parts.append(f"### [{os.path.basename(rel)}]({REPO}/{rel})\n\n{first}\n\n"
                         f"```text\n{run_command(rel)}\n```\n")
    return "\n".join(parts)


def _example_files() -> list[str]:
    out = []
    for dirpath, _, names in os.walk(os.path.join(ROOT, "examples")):
        out += [os.path.relpath(os.path.join(dirpath, n), ROOT) for n in names if n.endswith(".py")]
    return sorted(out)


def _cli_reference() -> str:
    from npurt.apps import cli
    os.environ["COLUMNS"] = "100"          # argparse wraps to the terminal: a fixed width here
    parts = []
    for name, line in cli.COMMANDS.items():
        help_text = cli.PARSERS[name]().format_help().rstrip()
        parts.append(f"## npurt {name}\n\n{line[0].upper() + line[1:]}.\n\n```text\n{help_text}\n```\n")
    top = cli.parser().format_help().rstrip()
    return f"```text\n{top}\n```\n\n" + "\n".join(parts)


def _this_npurt() -> None:
    """Import npurt from this checkout's src/, not an installed copy something loaded first."""
    src = os.path.join(ROOT, "src")
    if sys.path[0] != src:
        sys.path.insert(0, src)
    loaded = sys.modules.get("npurt")
    if loaded is not None and not os.path.abspath(loaded.__file__).startswith(src + os.sep):
        for name in [n for n in sys.modules if n == "npurt" or n.startswith("npurt.")]:
            del sys.modules[name]


def on_page_markdown(markdown: str, page, config, files) -> str:
    _this_npurt()
    if "<!-- npurt:settings-table -->" in markdown:
        from npurt.envvars import table_markdown
        markdown = markdown.replace("<!-- npurt:settings-table -->", table_markdown())
    if "<!-- npurt:examples -->" in markdown:
        markdown = markdown.replace("<!-- npurt:examples -->", _examples())
    if "<!-- npurt:cli -->" in markdown:
        markdown = markdown.replace("<!-- npurt:cli -->", _cli_reference())
    return markdown
