"""User problems from files (datasets/files.py), loaded through
harness.plugins.specs.make_problem."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.core.kernels import RBF, Linear
from harness.model.problem import Problem
from harness.plugins.specs import make_problem

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def gpc_data(n=12, n_test=4, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1, -1)
    y[:2] = [1, -1]  # both classes present
    return X, y, rng.normal(size=(n_test, d))


def load_error(spec):
    with pytest.raises(InputError) as exc:
        make_problem(spec)
    return exc.value


def write_csv(path, header, rows):
    path.write_text(",".join(header) + "\n" + "\n".join(",".join(map(str, r)) for r in rows)
                    + "\n")
    return path


# ---- .npz: orthant ---------------------------------------------------------------------------
def test_npz_covariance(tmp_path):
    rng = np.random.default_rng(1)
    A = rng.normal(size=(6, 6))
    cov = A @ A.T + 6 * np.eye(6)
    path = tmp_path / "orthant.npz"
    np.savez(path, cov=cov)
    p = make_problem(str(path))
    assert p.is_orthant and p.n_train == 6 and p.n_test == 0
    np.testing.assert_array_equal(p.R, cov)
    np.testing.assert_allclose(p.chol @ p.chol.T, cov, rtol=1e-12)
    assert p.truth is None and p.family == "file" and p.name == str(path)


def test_npz_covariance_with_reference_truth(tmp_path):
    path = tmp_path / "ref.npz"
    np.savez(path, cov=np.eye(4), true_log_marginal_likelihood=-4 * np.log(2.0))
    p = make_problem(str(path))
    assert p.truth.kind == "reference"
    assert abs(p.truth.log_marginal_likelihood + 4 * np.log(2.0)) < 1e-15


@pytest.mark.parametrize("truth,why", [
    ({"true_log_marginal_likelihood": np.nan}, "finite"),
    ({"true_log_marginal_likelihood": np.inf}, "finite"),
    ({"true_log_marginal_likelihood": 0.5}, "<= 0"),
    ({"true_log_marginal_likelihood": "abc"}, "number"),
    ({"true_log_marginal_likelihood": [1.0, 2.0]}, "number"),
])
def test_npz_bad_reference_truth(tmp_path, truth, why):
    path = tmp_path / "ref.npz"
    np.savez(path, cov=np.eye(3), **truth)
    err = load_error(str(path))
    assert "true_log_marginal_likelihood" in err.field and why in str(err)


# ---- .npz: GPC -------------------------------------------------------------------------------
def test_npz_rbf(tmp_path):
    X, y, Xs = gpc_data()
    path = tmp_path / "gpc.npz"
    np.savez(path, X_train=X, y_train=y, X_test=Xs, kernel="rbf", alpha=2.0, beta=1.5,
             y_test=np.array([1, -1, 1, 1]), standardize=False)   # the features as given
    p = make_problem(str(path))
    assert p.name == str(path) and p.params["standardize"] is False
    assert p.kernel == RBF(alpha=2.0, beta=1.5)
    assert (p.n_train, p.n_test) == (12, 4)
    np.testing.assert_array_equal(p.X_test, Xs)
    np.testing.assert_array_equal(p.y_test, [1, -1, 1, 1])
    # the same (x, y) pairs as in the file, and R = C (K + I) C of them
    assert sorted(map(tuple, np.column_stack([p.X_train, p.y_train]))) == \
        sorted(map(tuple, np.column_stack([X, y])))
    sq = np.sum((p.X_train[:, None, :] - p.X_train[None, :, :]) ** 2, axis=2)
    K = 1.5 * np.exp(-sq / 2.0)
    C = np.diag(p.y_train.astype(float))
    np.testing.assert_allclose(p.R, C @ (K + np.eye(12)) @ C, rtol=1e-12)
    assert p.truth is None


def test_npz_linear(tmp_path):
    X, y, Xs = gpc_data(d=1)
    path = tmp_path / "lin.npz"
    np.savez(path, X_train=X, y_train=y, X_test=Xs, kernel="linear", alpha=1.0, beta=2.0)
    p = make_problem(f"{path}:standardize=false")
    assert p.kernel == Linear(2.0)  # beta scales the linear kernel
    np.testing.assert_allclose(p.K, 2.0 * p.X_train @ p.X_train.T, rtol=1e-14)


def test_npz_options_from_the_spec(tmp_path):
    X, y, Xs = gpc_data()
    path = tmp_path / "gpc.npz"
    np.savez(path, X_train=X, y_train=y, X_test=Xs, kernel="rbf", alpha=2.0, beta=1.5)
    p = make_problem(f"{path}:kernel=rbf,alpha=0.5,beta=3,order=as-given,standardize=false")
    assert p.kernel == RBF(alpha=0.5, beta=3.0)
    np.testing.assert_array_equal(p.X_train, X)
    q = make_problem(f"{path}:kernel=linear")
    assert q.kernel == Linear(1.5)
    s1 = make_problem(f"{path}:order=shuffle,seed=1")
    s1b = make_problem.__wrapped__(f"{path}:order=shuffle,seed=1")
    s2 = make_problem(f"{path}:order=shuffle,seed=2")
    np.testing.assert_array_equal(s1.X_train, s1b.X_train)
    assert not np.array_equal(s1.X_train, s2.X_train)


def test_npz_defaults_to_rbf_with_unit_parameters(tmp_path):
    X, y, Xs = gpc_data()
    path = tmp_path / "bare.npz"
    np.savez(path, X_train=X, y_train=y, X_test=Xs)
    assert make_problem(str(path)).kernel == RBF(1.0, 1.0)


def test_npz_gpc_with_reference_truth(tmp_path):
    X, y, Xs = gpc_data(n_test=3)
    path = tmp_path / "ref.npz"
    np.savez(path, X_train=X, y_train=y, X_test=Xs, true_log_marginal_likelihood=-7.5,
             true_test_probabilities=[0.1, 0.5, 0.9])
    p = make_problem(str(path))
    assert p.truth.kind == "reference" and p.truth.log_marginal_likelihood == -7.5
    np.testing.assert_array_equal(p.truth.test_probabilities, [0.1, 0.5, 0.9])


@pytest.mark.parametrize("probs,why", [([0.5], "shape"), ([0.1, 0.5, 1.5], "[0, 1]"),
                                       ([0.1, np.nan, 0.2], "NaN"), (["a", "b", "c"], "numbers")])
def test_npz_bad_reference_probabilities(tmp_path, probs, why):
    X, y, Xs = gpc_data(n_test=3)
    path = tmp_path / "ref.npz"
    np.savez(path, X_train=X, y_train=y, X_test=Xs, true_log_marginal_likelihood=-7.5,
             true_test_probabilities=np.array(probs))
    err = load_error(str(path))
    assert "true_test_probabilities" in err.field and why in str(err)


def test_npz_with_object_arrays(tmp_path):
    X, y, Xs = gpc_data()
    path = tmp_path / "obj.npz"
    np.savez(path, X_train=X, y_train=y, X_test=Xs, kernel=np.array(["rbf"], dtype=object))
    err = load_error(str(path))
    assert str(path) in err.field and "\n" not in str(err)


# ---- .csv ----------------------------------------------------------------------------------
def test_csv_with_label_and_split(tmp_path):
    rows = [(0.5, 1.0, 1, "train"), (-1.0, 0.2, -1, "train"), (2.0, -0.3, 1, "test"),
            (0.1, 0.1, -1, "train"), (-0.5, 2.0, -1, "test"), (1.5, 1.5, 1, "train")]
    path = write_csv(tmp_path / "data.csv", ["a", "b", "y", "split"], rows)
    p = make_problem(f"{path}:kernel=rbf,alpha=2,beta=0.5,standardize=false")
    assert (p.n_train, p.n_test) == (4, 2)
    assert p.X_train.shape == (4, 2)
    np.testing.assert_array_equal(p.X_test, [[2.0, -0.3], [-0.5, 2.0]])
    np.testing.assert_array_equal(p.y_test, [1, -1])
    assert sorted(map(tuple, np.column_stack([p.X_train, p.y_train]))) == sorted(
        [(0.5, 1.0, 1), (-1.0, 0.2, -1), (0.1, 0.1, -1), (1.5, 1.5, 1)])
    assert p.kernel == RBF(2.0, 0.5)


def test_csv_without_split_and_other_label_column(tmp_path):
    path = write_csv(tmp_path / "d.csv", ["x", "class"], [(0.1, 1), (0.2, -1), (0.3, 1)])
    p = make_problem(f"{path}:label=class,kernel=linear")
    assert (p.n_train, p.n_test) == (3, 0)
    assert p.kernel == Linear(1.0)


@pytest.mark.parametrize("options, kernel, text", [
    ("", {"name": "rbf", "alpha": 1.0, "beta": 1.0}, "kernel rbf (alpha=1, beta=1)"),
    (":alpha=2,beta=0.5", {"name": "rbf", "alpha": 2.0, "beta": 0.5},
     "kernel rbf (alpha=2, beta=0.5)"),
    (":kernel=linear,beta=3", {"name": "linear", "scale": 3.0}, "kernel linear (scale=3)")])
def test_csv_kernel_and_its_parameters_are_stored(tmp_path, options, kernel, text):
    """The summary a store keeps names the kernel actually used, defaults included, in its
    kernel field and in the description (`list`-style text)."""
    path = write_csv(tmp_path / "d.csv", ["x", "y"], [(0.1, 1), (0.2, -1), (0.3, 1)])
    s = make_problem(f"{path}{options}").summary()
    assert s["kernel"] == kernel
    assert f"(1 feature, {text}, features standardised on the training split)" in \
        s["description"]


# ---- errors ----------------------------------------------------------------------------------
def test_npz_without_needed_arrays(tmp_path):
    path = tmp_path / "partial.npz"
    np.savez(path, X_train=np.ones((3, 1)), X_test=np.ones((1, 1)))
    err = load_error(str(path))
    assert str(path) in str(err) and "y_train" in str(err) and "cov" in str(err)
    path = tmp_path / "nothing.npz"
    np.savez(path, foo=np.ones(2))
    err = load_error(str(path))
    assert "X_train" in str(err)


@pytest.mark.parametrize("labels", [[0, 1] * 6, [1, 2] * 6, [1.0, -0.5] * 6])
def test_npz_labels_not_pm1(tmp_path, labels):
    X, _, Xs = gpc_data()
    path = tmp_path / "labels.npz"
    np.savez(path, X_train=X, y_train=np.array(labels), X_test=Xs)
    assert load_error(str(path)).field == f"{path}: y_train"   # the file and its array


@pytest.mark.parametrize("where", ["X_train", "X_test", "y_train"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_npz_non_finite_values(tmp_path, where, bad):
    X, y, Xs = gpc_data()
    arrays = {"X_train": X, "y_train": y.astype(float), "X_test": Xs}
    arrays[where] = arrays[where].copy()
    arrays[where].flat[1] = bad
    path = tmp_path / "nan.npz"
    np.savez(path, **arrays)
    assert load_error(str(path)).field == (f"{path}: y_train" if where == "y_train" else where)


@pytest.mark.parametrize("cov,why", [
    ([[1.0, 2.0], [2.0, 1.0]], "positive definite"),
    ([[1.0, 0.3], [0.1, 1.0]], "symmetric"),
    ([[1.0, np.nan], [np.nan, 1.0]], "NaN"),
    (np.ones(3), "square"),
])
def test_npz_bad_covariance(tmp_path, cov, why):
    path = tmp_path / "cov.npz"
    np.savez(path, cov=np.array(cov))
    err = load_error(str(path))
    assert err.field == "cov" and why in str(err)


def test_bad_kernel_parameters(tmp_path):
    X, y, Xs = gpc_data()
    path = tmp_path / "params.npz"
    np.savez(path, X_train=X, y_train=y, X_test=Xs, kernel="rbf", alpha=-1.0, beta=1.0)
    assert load_error(str(path)).field == "kernel.alpha"
    assert "alpha" in str(load_error(f"{path}:alpha=abc"))
    assert load_error(f"{path}:kernel=matern").field == "kernel"


@pytest.mark.parametrize("where", ["npz", "spec", "csv"])
@pytest.mark.parametrize("key,value,why", [("beta", 1e300, "2^53"), ("alpha", 1e17, "2^53"),
                                           ("beta", float("inf"), "finite")])
def test_kernel_parameters_are_checked_like_every_other_number(tmp_path, where, key, value,
                                                                why):
    """beta = 1e300 in an .npz was once accepted (a family refuses it: |value| at most 2^53,
    harness.model.settings.check_number), then Laplace failed on a NaN. Refused when the file
    is read, naming the file and the parameter, from the file or the spec."""
    X, y, Xs = gpc_data()
    if where == "csv":
        path = write_csv(tmp_path / "d.csv", ["a", "b", "y"],
                         [[*row, label] for row, label in zip(X, y, strict=True)])
        spec = f"{path}:kernel=rbf,{key}={value}"
    else:
        path = tmp_path / "k.npz"
        stored = {key: value} if where == "npz" else {}
        np.savez(path, X_train=X, y_train=y, X_test=Xs, kernel="rbf", **stored)
        spec = str(path) if where == "npz" else f"{path}:{key}={value}"
    err = load_error(spec)
    assert err.field == f"{path}: {key}" and why in str(err)


def test_reference_log_z_is_checked_like_every_other_number(tmp_path):
    path = tmp_path / "ref.npz"
    np.savez(path, cov=np.eye(3), true_log_marginal_likelihood=-1e300)
    err = load_error(str(path))
    assert "true_log_marginal_likelihood" in err.field and "2^53" in str(err)


def test_unknown_option(tmp_path):
    path = tmp_path / "o.npz"
    np.savez(path, cov=np.eye(2))
    err = load_error(f"{path}:colour=red")
    assert "colour" in err.field and "kernel" in str(err)  # lists the valid options


@pytest.mark.parametrize("option", ["seed=abc", "seed=-1", "seed=1.5", "order=sorted"])
def test_bad_seed_and_order_options(tmp_path, option):
    X, y, Xs = gpc_data()
    path = tmp_path / "g.npz"
    np.savez(path, X_train=X, y_train=y, X_test=Xs)
    err = load_error(f"{path}:{option}")
    assert option.split("=")[0] in str(err)


def test_missing_file(tmp_path):
    err = load_error(str(tmp_path / "nope.npz"))
    assert err.field == "problem" and "nope.npz" in str(err)
    err = load_error(str(tmp_path / "nope.csv"))
    assert "does not exist" in str(err)


def test_unsupported_suffix(tmp_path):
    path = tmp_path / "data.json"
    path.write_text("{}")
    err = load_error(str(path))
    assert err.field == "problem" and ".json" in str(err)


def test_corrupt_npz(tmp_path):
    path = tmp_path / "corrupt.npz"
    path.write_bytes(b"this is not a zip file\n")
    err = load_error(str(path))
    assert str(path) in err.field
    assert "\n" not in str(err)


@pytest.mark.parametrize("header,rows,field_part", [
    (["a", "y"], [(1, 1), (2, 0)], "bad.csv: row 3, column 'y'"),   # label not ±1
    (["a", "y"], [(1, 1), ("nan", -1)], "X_train"),                 # NaN feature
    (["a", "y"], [(1, 1), ("inf", -1)], "X_train"),                 # infinite feature
    (["a", "y"], [(1, 1), ("x", -1)], "column 'a'"),                # not a number
    (["a", "y"], [(1, 1), ("", -1)], "column 'a'"),                 # empty cell
    (["a", "y"], [(1, 1), (2, "nan")], "bad.csv: row 3, column 'y'"),   # NaN label
    (["a", "y", "split"], [(1, 1, "train"), (2, -1, "valid")], "split"),
    (["a", "b"], [(1, 1), (2, -1)], "label column"),                # no y column
    (["a", "y", "split"], [(1, 1, "test"), (2, -1, "test")], "X_train"),  # nothing to train
    (["a", "y", "split"], [(1, 1, "train"), (2, 3, "test")], "bad.csv: row 3, column 'y'"),
])
def test_csv_errors(tmp_path, header, rows, field_part):
    path = write_csv(tmp_path / "bad.csv", header, rows)
    err = load_error(str(path))
    assert field_part in err.field, str(err)


def test_csv_without_rows(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("a,y\n")
    assert "no data rows" in str(load_error(str(path)))


def test_error_messages_are_one_line(tmp_path):
    path = tmp_path / "partial.npz"
    np.savez(path, X_train=np.ones((3, 1)))
    err = load_error(str(path))
    assert "\n" not in str(err) and str(err).startswith(err.field)


# ---- standardisation and the degenerate-kernel warning (module doc of datasets/files.py) -------
def wine_like(tmp_path, n=40, n_test=5):
    """Features on scales of 100-1000, as the raw wine data the auditor loaded."""
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.normal(500, 150, n + n_test), rng.normal(100, 30, n + n_test)])
    y = np.where(X[:, 0] > 500, 1, -1)
    y[:2] = [1, -1]
    rows = [(a, b, int(c), "train" if i < n else "test")
            for i, (a, b, c) in enumerate(zip(X[:, 0], X[:, 1], y, strict=True))]
    return write_csv(tmp_path / "wine.csv", ["a", "b", "y", "split"], rows), X[:n], X[n:]


def test_csv_features_standardised_on_the_training_split(tmp_path):
    from harness.core.conditioning import DegenerateKernelWarning

    path, Xtr, Xte = wine_like(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateKernelWarning)
        p = make_problem(str(path))   # RBF, alpha = 1: fine once standardised
    mean, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    np.testing.assert_allclose(np.sort(p.X_train, axis=0), np.sort((Xtr - mean) / sd, axis=0))
    np.testing.assert_allclose(p.X_test, (Xte - mean) / sd)
    s = p.summary()
    assert p.name == f"{path} (standardised)" and s["params"]["standardize"] is True
    assert "features standardised on the training split" in s["description"]


def test_raw_wine_like_features_warn_that_k_is_the_identity(tmp_path):
    from harness.core.conditioning import DegenerateKernelWarning

    path, Xtr, _ = wine_like(tmp_path)
    with pytest.warns(DegenerateKernelWarning, match="numerically the identity") as caught:
        p = make_problem(f"{path}:standardize=false")
    assert DegenerateKernelWarning.one_line and "\n" not in str(caught[0].message)
    assert p.name == str(path) and "standardize=false" in p.summary()["description"]
    np.testing.assert_allclose(p.K, np.eye(p.n_train), atol=1e-6)


def test_rank_one_kernel_warns(tmp_path):
    from harness.core.conditioning import DegenerateKernelWarning, kernel_degeneracy

    X, y, Xs = gpc_data()
    path = tmp_path / "tiny.npz"
    np.savez(path, X_train=1e-6 * X, y_train=y, X_test=Xs, standardize=False)
    with pytest.warns(DegenerateKernelWarning, match="rank one"):
        make_problem(str(path))
    assert kernel_degeneracy(RBF(1.0, 1.0), X) is None
    assert kernel_degeneracy(Linear(1.0), X[:, :1]) is None    # rank one, but not constant


def test_degeneracy_check_samples_large_problems(monkeypatch):
    """At most DEGENERATE_SAMPLE points reach the kernel, however large N is."""
    from harness.core import conditioning

    seen = []

    def kernel(A, B):
        seen.append(len(A))
        return np.eye(len(A))

    X = np.zeros((conditioning.DEGENERATE_SAMPLE * 3, 1))
    assert conditioning.kernel_degeneracy(kernel, X) == "identity"
    assert seen == [conditioning.DEGENERATE_SAMPLE]


def test_npz_standardize_off_gives_the_old_problem_exactly(tmp_path):
    """standardize=false (spec or file) builds what the file gave before the default changed;
    the default differs, and is named apart."""
    X, y, Xs = gpc_data(n=20, n_test=6)
    path = tmp_path / "g.npz"
    np.savez(path, X_train=3 * X + 7, y_train=y, X_test=Xs, kernel="rbf", alpha=2.0, beta=1.5)
    raw = make_problem(f"{path}:standardize=false")
    old = Problem.classification(str(path), 3 * X + 7, y, Xs, RBF(2.0, 1.5), family="file")
    for a in ("X_train", "y_train", "X_test", "R"):
        np.testing.assert_array_equal(getattr(raw, a), getattr(old, a))
    assert raw.name == old.name == str(path)
    std = make_problem(str(path))
    assert std.name == f"{path} (standardised)" and not np.array_equal(std.R, raw.R)
    in_file = tmp_path / "h.npz"
    np.savez(in_file, X_train=3 * X + 7, y_train=y, X_test=Xs, kernel="rbf", alpha=2.0,
             beta=1.5, standardize=False)
    np.testing.assert_array_equal(make_problem(str(in_file)).R, raw.R)
    assert make_problem(f"{in_file}:standardize=true").name.endswith("(standardised)")


def test_constant_feature_is_centred_with_a_warning(tmp_path):
    from harness.datasets.files import FeatureWarning

    rows = [(5.0, 0.1 * i, 1 if i % 2 else -1) for i in range(6)]
    path = write_csv(tmp_path / "c.csv", ["flat", "x", "y"], rows)
    with pytest.warns(FeatureWarning, match="'flat'"):
        p = make_problem(str(path))
    np.testing.assert_array_equal(p.X_train[:, 0], 0.0)
    assert FeatureWarning.one_line


@pytest.mark.parametrize("value", ["yes", "2", "maybe", ""])
def test_bad_standardize_option_is_a_one_line_error(tmp_path, value):
    path, _, _ = wine_like(tmp_path)
    err = load_error(f"{path}:standardize={value}") if value else load_error(
        f"{path}:standardize=")
    assert "standardize" in err.field and "\n" not in str(err)


def test_bad_standardize_entry_in_npz(tmp_path):
    X, y, Xs = gpc_data()
    path = tmp_path / "b.npz"
    np.savez(path, X_train=X, y_train=y, X_test=Xs, standardize="often")
    err = load_error(str(path))
    assert "standardize" in err.field and "true or false" in str(err)


def test_job_keys_of_standardised_files_say_so(tmp_path):
    """A sweep's job key holds `standardize=true` for a file standardised by default (so jobs
    stored before the default changed are not taken for its own); other specs are unchanged."""
    from harness.sweep.grid import keyed_spec

    path, _, _ = wine_like(tmp_path)
    assert keyed_spec(str(path), make_problem(str(path))) == f"{path}:standardize=true"
    spec = f"{path}:alpha=2"
    assert keyed_spec(spec, make_problem(spec)) == f"{path}:alpha=2,standardize=true"
    raw = f"{path}:standardize=false"
    with pytest.warns(UserWarning):
        assert keyed_spec(raw, make_problem(raw)) == raw
    assert keyed_spec("linear1d:n_train=30", make_problem("linear1d:n_train=30")) == \
        "linear1d:n_train=30"
    orthant = tmp_path / "o.npz"
    np.savez(orthant, cov=np.eye(3))
    assert keyed_spec(str(orthant), make_problem(str(orthant))) == str(orthant)


# ---- Matérn kernels in files (docs/math.md §1) -----------------------------------------------
def write_matern_npz(path):
    x = np.linspace(0.0, 1.0, 30)
    rng = np.random.default_rng(5)
    y = np.where(np.sin(6 * x) + 0.3 * rng.normal(size=30) > 0, 1, -1)
    np.savez(path, X_train=x[:, None], y_train=y, X_test=np.array([[0.25], [0.7]]),
             kernel="matern12", alpha=0.3, beta=1.5)
    return path


def test_npz_matern12(tmp_path):
    from harness.core.kernels import Matern12
    p = make_problem(str(write_matern_npz(tmp_path / "m.npz")))
    assert p.kernel == Matern12(0.3, 1.5)
    s = p.summary()
    assert s["kernel"] == {"name": "matern12", "alpha": 0.3, "beta": 1.5}
    assert "kernel matern12 (alpha=0.3, beta=1.5)" in s["description"]
    x = p.X_train[:, 0]
    np.testing.assert_allclose(p.K, 1.5 * np.exp(-np.abs(x[:, None] - x[None]) / 0.3),
                               rtol=1e-14)


def test_npz_matern12_runs_end_to_end_in_process(tmp_path, capsys):
    from harness.cli.main import main
    path = write_matern_npz(tmp_path / "m.npz")
    code = main(["run", "--problem", str(path), "--method", "sov", "--budget", "1000",
                 "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "matern12" in out and '"status": "ok"' in out.replace("'", '"')


def test_npz_matern12_runs_end_to_end_on_the_command_line(tmp_path):
    import subprocess
    import sys
    path = write_matern_npz(tmp_path / "m.npz")
    done = subprocess.run([sys.executable, "-m", "harness", "run", "--problem", str(path),
                           "--method", "sov", "--budget", "1000"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "log Z" in done.stdout or "log Z" in done.stderr


def test_csv_matern32(tmp_path):
    from harness.core.kernels import Matern32
    path = write_csv(tmp_path / "d.csv", ["x", "y"], [(0.1, 1), (0.2, -1), (0.3, 1), (0.9, -1)])
    p = make_problem(f"{path}:kernel=matern32,alpha=0.3,beta=1")
    assert p.kernel == Matern32(0.3, 1.0)
    assert "kernel matern32 (alpha=0.3, beta=1)" in p.summary()["description"]
    r = np.abs(p.X_train[:, 0][:, None] - p.X_train[:, 0][None]) / 0.3
    np.testing.assert_allclose(p.K, (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r),
                               rtol=1e-14)
