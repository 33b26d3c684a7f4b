"""Problem specs and families (harness/plugins/specs.py, harness/model/family.py):
`family:key=value,...`, preset names with overrides, and clear errors for everything else."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.model.family import canonical_name
from harness.plugins.registry import presets, problem_families
from harness.plugins.specs import make_problem, parse_pairs, split_spec

pytestmark = pytest.mark.usefixtures("one_blas_thread")


fresh = make_problem.__wrapped__  # make_problem caches per process; this builds anew

PRESET_SIZES = {"linear1d-p1": (100, 50), "linear1d-p2": (200, 100),
                "linear1d-p3": (400, 200), "linear1d-p4": (800, 400)}


# ---- family specs --------------------------------------------------------------------------
def test_onefactor_spec():
    p = make_problem("onefactor:n=50,seed=3")
    assert p.is_orthant and p.family == "onefactor"
    assert p.n_train == 50 and p.n_test == 0
    assert p.params["n"] == 50 and p.params["seed"] == 3
    assert p.name == "onefactor:n=50,seed=3"
    R = p.R
    np.testing.assert_array_equal(np.diag(R), 1.0)
    np.testing.assert_array_equal(R, R.T)
    # one-factor structure R_ij = d_i d_j off the diagonal: R_ij R_kl = R_il R_kj
    assert abs(R[0, 1] * R[2, 3] - R[0, 3] * R[2, 1]) < 1e-15
    assert abs(R[4, 7] * R[9, 5] - R[4, 5] * R[9, 7]) < 1e-15
    assert np.max(np.abs(R - np.eye(50))) < 0.99**2 + 1e-12
    assert p.truth.kind == "exact" and np.isfinite(p.truth.log_marginal_likelihood)
    assert p.truth.log_marginal_likelihood < 0


def test_spec_values_are_typed():
    p = make_problem("onefactor:n=1e1,dmin=-0.5,dmax=0.5,random_signs=false")
    assert p.n_train == 10
    assert isinstance(p.params["n"], int) and isinstance(p.params["dmin"], float)
    assert p.params["random_signs"] is False
    assert np.max(np.abs(p.R - np.eye(10))) <= 0.25 + 1e-15


def test_whitespace_is_tolerated():
    a = fresh(" onefactor : n = 12 , seed = 4 ")
    b = fresh("onefactor:n=12,seed=4")
    np.testing.assert_array_equal(a.R, b.R)


def test_canonical_names_sort_the_parameters():
    assert make_problem("onefactor:seed=3,n=50").name == "onefactor:n=50,seed=3"
    assert canonical_name("f", {}) == "f"
    assert make_problem("onefactor").name == "onefactor"


def test_linear1d_spec():
    p = make_problem("linear1d:n_train=40,n_test=10")
    assert (p.n_train, p.n_test) == (40, 10)
    assert p.kernel.name == "linear" and p.family == "linear1d"
    assert p.truth.test_probabilities.shape == (10,)


# ---- presets -------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", sorted(PRESET_SIZES))
def test_linear1d_presets(preset):
    p = make_problem(preset)
    assert (p.n_train, p.n_test) == PRESET_SIZES[preset]
    assert p.name == preset and p.family == "linear1d"
    assert p.truth.kind == "exact"
    assert np.isfinite(p.truth.log_marginal_likelihood)
    assert np.all((p.truth.test_probabilities >= 0) & (p.truth.test_probabilities <= 1))


def test_preset_parameters_follow_math_notes():
    table = {name: params for name, (_, params) in presets().items()}
    # docs/math.md §11 (P1, P3, P4 partly reconstructed there)
    assert table["linear1d-p1"] == {"n_train": 100, "n_test": 50, "mu_neg": 0.0,
                                    "mu_pos": 1.0, "sd_neg": 0.5, "sd_pos": 0.5}
    assert (table["linear1d-p2"]["mu_neg"], table["linear1d-p2"]["mu_pos"]) == (0.0, 1.0)
    assert (table["linear1d-p2"]["sd_neg"], table["linear1d-p2"]["sd_pos"]) == (2.0, 1.0)
    assert table["linear1d-p3"]["mu_pos"] == 1.5
    assert (table["linear1d-p4"]["sd_neg"], table["linear1d-p4"]["sd_pos"]) == (1.0, 0.5)
    assert table["onefactor-table1-n500"] == {"n": 500}


def test_preset_with_override():
    base = make_problem("linear1d-p1")
    p = make_problem("linear1d-p1:seed=2")
    assert (p.n_train, p.n_test) == (100, 50)
    assert p.params["seed"] == 2
    for key in ("mu_neg", "mu_pos", "sd_neg", "sd_pos"):
        assert p.params[key] == base.params[key]
    assert p.name == "linear1d-p1:seed=2"
    assert not np.array_equal(np.sort(p.X_train[:, 0]), np.sort(base.X_train[:, 0]))
    assert p.truth.log_marginal_likelihood != base.truth.log_marginal_likelihood
    # the override equal to the default reproduces the preset
    same = fresh("linear1d-p1:seed=0")
    np.testing.assert_array_equal(same.X_train, base.X_train)


def test_preset_override_does_not_leak_into_the_preset():
    make_problem("linear1d-p2:n_test=5")
    assert presets()["linear1d-p2"][1]["n_test"] == 100
    assert fresh("linear1d-p2").n_test == 100


# ---- determinism ---------------------------------------------------------------------------
@pytest.mark.parametrize("spec,other", [
    ("onefactor:n=30,seed=5", "onefactor:n=30,seed=6"),
    ("linear1d:n_train=30,n_test=7,seed=5", "linear1d:n_train=30,n_test=7,seed=6"),
])
def test_same_spec_same_data_different_seed_different_data(spec, other):
    a, b, c = fresh(spec), fresh(spec), fresh(other)
    assert a is not b
    np.testing.assert_array_equal(a.R, b.R)
    assert a.truth.log_marginal_likelihood == b.truth.log_marginal_likelihood
    assert not np.allclose(a.R, c.R)
    assert a.truth.log_marginal_likelihood != c.truth.log_marginal_likelihood
    if not a.is_orthant:
        np.testing.assert_array_equal(a.X_test, b.X_test)
        np.testing.assert_array_equal(a.truth.test_probabilities, b.truth.test_probabilities)
        assert not np.array_equal(a.X_test, c.X_test)


def test_make_problem_caches():
    assert make_problem("onefactor:n=20") is make_problem("onefactor:n=20")


# ---- errors --------------------------------------------------------------------------------
def expect_error(spec, *fragments):
    with pytest.raises(InputError) as exc:
        fresh(spec)
    message = str(exc.value)
    assert message.startswith(exc.value.field)
    for fragment in fragments:
        assert fragment in message, message
    return exc.value


def test_unknown_family():
    err = expect_error("onefactr:n=5", "problem", "onefactr", "onefactor")
    assert err.field == "problem"
    expect_error("nosuchthing", "nosuchthing")


def test_unknown_parameter():
    err = expect_error("onefactor:n=5,size=3", "size", "onefactor")
    assert "size" in err.field
    expect_error("linear1d-p1:bogus=2", "bogus")


def test_name_is_not_a_parameter():
    expect_error("onefactor:name=mine", "name")


@pytest.mark.parametrize("spec", ["onefactor:n", "onefactor:n=", "onefactor:=5",
                                  "onefactor:n=5,", "onefactor:n=5,,seed=1",
                                  "onefactor:n=5,n=6", "onefactor:n=5;seed=2"])
def test_malformed_specs(spec):
    with pytest.raises(InputError) as exc:
        fresh(spec)
    assert "problem" in exc.value.field


def test_empty_spec():
    err = expect_error("  ", "problem")
    assert err.field == "problem"


@pytest.mark.parametrize("spec,param", [
    ("onefactor:n=abc", "n"), ("onefactor:n=1.5", "n"), ("onefactor:n=true", "n"),
    ("onefactor:dmin=low", "dmin"), ("onefactor:random_signs=maybe", "random_signs"),
    ("linear1d:n_train=x", "n_train"), ("linear1d:mu_pos=up", "mu_pos"),
    ("linear1d-p3:seed=1.5", "seed"),
])
def test_wrong_types(spec, param):
    err = expect_error(spec, f"'{param}'")
    assert param in err.field


@pytest.mark.parametrize("spec,param", [
    ("onefactor:n=0", "n"), ("onefactor:seed=-1", "seed"), ("onefactor:dmin=-1", "dmin"),
    ("onefactor:dmax=1.5", "dmax"), ("onefactor:dmin=0.5,dmax=0.2", "dmin"),
    ("linear1d:n_train=1", "n_train"), ("linear1d:n_test=-1", "n_test"),
    ("linear1d:sd_neg=0", "sd_neg"), ("linear1d:sd_pos=-1", "sd_pos"),
    ("linear1d:scale=0", "scale"), ("linear1d:scale=-2", "scale"),
    ("linear1d:mu_pos=inf", "mu_pos"), ("linear1d:mu_neg=nan", "mu_neg"),
    ("linear1d:seed=-3", "seed"), ("linear1d:order=sorted", "order"),
])
def test_out_of_range_values(spec, param):
    err = expect_error(spec)
    assert param in str(err)


def test_parse_pairs_and_split_spec():
    assert parse_pairs("a=1, b = x", "f") == {"a": "1", "b": "x"}
    assert parse_pairs("", "f") == {}
    assert split_spec("linear1d-p3") == ("linear1d-p3", {})
    assert split_spec("onefactor:n=5") == ("onefactor", {"n": "5"})
    with pytest.raises(InputError) as exc:
        parse_pairs("a=1,a=2", "--set")
    assert exc.value.field == "--set" and "twice" in str(exc.value)


def test_registry_lists_the_foundation_families():
    fams = problem_families()
    assert {"onefactor", "linear1d"} <= set(fams)
    assert fams["onefactor"].truth == "exact" and fams["linear1d"].truth == "exact"
    assert set(PRESET_SIZES) <= set(presets())
    assert "name" not in fams["onefactor"].defaults()
