"""HLO text → cost-model graph (costmodel.md §4.2) on hand-written modules in JAX 0.10.2's format: no JAX needed."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import UserError
from engine.surrogates.costmodel.hlo import BASE_FEATURE_NAMES, NODE_FEATURE_NAMES, hlo_graph, parse_instruction, split_top
from engine.surrogates.costmodel.readers import real_tpu_tiles

MODULE = """HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8,4]{1,0})->(f32[8,4]{1,0}, s32[])}

FileNames
1 "/tmp/a.py"

FunctionNames
1 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=7 end_line=7 column=11 end_column=41}

StackFrames
1 {file_location_id=1 parent_frame_id=1}


%fused_computation (param_0: f32[8,4]) -> f32[8,4] {
  %param_0 = f32[8,4]{1,0} parameter(0)
  %constant.1 = f32[] constant(2)
  %broadcast.1 = f32[8,4]{1,0} broadcast(%constant.1), dimensions={}
  ROOT %multiply.1 = f32[8,4]{1,0} multiply(%param_0, %broadcast.1), metadata={op_name="jit(f)/mul, \\"odd\\" {name}" stack_frame_id=1}
}

%body (arg: (s32[], f32[8,4])) -> (s32[], f32[8,4]) {
  %arg = (s32[], f32[8,4]{1,0}) parameter(0)
  %gte.0 = s32[] get-tuple-element(%arg), index=0
  %gte.1 = f32[8,4]{1,0} get-tuple-element(%arg), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%gte.0, %one)
  %mul_fusion = f32[8,4]{1,0} fusion(%gte.1), kind=kLoop, calls=%fused_computation
  ROOT %tuple.1 = (s32[], /*index=1*/f32[8,4]{1,0}) tuple(%next, %mul_fusion)
}

%cond (arg.1: (s32[], f32[8,4])) -> pred[] {
  %arg.1 = (s32[], f32[8,4]{1,0}) parameter(0)
  %gte.2 = s32[] get-tuple-element(%arg.1), index=0
  %limit = s32[] constant(3)
  ROOT %lt = pred[] compare(%gte.2, %limit), direction=LT
}

ENTRY %main.9 (x.1: f32[8,4]) -> (f32[8,4], s32[]) {
  %x.1 = f32[8,4]{1,0} parameter(0), metadata={op_name="x"}
  %zero = s32[] constant(0)
  %init = (s32[], f32[8,4]{1,0}) tuple(%zero, %x.1)
  %while.1 = (s32[], f32[8,4]{1,0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"3"}}
  %result = f32[8,4]{1,0} get-tuple-element(%while.1), index=1
  %count = s32[] get-tuple-element(%while.1), index=0
  %custom-call.1 = f32[4,8]{0,1} custom-call(%result), custom_call_target="my_target", api_version=API_VERSION_TYPED_FFI
  %slice.1 = f32[2,3]{1,0} slice(%custom-call.1), slice={[1:3], [0:6:2]}
  %reduce-window.1 = f32[2,1]{1,0} reduce-window(%slice.1, %zero), window={size=1x3 stride=1x3}, to_apply=%fused_computation
  ROOT %out = (f32[8,4]{1,0}, s32[]) tuple(%result, %count)
}
"""


def _graph():
    return hlo_graph(MODULE)


def _node(graph, name):
    return graph.names.index(name)


def _feature(graph, name, column):
    return graph.node_feat[_node(graph, name), NODE_FEATURE_NAMES.index(column)]


def test_entry_comes_first_and_every_instruction_is_a_node():
    graph = _graph()
    assert graph.computations == ("main.9", "fused_computation", "body", "cond")
    assert graph.node_splits.tolist() == [0, 10, 14, 21]
    assert len(graph.opcodes) == 25 and graph.node_feat.shape == (25, len(NODE_FEATURE_NAMES))
    assert graph.opcodes[_node(graph, "while.1")] == "while"
    assert graph.kernels == 4  # while, custom-call, slice, reduce-window; parameters, constants and tuples launch nothing


def test_metadata_tables_and_quoted_metadata_are_skipped():
    graph = _graph()
    assert not {"FileNames", "1"} & set(graph.names)
    assert _feature(graph, "multiply.1", "is_root") == 1


def test_edges_follow_operands_and_reach_the_roots_of_called_computations():
    graph = _graph()
    edges = {(graph.names[u], graph.names[v]) for u, v in graph.edges}
    assert ("while.1", "init") in edges
    assert ("while.1", "tuple.1") in edges and ("while.1", "lt") in edges  # body= and condition= roots
    assert ("mul_fusion", "multiply.1") in edges  # calls=
    assert ("reduce-window.1", "multiply.1") in edges  # to_apply=
    assert ("tuple.1", "next") in edges  # a /*index=1*/ comment does not hide an operand
    assert ("x.1", "zero") not in edges


def test_features_of_arrays_tuples_and_parameters():
    graph = _graph()
    assert NODE_FEATURE_NAMES[:24] == BASE_FEATURE_NAMES
    row = dict(zip(NODE_FEATURE_NAMES, graph.node_feat[_node(graph, "x.1")]))
    assert (row["element_type"], row["dim_0"], row["dim_1"], row["dim_2"], row["dim_sum"], row["dim_product"]) == (11, 8, 4, 0, 12, 32)
    assert (row["parameter_number"], row["minor_to_major_0"], row["minor_to_major_1"], row["minor_to_major_2"]) == (0, 1, 0, -1)
    out = dict(zip(NODE_FEATURE_NAMES, graph.node_feat[_node(graph, "out")]))
    assert (out["is_root"], out["element_type"], out["tuple_size"], out["dim_product"], out["minor_to_major_0"]) == (1, 13, 2, 1, -1)
    assert _feature(graph, "lt", "element_type") == 1 and _feature(graph, "zero", "parameter_number") == -1
    assert _feature(graph, "custom-call.1", "minor_to_major_0") == 0


def test_attribute_features():
    graph = _graph()
    assert _feature(graph, "broadcast.1", "dimensions_0") == 0
    window = [_feature(graph, "reduce-window.1", f"window_{kind}_{i}") for kind in ("size", "stride") for i in range(3)]
    assert window == [1, 3, 0, 1, 3, 0]
    sliced = [_feature(graph, "slice.1", f"slice_{kind}_{i}") for kind in ("start", "size") for i in range(2)]
    assert sliced == [1, 0, 2, 3]


def test_dimensions_and_dynamic_slices():
    reduce = parse_instruction("%r = f32[16]{0} reduce(%a, %c), dimensions={0,2}, to_apply=%add", 1)
    assert reduce.callees == ("add",) and reduce.operands == ("a", "c")
    graph = hlo_graph("HloModule m\n\nENTRY %e (p: f32[4,16], i: s32[]) -> f32[1,16] {\n  %p = f32[4,16]{1,0} parameter(0)\n"
                      "  %i = s32[] parameter(1)\n  ROOT %r = f32[16]{0} reduce(%p, %i), dimensions={0,2}, to_apply=%add\n}\n\n"
                      "%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
                      "  ROOT %s = f32[] add(%a, %b)\n}\n")
    assert [graph.node_feat[2, NODE_FEATURE_NAMES.index(f"dimensions_{i}")] for i in range(3)] == [0, 2, 0]
    dynamic = parse_instruction("%d = f32[1,16]{1,0} dynamic-slice(%p, %i, %i), dynamic_slice_sizes={1,16}", 1)
    assert dynamic.operands == ("p", "i", "i")
    assert dynamic.attributes["dynamic_slice_sizes"] == "{1,16}"


def test_branch_computations_and_typed_operands_of_older_xla():
    text = """HloModule m

%a (x: f32[]) -> f32[] {
  ROOT %x = f32[] parameter(0)
}

%b (y: f32[]) -> f32[] {
  %y = f32[] parameter(0)
  ROOT %n = f32[] negate(f32[] %y)
}

ENTRY %e (i: s32[], v: f32[]) -> f32[] {
  %i = s32[] parameter(0)
  %v = f32[] parameter(1)
  ROOT %c = f32[] conditional(s32[] %i, f32[] %v, f32[] %v), branch_computations={%a, %b}
}
"""
    graph = hlo_graph(text)
    edges = {(graph.names[u], graph.names[v]) for u, v in graph.edges}
    assert {("c", "x"), ("c", "n"), ("c", "i"), ("c", "v"), ("n", "y")} <= edges


def test_unknown_element_types_are_zero():
    ins = parse_instruction("%q = f4e2m1fn[2]{0} parameter(0)", 3)
    assert ins.shape.element_type == 0 and ins.shape.dims == (2,)


def test_split_top_respects_brackets_and_quotes():
    assert split_top('a={1,2}, b="x, \\"y\\"", c=(d, e)') == ["a={1,2}", 'b="x, \\"y\\""', "c=(d, e)"]


@pytest.mark.parametrize("text, message", [
    ("", "line 1: expected 'HloModule"),
    ("HloModule m\n\nENTRY %e () -> f32[] {\n  %x = f32[] parameter(0)\n}\n", "has 0 ROOT"),
    ("HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %x = f32[] add(%y, %y)\n}\n", "line 4: operand %y of %x is not defined"),
    ("HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %x = f32[] fusion(), calls=%nowhere\n}\n", "line 4: %x calls %nowhere"),
    ("HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %x = f32[ parameter(0)\n}\n", "line 4: expected a type"),
    ("HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %x = f32[] parameter(0\n}\n", "line 4: unbalanced '('"),
    ("HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %x = f32[] parameter(0)\n", "line 3: computation %e is not closed"),
    ("HloModule m\n\nwhat is this\n", "line 3: expected a computation"),
    ("HloModule m\n\n%e () -> f32[] {\n  ROOT %x = f32[] parameter(0)\n}\n", "0 ENTRY computations"),
    ("HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %x = f32[] negate(1)\n}\n", "line 4: operand '1' is not a %name"),
    ("HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %x = f32[] parameter(0), junk\n}\n", "line 4: attribute 'junk' is not key=value"),
])
def test_malformed_text_is_one_line_naming_the_line(text, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace("[", r"\[")) as caught:
        hlo_graph(text)
    assert "\n" not in str(caught.value)


def test_the_base_features_are_the_converted_samples_columns():
    """Generated files must line up with the real TPU samples column for column."""
    try:
        graphs = real_tpu_tiles()
    except UserError:
        pytest.skip("the shared data folder is absent")
    assert graphs[0].feat_names == BASE_FEATURE_NAMES
    assert np.array_equal(graphs[0].node_feat.shape[1:], [len(BASE_FEATURE_NAMES)])
