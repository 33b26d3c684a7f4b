"""A user's own data file without silent defaults (datasets/files.py): a note for each kernel
hyperparameter left to its default (with what the data suggest), for a file without test
points and for labels of one class; test_fraction; did-you-mean for file options; label errors
naming the file and the column; and a problem keyed by its content, not its path."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from harness.cli.main import main
from harness.core.errors import InputError
from harness.datasets.files import FileWarning
from harness.execution.single import run_key
from harness.plugins.registry import get_method
from harness.plugins.specs import make_problem

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) * [3.0, 0.5] + [10.0, -2.0]
    y = np.where(X[:, 0] - 10 + rng.normal(size=n) > 0, 1, -1)
    y[:2] = [1, -1]
    return X, y


def write_csv(path, X, y, split=None):
    header = "a,b,y" + (",split" if split is not None else "")
    rows = [f"{float(a)!r},{float(b)!r},{int(c)}" + (f",{split[i]}" if split is not None else "")
            for i, ((a, b), c) in enumerate(zip(X, y, strict=True))]
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def notes(spec: str) -> list[str]:
    """The FileWarning messages of building `spec` (fresh: make_problem caches per spec)."""
    make_problem.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make_problem(spec)
    return [str(w.message) for w in caught if w.category is FileWarning]


def error(spec: str) -> InputError:
    make_problem.cache_clear()
    with pytest.raises(InputError) as exc:
        make_problem(spec)
    return exc.value


# ---- the kernel's defaults: a note exactly when one is used ----------------------------------
def test_defaulted_rbf_hyperparameters_are_named_with_the_datas_suggestion(tmp_path):
    X, y = data()
    path = write_csv(tmp_path / "d.csv", X, y)
    [note] = [n for n in notes(f"{path}:test_fraction=0.25") if "defaulted" in n]
    assert note.startswith(f"{path}: kernel hyperparameters not given, so defaulted: "
                           "alpha=1, beta=1 (kernel rbf, the default)")
    train = make_problem(f"{path}:test_fraction=0.25").X_train   # standardised, as the kernel
    suggested = np.median(pdist(train, "sqeuclidean"))
    assert f"squared length scale, and the median pairwise squared distance of the " \
           f"standardised training inputs is {suggested:.3g}" in note
    assert f"d.csv:kernel=rbf,alpha={suggested:.3g},beta=1" in note
    assert "\n" not in note


def test_no_note_when_the_user_set_them(tmp_path):
    X, y = data()
    path = write_csv(tmp_path / "d.csv", X, y)
    assert notes(f"{path}:alpha=2,beta=1,test_fraction=0.25") == []
    assert notes(f"{path}:kernel=linear,beta=2,test_fraction=0.25") == []   # linear: no alpha
    only_beta = notes(f"{path}:alpha=2,test_fraction=0.25")
    assert len(only_beta) == 1 and "defaulted: beta=1 (kernel rbf, the default)" in only_beta[0]
    assert "median" not in only_beta[0]       # alpha was given: nothing to suggest for it


def test_a_matern_alpha_is_a_length_scale_and_features_as_given(tmp_path):
    X, y = data()
    path = write_csv(tmp_path / "d.csv", X, y)
    spec = f"{path}:kernel=matern32,beta=1,standardize=false,test_fraction=0.25"
    [note] = notes(spec)
    suggested = np.median(pdist(make_problem(spec).X_train))
    assert "defaulted: alpha=1 (kernel matern32)" in note
    assert (f"alpha is a length scale, and the median pairwise distance of the training "
            f"inputs (as given) is {suggested:.3g}") in note


def test_an_npz_that_holds_the_kernel_gets_no_note(tmp_path):
    X, y = data()
    np.savez(tmp_path / "k.npz", X_train=X, y_train=y, X_test=X[:3], alpha=2.0, beta=1.0)
    assert notes(str(tmp_path / "k.npz")) == []
    np.savez(tmp_path / "bare.npz", X_train=X, y_train=y, X_test=X[:3])
    [note] = notes(str(tmp_path / "bare.npz"))
    assert "alpha=1, beta=1" in note and "in the spec (or the .npz)" in note


# ---- no test points: a hint; test_fraction -------------------------------------------------
def test_no_test_points_gives_a_hint_and_a_split_column_or_test_fraction_none(tmp_path):
    X, y = data()
    bare = write_csv(tmp_path / "bare.csv", X, y)
    [hint] = notes(f"{bare}:alpha=2,beta=1")
    assert hint.startswith(f"{bare}: no test points (no 'split' column)")
    assert "test_fraction=0.2" in hint and "'split' column" in hint
    split = write_csv(tmp_path / "split.csv", X, y, ["test"] * 5 + ["train"] * 35)
    assert notes(f"{split}:alpha=2,beta=1") == []
    all_train = write_csv(tmp_path / "train.csv", X, y, ["train"] * 40)
    assert "no row of its 'split' column is 'test'" in notes(f"{all_train}:alpha=2,beta=1")[0]
    assert notes(f"{bare}:alpha=2,beta=1,test_fraction=0.2") == []
    np.savez(tmp_path / "e.npz", X_train=X, y_train=y, X_test=np.empty((0, 2)), alpha=2,
             beta=1)
    assert "(X_test is empty)" in notes(str(tmp_path / "e.npz"))[0]


def test_test_fraction_is_a_seeded_stratified_draw_named_in_the_problem(tmp_path):
    X, y = data()
    path = write_csv(tmp_path / "d.csv", X, y)
    p = make_problem(f"{path}:alpha=2,beta=1,test_fraction=0.25")
    assert (p.n_train, p.n_test) == (30, 10)
    assert "test_fraction=0.25" in p.name and p.y_test is not None
    assert abs(np.mean(p.y_test == 1) - np.mean(y == 1)) <= 0.1    # stratified
    again = make_problem(f"{path}:alpha=2,beta=1,test_fraction=0.25,order=interleave")
    np.testing.assert_array_equal(again.X_test, p.X_test)          # the same draw (seed 0)
    other = make_problem(f"{path}:alpha=2,beta=1,test_fraction=0.25,seed=7")
    assert "seed=7" in other.name and not np.array_equal(other.X_test, p.X_test)
    # the held-out rows are rows of the file, in the file's order, standardised on the rest
    raw = make_problem(f"{path}:alpha=2,beta=1,test_fraction=0.25,standardize=false")
    rows = [int(np.flatnonzero((X == x).all(1))[0]) for x in raw.X_test]
    assert rows == sorted(rows)
    np.savez(tmp_path / "e.npz", X_train=X, y_train=y, X_test=np.empty((0, 2)))
    q = make_problem(f"{tmp_path / 'e.npz'}:test_fraction=0.25,alpha=2,beta=1,"
                     "standardize=false")
    np.testing.assert_array_equal(q.X_test, raw.X_test)            # the same draw from a .npz


@pytest.mark.parametrize("value", ["0", "1", "-0.1", "1.5", "half", "nan"])
def test_test_fraction_must_lie_between_0_and_1(tmp_path, value):
    X, y = data()
    path = write_csv(tmp_path / "d.csv", X, y)
    err = error(f"{path}:test_fraction={value}")
    assert err.field == f"{path}: option 'test_fraction'" and "between 0 and 1" in str(err)


def test_test_fraction_is_refused_for_a_file_that_has_test_points(tmp_path):
    X, y = data()
    split = write_csv(tmp_path / "s.csv", X, y, ["test"] * 5 + ["train"] * 35)
    assert "'split' column" in str(error(f"{split}:test_fraction=0.2"))
    np.savez(tmp_path / "t.npz", X_train=X, y_train=y, X_test=X[:3])
    assert "X_test has 3" in str(error(f"{tmp_path / 't.npz'}:test_fraction=0.2"))
    np.savez(tmp_path / "c.npz", cov=np.eye(3))
    assert "orthant" in str(error(f"{tmp_path / 'c.npz'}:test_fraction=0.2"))


# ---- labels ---------------------------------------------------------------------------------
@pytest.mark.parametrize("label", [1, -1])
def test_labels_of_one_class_are_warned(tmp_path, label):
    X, _ = data()
    path = write_csv(tmp_path / "one.csv", X, np.full(40, label))
    [note] = notes(f"{path}:alpha=2,beta=1,test_fraction=0.2")
    assert note == (f"{path}: every training label in column 'y' is {label:+d}: one class "
                    "only; check the label column (label=COLUMN names another) and the data")
    np.savez(tmp_path / "one.npz", X_train=X, y_train=np.full(40, label), X_test=X[:2],
             alpha=2.0, beta=1.0)
    assert notes(str(tmp_path / "one.npz")) == [note.replace("one.csv", "one.npz").replace(
        "column 'y'", "y_train")]


def test_label_errors_name_the_file_and_the_column(tmp_path):
    X, y = data()
    y01 = np.where(y > 0, 1, 0)
    path = tmp_path / "c.csv"
    path.write_text("a,b,klass\n" + "\n".join(f"{a},{b},{c}" for (a, b), c in zip(X, y01,
                                                                              strict=True)))
    err = error(f"{path}:label=klass")
    first = int(np.flatnonzero(y01 == 0)[0])
    assert err.field == f"{path}: row {first + 2}, column 'klass'"
    assert "labels must be -1 or +1, found 0" in str(err) and "0 as -1" in str(err)
    np.savez(tmp_path / "l.npz", X_train=X, y_train=y01, X_test=X[:2])
    assert error(str(tmp_path / "l.npz")).field == f"{tmp_path / 'l.npz'}: y_train"
    np.savez(tmp_path / "t.npz", X_train=X, y_train=y, X_test=X[:2], y_test=[0, 1])
    assert error(str(tmp_path / "t.npz")).field == f"{tmp_path / 't.npz'}: y_test"


def test_a_misspelt_file_option_gets_did_you_mean(tmp_path):
    X, y = data()
    path = write_csv(tmp_path / "d.csv", X, y)
    err = error(f"{path}:kernal=rbf")
    assert err.field == f"{path}: option 'kernal'"
    assert "did you mean 'kernel'?" in str(err) and "test_fraction" in str(err)
    assert "did you mean 'test_fraction'?" in str(error(f"{path}:test_fraktion=0.2"))


# ---- the problem's identity: its content and options, not its path --------------------------
def test_the_identity_is_the_content_and_the_options(tmp_path):
    X, y = data()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = write_csv(tmp_path / "a" / "d.csv", X, y)
    b = tmp_path / "b" / "renamed.csv"
    shutil.copy(a, b)
    pa, pb = make_problem(f"{a}:alpha=2"), make_problem(f"{b}:alpha=2")
    assert pa.name != pb.name and pa.identity == pb.identity
    assert pa.identity.startswith("file:alpha=2,sha256=") and pa.identity.endswith(
        ",standardize=true,type=csv")
    assert str(tmp_path) not in pa.identity
    assert make_problem(f"{a}:alpha=3").identity != pa.identity                 # options
    assert make_problem(f"{a}:alpha=2,standardize=false").identity != pa.identity
    write_csv(b, X, -y)
    make_problem.cache_clear()
    assert make_problem(f"{b}:alpha=2").identity != pa.identity                 # content
    assert make_problem("onefactor:n=5").identity == ""     # a named problem: its spec or name


def test_an_npz_saved_again_keeps_its_identity(tmp_path):
    X, y = data()
    np.savez(tmp_path / "one.npz", X_train=X, y_train=y, X_test=X[:3])
    np.savez(tmp_path / "two.npz", X_train=X, y_train=y, X_test=X[:3])   # another zip time
    assert make_problem(str(tmp_path / "one.npz")).identity == \
        make_problem(str(tmp_path / "two.npz")).identity
    np.savez(tmp_path / "cov.npz", cov=np.eye(3))
    assert make_problem(str(tmp_path / "cov.npz")).identity.startswith("file:sha256=")


def test_moving_a_file_gives_the_same_estimate(tmp_path, monkeypatch, capsys):
    X, y = data()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    np.savez(tmp_path / "a" / "P1.npz", X_train=X, y_train=y, X_test=X[:3], alpha=2.0,
             beta=1.0)
    shutil.copy(tmp_path / "a" / "P1.npz", tmp_path / "b" / "P1.npz")
    values = []
    for folder, spec in (("a", "P1.npz"), ("a", str(tmp_path / "a" / "P1.npz")),
                         ("b", "P1.npz"), ("b", "../a/P1.npz")):
        monkeypatch.chdir(tmp_path / folder)
        assert main(["run", spec, "sov", "--budget", "300", "--seed", "5", "--json",
                     "--threads", "1"]) == 0
        values.append(capsys.readouterr().out)
    logz = [float(v.split('"log_marginal_likelihood": ')[1].split(",")[0]) for v in values]
    assert len(set(logz)) == 1, logz
    # the run's key holds the content, so a named problem's key is unchanged: its name
    p = make_problem(str(tmp_path / "b" / "P1.npz"))
    sov = get_method("sov")()
    assert run_key(p, sov, 300, 5)["problem"] == p.identity
    named = make_problem("onefactor:n=5")
    assert run_key(named, sov, 300, 5)["problem"] == "onefactor:n=5"
