"""`alpha/projection` over the protocol: every role of every plan of examples/digits.alpha gives
the schedule the core projects, and bad requests are answered with clear LSP errors."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_lsp
from pygls.exceptions import JsonRpcException
from test_lsp_session import CONFIG, EXAMPLES, Client, init_params

from alpha_core.plan.admission import admit
from alpha_core.plan.projection import project
from alpha_core.workspace.analysis import Workspace

IN_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
DIGITS = (EXAMPLES / "digits.alpha").read_text()
URI = (EXAMPLES / "digits.alpha").as_uri()


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: Client):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(init_params())
    assert await lsp_client.published_for(URI, lsp_client.open(URI, DIGITS)) == []
    yield
    await lsp_client.shutdown_session()


async def _project(client: Client, **params: str) -> Any:
    return await client.protocol.send_request_async("alpha/projection", params)


def _get(obj: Any, name: str) -> Any:
    """A field of a result, which the client hands back as a named tuple of its JSON."""
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


@IN_MODULE_LOOP
async def test_every_role_of_every_plan(client: Client) -> None:
    analysis = Workspace().analyze_file(str(EXAMPLES / "digits.alpha"))
    plans = analysis.checked.plans
    assert sorted(plans) == ["pair", "star", "tree", "uneven"]
    seen = 0
    for plan in plans.values():
        for index in range(plan.membership.total):
            schedule = project(plan, index)
            result = await _project(client, uri=URI, plan=plan.name, role=schedule.name)
            assert _get(result, "text") == schedule.show()
            assert _get(result, "role") == schedule.name
            assert _get(result, "index") == index
            assert _get(result, "roles") == plan.membership.total
            ops = _get(result, "ops")
            assert [(_get(o, "kind"), _get(o, "lo"), _get(o, "hi")) for o in ops] == [
                (op.kind, op.a, op.b) for op in schedule.ops
            ]
            assert [_get(o, "text") for o in ops] == [
                op.show(schedule.links) for op in schedule.ops
            ]
            links = _get(result, "links")
            assert [(_get(k, "peerName"), _get(k, "accept")) for k in links] == [
                (k.peer_name, k.accept) for k in schedule.links
            ]
            admission = _get(result, "admission")
            expected = admit(plan, None, index)
            assert _get(admission, "text") == expected.show()
            assert _get(admission, "headroom") == expected.headroom
            seen += 1
    assert seen == 2 + 5 + 8 + 3


@IN_MODULE_LOOP
async def test_the_pairing_chooses_the_admission_profile(client: Client) -> None:
    analysis = Workspace().analyze_file(str(EXAMPLES / "digits.alpha"))
    pairing = analysis.checked.pairings["local"]
    result = await _project(client, uri=URI, plan="pair", role="worker[1]", pairing="local")
    admission = _get(result, "admission")
    assert _get(admission, "pairing") == "local"
    assert _get(admission, "text") == admit(pairing.plan, pairing, 1).show()


async def _error(client: Client, **params: str) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await _project(client, **params)
    return info.value


@IN_MODULE_LOOP
async def test_errors_say_what_is_wrong(client: Client) -> None:
    err = await _error(client, uri=URI, plan="ring", role="worker[0]")
    assert err.code == -32803
    assert "no plan named `ring`" in err.message and "pair, star, tree, uneven" in err.message
    err = await _error(client, uri=URI, plan="pair", role="worker[2]")
    assert "plan `pair` has no role `worker[2]`" in err.message
    assert "worker[0..2]" in err.message
    err = await _error(client, uri=URI, plan="star", role="spoke")
    assert "has no role `spoke`" in err.message and "hub" in err.message
    err = await _error(client, uri=URI, plan="pair")
    assert err.code == -32602 and "`role`" in err.message
    # a refused plan: the refusal is named
    uri = (EXAMPLES / "projection-refused.alpha").as_uri()  # beside data/digits.csv
    text = DIGITS.replace("roles worker[3]", "roles worker[30]")
    diags = await client.published_for(uri, client.open(uri, text))
    assert [d.code for d in diags] == ["role-without-leaves"]
    err = await _error(client, uri=uri, plan="uneven", role="worker[0]")
    assert "plan `uneven` is refused" in err.message and "role-without-leaves" in err.message
    client.close(uri)
