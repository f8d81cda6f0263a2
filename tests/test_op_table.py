"""The operation table (alpha_core/ops): every op has every phase, and every op a graph builder
makes has an entry.

For each op of the table: its shape rule exists, its adjoint is a rule of autodiff or marked
(leaf, not differentiable, itself an adjoint), its host emitter family and its GPU body family
(or the named refusal) exist, and the NumPy reference of the tests evaluates it. Then every
example and every layer-test system is built, model and training step, and each node's op must
be in the table with its arity and shape rule; a scan of the compiler's sources finds every op
a builder names literally.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import layer_sources as L
import pytest
import reference
import reference_layers

from alpha_core.autodiff import reverse
from alpha_core.autodiff.reverse import training_step
from alpha_core.check.program import Program
from alpha_core.ir.graph import Graph
from alpha_core.ops import (
    BUILTINS,
    GPU_REFUSAL,
    IS_ADJOINT,
    NO_ADJOINT_RULE,
    OPS,
    REF_EVALUATE,
    REF_LAYERS,
)
from alpha_core.ops.shapes import RULES, expected_shape
from alpha_core.workspace.analysis import Workspace

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "alpha_core"

# the activations no example uses, in one system so that every op of the table is built
EXTRA = L.LOSS_SYSTEM.replace(
    "return tanh(x @ w1 + b1) @ w2", "return log(sigmoid(x @ w1 + b1) + 1.0) @ w2"
) % {"classes": 3, "outputs": 3, "loss": "softmax_cross_entropy(model(x), y)", "steps": 5}


def _sources() -> Iterator[tuple[str, str, Path | None]]:
    for path in sorted((ROOT / "examples").glob("*.alpha")):
        yield path.name, path.read_text(), path
    for body in sorted(L.BODIES):
        yield f"seq {body}", L.seq_source(body, regression=body == "log_softmax"), None
    for body in sorted(L.CNN_BODIES):
        yield f"cnn {body}", L.cnn_source(body), None
    yield "embed", L.EMBED, None
    yield "binary", L.loss_source(L.BINARY), None
    yield "smooth", L.loss_source(L.SMOOTH), None
    yield "dropout", L.DROPOUT, None
    yield "extra", EXTRA, None


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Graph]]:
    """The model graph and the training step's graph of every system the tests build."""
    folder = tmp_path_factory.mktemp("systems")
    out: list[tuple[str, Graph]] = []
    for name, text, path in _sources():
        where = path if path is not None else folder / "system.alpha"
        program, diags = Workspace().analyze(str(where), text).program()
        assert isinstance(program, Program), (name, [d.message for d in diags])
        out.append((f"{name} model", program.model))
        out.append((f"{name} step", training_step(program).graph))
    return out


# -- every entry has every phase ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_has_every_phase(name: str) -> None:
    from alpha_core.codegen.gpu_nodes import NodeBodies
    from alpha_core.codegen.graph_emit import GraphEmitter
    from alpha_core.codegen.outer_split import RULES as RULES_OUTER

    e = OPS[name]
    assert e.name == name
    assert e.shape in RULES, f"{name}: no shape rule {e.shape!r}"
    assert e.adjoint in reverse.ADJOINTS or e.adjoint in NO_ADJOINT_RULE, (
        f"{name}: no adjoint rule {e.adjoint!r} in autodiff/reverse.py, and not marked "
        "leaf, not differentiable or itself an adjoint"
    )
    if e.grad is not None:
        assert OPS[e.grad].adjoint == IS_ADJOINT, f"{name}: its adjoint op {e.grad} is not one"
    assert e.grad_reads in ("x", "y")
    assert e.host in GraphEmitter.FAMILIES, f"{name}: no host emitter family {e.host!r}"
    assert e.outer in RULES_OUTER, f"{name}: no rule {e.outer!r} of codegen/outer_split.py"
    assert not (e.elementwise and e.outer), f"{name}: element-wise ops split by element"
    assert e.gpu in NodeBodies.FAMILIES or e.gpu == GPU_REFUSAL, (
        f"{name}: no GPU body family {e.gpu!r} and not refused `{GPU_REFUSAL}`"
    )
    if e.reference == REF_LAYERS:
        assert name in reference_layers.LAYER, f"{name}: not in tests/reference_layers.LAYER"
    else:
        assert e.reference == REF_EVALUATE
        assert f'"{name}"' in inspect.getsource(reference.evaluate), (
            f"{name}: tests/reference.py evaluate has no branch for it"
        )


def test_the_reference_evaluates_no_op_outside_the_table() -> None:
    assert set(reference_layers.LAYER) <= set(OPS), sorted(set(reference_layers.LAYER) - set(OPS))


def test_every_adjoint_rule_is_used() -> None:
    used = {e.adjoint for e in OPS.values()}
    assert set(reverse.ADJOINTS) <= used, sorted(set(reverse.ADJOINTS) - used)


def test_the_activation_recipes_are_the_tables() -> None:
    """semantics/activations.py holds a recipe for each `layer` activation and its adjoint op
    (the package sits below the table and cannot read it)."""
    from alpha_core.semantics import activations

    unary = [n for n, e in OPS.items() if e.adjoint == "unary" and e.host == "layer"]
    assert list(activations.UNARY) == unary
    assert list(activations.GRADS) == [OPS[n].grad for n in unary]


def test_every_builtin_is_checked_and_shown_as_the_table_says() -> None:
    from alpha_core.check.builtins import CALLS, REDUCE, UNARY
    from alpha_core.check.calls import HANDLERS
    from alpha_core.query.signatures import SUMMARIES, builtin_signature

    assert set(HANDLERS) | set(REDUCE) == set(BUILTINS)
    assert list(UNARY) == [n for n, b in BUILTINS.items() if b.kind == "unary"]
    assert list(REDUCE) == [n for n, b in BUILTINS.items() if b.kind == "reduce"]
    assert list(CALLS) == [n for n, b in BUILTINS.items() if b.kind in ("pairwise", "call")]
    for name, b in BUILTINS.items():
        assert all(op in OPS for op in b.ops), name
        assert builtin_signature(name) == b.call, name
        assert SUMMARIES[name] == b.summary, name


# -- every op a builder makes is in the table ---------------------------------------------------


def test_every_built_node_is_in_the_table_with_its_arity_and_shape(
    graphs: list[tuple[str, Graph]],
) -> None:
    seen: set[str] = set()
    for where, graph in graphs:
        for i, node in enumerate(graph.nodes):
            assert node.op in OPS, f"{where} %{i}: `{node.op}` is not in alpha_core/ops"
            e = OPS[node.op]
            seen.add(node.op)
            assert len(node.inputs) == e.arity, f"{where} %{i} {node.op}: arity"
            ins = [graph[j].shape for j in node.inputs]
            want = expected_shape(e.shape, ins, node.attrs)
            assert want is None or want == node.shape, (
                f"{where} %{i} {node.op}{tuple(ins)} is {node.shape}, its rule says {want}"
            )
    # and every entry is reached by some system: none is dead
    assert seen == set(OPS), sorted(set(OPS) - seen)


_LITERAL = re.compile(r'(?<![\w.])(?:lw\.|self\.)?b\.add\(\s*"(\w+)"')


def test_every_op_a_builder_names_is_in_the_table() -> None:
    named: dict[str, str] = {}
    for path in sorted(CORE.rglob("*.py")):
        for found in _LITERAL.finditer(path.read_text()):
            named.setdefault(found.group(1), str(path.relative_to(ROOT)))
    assert named, "the scan found no graph builder"
    missing = {op: where for op, where in named.items() if op not in OPS}
    assert not missing, missing


def test_the_table_is_read_without_llvmlite() -> None:
    code = (
        "import sys\n"
        "import alpha_core.ops, alpha_core.ops.shapes, alpha_core.check.builtins\n"
        "import alpha_core.query.signatures, alpha_core.autodiff.reverse\n"
        "assert 'llvmlite' not in sys.modules, 'llvmlite imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
