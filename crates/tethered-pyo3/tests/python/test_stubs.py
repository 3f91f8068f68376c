"""The example module's typing stubs (examples/python/ext/tethered_example.pyi) name exactly what
the module has, with the same parameters, and ship in its wheel."""

import ast
import inspect
import pathlib
import sys

import tethered_example as ext

STUBS = pathlib.Path(__file__).parents[4] / "examples" / "python" / "ext" / "tethered_example.pyi"


def stub_tree():
    return ast.parse(STUBS.read_text(), filename=str(STUBS))


def test_the_stubs_name_every_public_function_and_class_and_nothing_else():
    tree = stub_tree()
    stubbed = {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef))
        # TypedDicts of the return values
        and node.name
        not in ("Report", "Stats", "ByReason", "CancelToReturn", "CancelStats", "StubbornJob")
    }
    # The wheel makes a package of the module (for the stubs); its native submodule is no API.
    public = {
        name
        for name in dir(ext)
        if not name.startswith("_") and not inspect.ismodule(getattr(ext, name))
    }
    assert stubbed == public


def test_the_stubs_give_each_function_its_parameters():
    for node in stub_tree().body:
        if not isinstance(node, ast.FunctionDef):
            continue
        stubbed = [arg.arg for arg in node.args.args]
        actual = list(inspect.signature(getattr(ext, node.name)).parameters)
        assert stubbed == actual, node.name


def test_the_stubs_ship_in_the_installed_package():
    installed = [
        pathlib.Path(entry) / "tethered_example" / "__init__.pyi" for entry in sys.path
    ] + [pathlib.Path(entry) / "tethered_example.pyi" for entry in sys.path]
    found = [path for path in installed if path.is_file()]
    assert found, "no tethered_example stubs next to the installed module"
    assert found[0].read_text() == STUBS.read_text()
