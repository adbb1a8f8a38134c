"""Reading a parse tree's calls (issue 24): fields yield OIDs; names that read like fields, in
any escaping or line wrapping the server applies, never hide one."""

from __future__ import annotations

from context_service.adapters.postgres.sandbox.calls import Function, allowed
from context_service.adapters.postgres.sandbox.parse_tree import calls, tokens

TREE = ("{QUERY :commandType 1 :targetList ({TARGETENTRY :expr {FUNCEXPR :funcid 2049\n"
        ":funcresulttype 25 :args ({OPEXPR :opno 98 :opfuncid 0 :opresulttype 16} {AGGREF\n"
        ":aggfnoid 2147 :aggtype 20 :aggargtypes (o 23 1184)})} :resname :funcid\\ 12\n"
        ":ressortgroupref 0} {WINDOWFUNC :winfnoid 3100 :wintype 20}) :rowMarks <>\n"
        ":sortClause ({SORTGROUPCLAUSE :eqop 96 :sortop 97}) :constvalue 4 [ 1 0 0 0 ]}")


def test_every_function_operator_and_type_field_is_read() -> None:
    found = calls(TREE)
    assert found.functions == {2049, 2147, 3100}
    assert found.operators == {98, 96, 97}
    assert {25, 16, 20, 23, 1184} <= found.types


def test_an_escaped_name_is_one_token_and_never_a_field() -> None:
    assert (":funcid 12", True) in list(tokens(TREE))
    assert 12 not in calls(TREE).functions
    # the server wraps long lines at a space, an escaped one included
    assert list(tokens(":resname a\\\nb :funcid 7")) == [
        (":resname", False), ("a\nb", True), (":funcid", False), ("7", False)]
    assert calls(":resname a\\\nb :funcid 7").functions == {7}


def test_the_allow_list_takes_built_in_value_functions_only() -> None:
    assert allowed(Function(1, "lower", True, "i", "f"))
    assert allowed(Function(2, "now", True, "s", "f"))
    assert allowed(Function(3, "random", True, "v", "f"))
    assert allowed(Function(4, "timestamptz_lt_date", True, "s", "f"))
    assert not allowed(Function(5, "current_setting", True, "s", "f"))
    assert not allowed(Function(6, "pg_sleep", True, "v", "f"))
    assert not allowed(Function(7, "pg_partition_root", True, "i", "f"))  # reads the catalog
    assert not allowed(Function(16384, "lower", True, "i", "f"))  # not a built-in
    assert not allowed(Function(8, "lower", False, "i", "f"))  # another schema
