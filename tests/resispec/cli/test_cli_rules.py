"""The CLI's own rules hold in every module (issue 29, item 5): validated option types, strict JSON, one
error path with one format."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from resispec.cli import build_parser

CLI = Path(__file__).resolve().parents[3] / "resispec" / "cli"
ONE_ERROR_PATH = {"__init__.py", "arguments.py"}
"""The modules allowed to turn an exception into an error line: ``main`` and the option types."""


def _parsers(parser: argparse.ArgumentParser, name: str = "resispec"):
    """``(name, parser)`` for the parser and every subcommand's, depth first."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def test_every_option_of_every_subcommand_has_a_validated_type():
    parsers = list(_parsers(build_parser()))
    assert len(parsers) > 20  # every command, bench and sim and log subcommand walked
    plain = [f"{name} {'/'.join(action.option_strings) or action.dest}: type={action.type.__name__}"
             for name, parser in parsers for action in parser._actions if action.type in (int, float)]
    assert not plain, plain


def _calls(tree: ast.AST, module: str, attribute: str) -> list[int]:
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr == attribute
            and isinstance(node.func.value, ast.Name) and node.func.value.id == module]


@pytest.mark.parametrize("path", sorted(CLI.glob("*.py")), ids=lambda path: path.name)
def test_json_is_strict_and_errors_take_the_one_path(path):
    tree = ast.parse(path.read_text())
    if path.name != "output.py":
        assert not _calls(tree, "json", "dumps"), f"{path.name}: print JSON with resispec.cli.output.strict_json"
    if path.name in ONE_ERROR_PATH:
        return
    caught = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.ExceptHandler) and node.type is not None
              and any(isinstance(name, ast.Name) and name.id in ("ValueError", "OSError", "SchemaError")
                      for name in (node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]))
              and not any(isinstance(child, ast.Raise) for child in ast.walk(node))]
    assert not caught, f"{path.name} lines {caught}: let resispec.cli.main report the error (one format)"
    exits = _calls(tree, "sys", "exit")
    assert not exits, f"{path.name} lines {exits}: return a status; main reports errors"
