"""manifest: canonicalisation, SPEC parsing, building and validating the frozen contract."""

import copy

import pytest

from perftune.contract import manifest
from perftune.errors import ContractError


@pytest.mark.parametrize("text, expected", [
    ("[4,8]", "[4,8]"), ("[4, 8]", "[4,8]"), ("(4, 8)", "[4,8]"), ("4x8", "[4,8]"), ("4X8", "[4,8]"),
    ("4*8", "[4,8]"), (" 4 x 8 ", "[4,8]"), ("x:[4,8]", "x:[4,8]"), ("x: (4,8)", "x:[4,8]"),
    ("x:[4,8] w:[8]", "x:[4,8],w:[8]"), ("x:[4,8], w:[8]", "x:[4,8],w:[8]"), ("[]", "[]"), ("16", "[16]"),
])
def test_canonical_shape(text, expected):
    assert manifest.canonical_shape(text) == expected


@pytest.mark.parametrize("bad", ["", "[4,-1]", "[4,0]", "[a,b]", "[4,8] junk", "4y8", "[4.5]"])
def test_canonical_shape_refuses(bad):
    with pytest.raises(ValueError):
        manifest.canonical_shape(bad)


@pytest.mark.parametrize("text, expected", [
    ("fp16", "float16"), ("half", "float16"), ("float16", "float16"), ("torch.float16", "float16"),
    ("bf16", "bfloat16"), ("torch.bfloat16", "bfloat16"), ("fp32", "float32"), ("float", "float32"),
    ("torch.float32", "float32"), ("np.float32", "float32"), ("double", "float64"), ("fp64", "float64"),
    ("int8", "int8"), ("INT32", "int32"), ("bool", "bool"), ("x:fp16", "x:float16"),
    ("x:fp16,w:bf16", "x:float16,w:bfloat16"),
])
def test_canonical_dtype(text, expected):
    assert manifest.canonical_dtype(text) == expected


@pytest.mark.parametrize("bad", ["", "float17", "torch.tensor"])
def test_canonical_dtype_refuses(bad):
    with pytest.raises(ValueError):
        manifest.canonical_dtype(bad)


SPEC = """# SPEC
## 3. Performance P0 cases
| id | shape | dtype | p0 |
|----|-------|-------|----|
| a | [4,8] | fp16 | yes |
| b | 8x8 | float32 | yes |
| c | [2,2] | fp32 | no |

user_target: speedup >= 1.2
"""
TESTS = "def test_a():\n    pass\n\ndef test_b():\n    pass\n\ndef test_c(x):\n    pass\n"


def _proto(**kw):
    return manifest.make_protocol(backend="cpu", device_id=0, warmup=1, repeats=5, op_name="k", **kw)


def test_parse_spec_reads_p0_table_and_target():
    info = manifest.parse_spec(SPEC)
    assert [(c.id, c.shape, c.dtype, c.p0) for c in info.cases] == [
        ("a", "[4,8]", "float16", True), ("b", "[8,8]", "float32", True), ("c", "[2,2]", "float32", False)]
    assert info.user_target == {"metric": "speedup", "threshold": 1.2}


def test_parse_spec_without_table_is_contract_error():
    with pytest.raises(ContractError, match="no P0 table"):
        manifest.parse_spec("# SPEC\n## Performance\nnothing here\n")


def test_find_test_functions_skips_functions_with_required_args():
    assert manifest.find_test_functions(TESTS) == {"test_a": 1, "test_b": 4}


def test_build_manifest_round_trip():
    obj = manifest.build_manifest(manifest.parse_spec(SPEC), manifest.find_test_functions(TESTS),
                                  target_case_ids=["a"], selection_mode="user_selected", proto=_proto())
    parsed = manifest.parse_manifest(obj)
    assert parsed.case_ids == ("a", "b")
    assert parsed.target_case_ids == ("a",)
    assert parsed.protocol.seed == 42 and parsed.protocol.decision.resamples == 10000
    assert parsed.user_target == {"metric": "speedup", "threshold": 1.2}
    assert obj["cases"][0]["test_function"] == "test_a"


def _valid():
    return manifest.build_manifest(manifest.parse_spec(SPEC), manifest.find_test_functions(TESTS),
                                   target_case_ids=["a", "b"], selection_mode="all_p0_no_questions",
                                   proto=_proto())


@pytest.mark.parametrize("mutate, needle", [
    (lambda m: m["cases"].append(dict(m["cases"][0])), "duplicate ids"),
    (lambda m: m["cases"][0].update(id=""), "schema"),
    (lambda m: m["optimization_target"].update(case_ids=[]), "schema"),
    (lambda m: m["optimization_target"].update(case_ids=["a", "zz"]), "unknown case ids"),
    (lambda m: m["optimization_target"].update(case_ids=["a"]), "all_p0_no_questions"),
    (lambda m: m["optimization_target"].update(selection_mode="single_p0"), "single_p0"),
    (lambda m: m["protocol"].update(seed=0), "schema"),
    (lambda m: m["protocol"].update(repeats=0), "schema"),
    (lambda m: m.update(schema_version=3), "schema_version"),
    (lambda m: m["cases"][1].update(shape="[x]"), "non-integer"),
])
def test_parse_manifest_refuses(mutate, needle):
    obj = copy.deepcopy(_valid())
    mutate(obj)
    with pytest.raises(ContractError, match=needle):
        manifest.parse_manifest(obj)


def test_upstream_v1_manifest_is_readable():
    obj = {"schema_version": 1, "cases": [{"id": "a", "shape": "x:[4,8]", "dtype": "torch.float16"}],
           "optimization_target": {"case_ids": ["a"], "selection_mode": "single_p0"}}
    parsed = manifest.parse_manifest(obj)
    assert parsed.protocol is None and parsed.cases[0].dtype == "float16"


def test_missing_test_and_double_claim_are_refused():
    spec = manifest.parse_spec(SPEC)
    with pytest.raises(ContractError, match="has no test function test_b"):
        manifest.build_manifest(spec, {"test_a": 1}, target_case_ids=["a"],
                                selection_mode="user_selected", proto=_proto())
    claimed = manifest.parse_spec(SPEC.replace("| p0 |", "| p0 | test_function |")
                                  .replace("|----|-------|-------|----|", "|---|---|---|---|---|")
                                  .replace("| yes |", "| yes | test_a |").replace("| no |", "| no | - |"))
    with pytest.raises(ContractError, match="already claimed"):
        manifest.build_manifest(claimed, manifest.find_test_functions(TESTS), target_case_ids=["a"],
                                selection_mode="user_selected", proto=_proto())
