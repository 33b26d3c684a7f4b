"""Fuzz the command line's inputs: every case ends with exit 0, or exit 2 and exactly one `error:`
line on stderr (no traceback), within a hard time bound.

The CLI runs in this process (harness.cli.main with an argv) so that each case costs
milliseconds; `run` cases use tiny problems and budgets (a case that is accepted must finish
quickly: the point is that unrunnable sizes and budgets are refused with the limit named, not that
big jobs run), sweep files are only checked (`sweep --check`). Derandomised: CI tries the same
cases every time (FUZZ_CASES below says how many).
"""

from __future__ import annotations

import contextlib
import io
import json
import os

import numpy as np
import pytest
from cli_driver import assert_clean, cli
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness.cli.main import main
from harness.plugins.registry import methods, problem_families

EXAMPLES = {"spec": 120, "settings": 120, "budget": 60, "sweep": 120, "npz": 100, "csv": 50}
FUZZ_CASES = sum(EXAMPLES.values())

pytestmark = pytest.mark.usefixtures("one_blas_thread", "compiled")


@pytest.fixture(scope="module")
def compiled():
    """Every method run once on a tiny problem first, outside the per-case time bound: the
    bound is about what the inputs do, not about numba loading or compiling its kernels."""
    for name, cls in methods().items():
        with contextlib.redirect_stdout(io.StringIO()):
            main(["run", "--problem", TINY["orthant" if cls.tags.handles_orthant else "gpc"],
                  "--method", name, "--budget", "20"])


def fuzz_settings(name: str):
    """Reproducible (derandomised, no example database) and bounded by our own alarm.

    GPC_FUZZ_SCALE=k (environment) tries k times as many cases, randomly (a longer search on
    demand, e.g. before a release: `GPC_FUZZ_SCALE=20 pytest tests/fuzz`).
    """
    scale = int(os.environ.get("GPC_FUZZ_SCALE", "0"))
    return settings(max_examples=EXAMPLES[name] * max(scale, 1), derandomize=not scale,
                    database=None, deadline=None, suppress_health_check=list(HealthCheck),
                    print_blob=bool(scale))


def run_case(*argv: str) -> tuple[int, str, str]:
    """A `run --strict` case: as assert_clean, except that a run whose estimate is not ok
    (exit 1) is fine when the method said why (status failed, timeout or unreliable with a
    reason: e.g. a huge jitter makes AIS's annealing too coarse). Status `error` (the method
    raised) is a finding."""
    argv = ("run", *argv, "--json", "--strict")
    code, out, err = cli(*argv)
    event(f"exit {code}")
    if code == 1:
        record = json.loads(out)
        assert record["status"] in ("failed", "timeout", "unreliable") and record["reason"], (
            argv, record)
        assert "Traceback" not in err, f"{argv}\n{err}"
        return code, out, err
    assert_clean(argv, code, out, err)
    return code, out, err


# ---- strategies ------------------------------------------------------------------------------
EDGE_VALUES = ["9223372036854775807", "-9223372036854775808", "18446744073709551616", "1e308",
               "-1e308", "1e30", "inf", "-inf", "nan", "NaN", "-0", "0", "-0.0", "1", "2", "3",
               "-1", "0.5", "1e-320", "5e-324", "true", "false", "yes", "1_000", "0x10", "1e3",
               "abc", "ünïcødé", "𝟙𝟚", " 7 ", "\t", "1.5", "999999999999", "2e9", "1e10",
               "9007199254740992", "9007199254740993", "4294967296", "1e-300", "1" + "0" * 400,
               "-" + "9" * 400]
value = st.one_of(st.sampled_from(EDGE_VALUES),
                  st.integers(-3, 12).map(str),
                  st.text(st.characters(blacklist_characters=",=:\x00"), max_size=8))
# sizes that are accepted must be small (the case has to finish): huge ones must be refused
size_value = st.one_of(st.sampled_from(["9223372036854775807", "1e308", "1e30", "2e9", "1e10",
                                        "999999999999", "-1", "0", "inf", "nan", "x"]),
                       st.integers(0, 12).map(str))
SIZE_KEYS = {"n", "n_train", "n_test", "d"}


@st.composite
def problem_spec(draw) -> str:
    families = problem_families()
    head = draw(st.one_of(st.sampled_from(sorted(families)),
                          st.sampled_from(["linear1d-p1", "onefactor-table1-n50", "crabs"]),
                          st.text(max_size=6)))
    known = sorted(families[head].defaults()) if head in families else ["n", "seed"]
    keys = draw(st.lists(st.one_of(st.sampled_from(known), st.text(max_size=5)), max_size=4,
                         unique=True))
    if head in families and ("n" in known or "n_train" in known):  # keep accepted cases small
        keys = [k for k in keys if k not in SIZE_KEYS] + ["n" if "n" in known else "n_train"]
        if "n_test" in known:
            keys.append("n_test")
    pairs = [f"{k}={draw(size_value if k in SIZE_KEYS else value)}" for k in keys]
    return head + (":" + ",".join(pairs) if pairs else "")


BUDGETS = ["0", "-1", "-9223372036854775808", "9223372036854775807", "18446744073709551616",
           "1e30", "1e308", "inf", "nan", "1.5", "1e10", "2e9", "", "ten", "½", "٣", "1e-3",
           "10", "1e2", "100", " 50 ", "3", "1" + "0" * 400]
budget = st.one_of(st.sampled_from(BUDGETS), st.integers(1, 300).map(str))
TINY = {"orthant": "onefactor:n=6,seed=1", "gpc": "linear1d:n_train=6,n_test=2,seed=1"}


# ---- run: problem specs, settings, budgets --------------------------------------------------
@fuzz_settings("spec")
@given(spec=problem_spec(), method=st.sampled_from(["sov", "ep", "scipy-genz"]))
def test_problem_specs(spec, method):
    run_case("--problem", spec, "--method", method, "--budget", "20")


@fuzz_settings("settings")
@given(data=st.data())
def test_method_settings(data):
    registry = methods()
    name = data.draw(st.sampled_from(sorted(registry)), "method")
    keys = sorted(registry[name].setting_defaults())
    items = data.draw(st.lists(st.tuples(st.one_of(st.sampled_from(keys or ["x"]),
                                                   st.text(max_size=5)), value),
                               max_size=3), "settings")
    problem = TINY["orthant" if registry[name].tags.handles_orthant else "gpc"]
    argv = ["--problem", problem, "--method", name, "--budget", "30"]
    for key, text in items:
        argv += ["--set", f"{key}={text}"]
    run_case(*argv)


@fuzz_settings("budget")
@given(text=budget, method=st.sampled_from(sorted(methods())), seed=st.sampled_from(
    ["0", "1", "-1", "9223372036854775807", "1e300", "x"]), memory=st.sampled_from(
    [None, "8GB", "512 MiB", "1e400GB", "0", "-1GB", "1e-9", "inf", "nan", "x", "1e30"]))
def test_budgets(text, method, seed, memory):
    problem = TINY["orthant" if methods()[method].tags.handles_orthant else "gpc"]
    try:
        small = 0 < float(text) <= 300
    except ValueError:
        small = False
    limit = () if memory is None else (f"--memory-limit={memory}",)
    code, out, err = run_case("--problem", problem, "--method", method, f"--budget={text}",
                              f"--seed={seed}", *limit)
    if not small:
        assert code == 2, (text, out)


# ---- sweep files ------------------------------------------------------------------------------
toml_scalar = st.one_of(
    st.integers(-2**63, 2**63 - 1), st.sampled_from([0, 1, -1, 2, 10, 2**63 - 1]),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.text(max_size=10), st.sampled_from(["onefactor:n=5", "linear1d-p1", "x.npz", "sov"]))


def _containers(inner):
    return st.one_of(st.lists(inner, max_size=3),
                     st.dictionaries(st.sampled_from(["n", "family", "spec", "a"]), inner,
                                     max_size=2))


toml_value = st.recursive(toml_scalar, _containers, max_leaves=6)


def toml(value) -> str:
    """A TOML inline value (strings JSON-quoted, which TOML's basic strings accept)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(repr(value), repr(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(toml, value)) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml(v)}" for k, v in value.items()) + "}"


VALID_SWEEP = {"budgets": [10, 20], "problems": ["onefactor:n=5", "linear1d:n_train=6,n_test=2"],
               "replicates": 1}
edge_scalar = st.sampled_from([float("inf"), float("-inf"), float("nan"), 1e308, -1.0, 0, 0.5,
                               2**63 - 1, -(2**63), 2**53 + 1, 10**6, "", "x", True, [], {}])


def mutate(draw, value):
    """A value of the same shape with one part replaced (or the whole)."""
    if isinstance(value, list) and value and draw(st.booleans()):
        i = draw(st.integers(0, len(value) - 1))
        return value[:i] + [mutate(draw, value[i])] + value[i + 1:]
    if isinstance(value, str) and ":" in value and draw(st.booleans()):
        return draw(problem_spec())
    return draw(st.one_of(edge_scalar, toml_value))


@st.composite
def sweep_text(draw) -> str:
    """A sweep file: a valid one with a few parts replaced (mostly), deep nesting, grids that
    multiply, or junk."""
    kind = draw(st.sampled_from(["mutated"] * 6 + ["nested", "junk", "grid"]))
    if kind == "nested":
        depth = draw(st.sampled_from([50, 500, 2000, 5000]))
        key = draw(st.sampled_from(["budgets", "problems", "seed", "x"]))
        opener, closer = draw(st.sampled_from([("[", "]"), ("{a = ", "}")]))
        return f"{key} = " + opener * depth + "1" + closer * depth + "\n"
    if kind == "junk":
        return draw(st.text(max_size=60))
    if kind == "grid":   # lists that multiply: refused before the grid is built, or small
        lengths = draw(st.lists(st.sampled_from([1, 2, 4, 1001, 5000]), min_size=2, max_size=3))
        keys = ["seed", "dmin", "dmax"][:len(lengths)]
        values = {"seed": range, "dmin": lambda k: [-0.5 + i / (4 * k) for i in range(k)],
                  "dmax": lambda k: [0.5 + i / (4 * k) for i in range(k)]}
        table = ", ".join(f"{key} = {toml(list(values[key](k)))}"
                          for key, k in zip(keys, lengths, strict=False))
        where = draw(st.sampled_from(["problem", "method"]))
        if where == "problem":
            return (f'budgets = [10]\nproblems = [{{family = "onefactor", n = 3, {table}}}]\n'
                    "[methods.sov]\n")
        return ('budgets = [10]\nproblems = ["onefactor:n=3"]\n[methods.sov]\n'
                + f"randomisations = {toml(list(range(1, lengths[0] + 1)))}\n"
                + f"block_size = {toml(list(range(lengths[1])))}\n")
    top = dict(VALID_SWEEP)
    registry = methods()
    chosen = draw(st.lists(st.sampled_from(sorted(registry)), min_size=1, max_size=2,
                           unique=True))
    tables = {name: {} for name in chosen}
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.sampled_from(["top", "top", "setting", "setting", "new top"]))
        if where == "top":
            key = draw(st.sampled_from(sorted(top)))
            top[key] = mutate(draw, top[key])
        elif where == "new top":
            key = draw(st.sampled_from(["seed", "time_limit", "memory_limit", "name",
                                        "every_method", "description", "kind", "bogus"]))
            top[key] = draw(st.one_of(edge_scalar, toml_value))
        else:
            name = draw(st.sampled_from(chosen))
            key = draw(st.sampled_from(sorted(registry[name].setting_defaults())
                                       + ["budgets", "bogus"]))
            tables[name][key] = draw(st.one_of(edge_scalar, toml_value,
                                               st.lists(edge_scalar, max_size=2)))
    lines = [f"{k} = {toml(v)}" for k, v in top.items()]
    for name, table in tables.items():
        lines.append(f'[methods."{name}"]')
        lines += [f"{k} = {toml(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


@fuzz_settings("sweep")
@given(text=sweep_text(), workers=st.sampled_from([None, "1", "2", "0", "-1", "1e9", "x"]))
def test_sweep_files(text, workers, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sweep")
    path = folder / "fuzz.toml"
    path.write_text(text, encoding="utf-8")
    argv = ("sweep", str(path), "--check", "--no-report", "--store", str(folder / "s.sqlite"),
            *(() if workers is None else (f"--workers={workers}",)))
    code, out, err = cli(*argv)
    event(f"exit {code}")
    assert_clean(argv, code, out, err)
    if code == 0:   # what --check accepts, a run can store (its metadata is strict JSON)
        from harness.sweep.spec import load_sweep

        json.dumps(load_sweep(path).describe(), allow_nan=False)


# ---- problem files ----------------------------------------------------------------------------
def _array(draw):
    shape = draw(st.sampled_from([(), (0,), (3,), (4,), (4, 1), (4, 2), (2, 2), (3, 3), (2, 2, 2),
                                  (4, 4)]))
    kind = draw(st.sampled_from(["float", "float", "int", "text", "bool", "complex", "object",
                                 "bytes"]))
    size = int(np.prod(shape))
    if kind == "text":
        return np.array(draw(st.lists(st.text(max_size=4), min_size=size, max_size=size)),
                        dtype=str).reshape(shape)
    if kind == "bytes":
        return np.array([b"x"] * size).reshape(shape)
    if kind == "object":
        return np.array([None] * size, dtype=object).reshape(shape)
    if kind == "bool":
        return np.ones(shape, dtype=bool)
    if kind == "int":
        return np.array(draw(st.lists(st.sampled_from([-1, 1, 0, 2**62, -2**63]), min_size=size,
                                      max_size=size)), dtype=np.int64).reshape(shape)
    floats = st.one_of(st.sampled_from([-1.0, 1.0, 0.0, 0.5, np.nan, np.inf, -np.inf, 1e308,
                                        -1e308, 5e-324]), st.floats(-3, 3))
    values = np.array(draw(st.lists(floats, min_size=size, max_size=size)), dtype=float)
    if kind == "complex":
        values = values + 1j
    return values.reshape(shape)


@st.composite
def npz_arrays(draw) -> dict[str, np.ndarray]:
    kind = draw(st.sampled_from(["cov", "gpc", "other"]))
    keys = {"cov": ["cov", "true_log_marginal_likelihood"],
            "gpc": ["X_train", "y_train", "X_test", "kernel", "alpha", "beta", "y_test",
                    "true_log_marginal_likelihood", "true_test_probabilities"],
            "other": ["x", "cov", "y_train"]}[kind]
    chosen = draw(st.lists(st.sampled_from(keys), min_size=1, unique=True))
    arrays = {k: _array(draw) for k in chosen}
    if kind == "cov" and draw(st.booleans()):   # sometimes a valid matrix, bent in one entry
        cov = np.eye(3) + 0.3
        cov[draw(st.integers(0, 2)), draw(st.integers(0, 2))] = draw(st.sampled_from(
            [np.nan, np.inf, 1e308, -1.0, 1.3, 0.3]))
        arrays["cov"] = cov
    if kind == "gpc" and draw(st.booleans()):   # a valid problem with one array replaced
        valid = {"X_train": np.linspace(-1, 1, 6)[:, None], "y_train": np.array([1, -1] * 3),
                 "X_test": np.zeros((2, 1)), "kernel": np.array("rbf"), "alpha": np.array(1.0),
                 "beta": np.array(1.0)}
        arrays = {**valid, **{k: v for k, v in arrays.items() if draw(st.booleans())}}
    return arrays


@fuzz_settings("npz")
@given(arrays=npz_arrays(), spec_options=st.sampled_from(["", ":kernel=linear", ":alpha=nan",
                                                          ":kernel=x", ":seed=-1", ":beta=1e308"]))
def test_npz_files(arrays, spec_options, tmp_path_factory):
    path = tmp_path_factory.mktemp("npz") / "p.npz"
    np.savez(path, **arrays)
    run_case("--problem", f"{path}{spec_options}", "--method", "sov", "--budget", "20")


csv_cell = st.one_of(st.sampled_from(["1", "-1", "0", "nan", "inf", "1e308", "", "x", "train",
                                      "test", "TEST", '"', "1,2", "0.5"]), st.text(max_size=4))
VALID_CSV = [["x", "z", "y", "split"], ["0.1", "1", "1", "train"], ["-0.3", "0", "-1", "train"],
             ["0.7", "2", "1", "train"], ["-1.2", "1", "-1", "train"], ["0.2", "0", "1", "test"]]


@fuzz_settings("csv")
@given(data=st.data(), option=st.sampled_from(["", ":label=z", ":label=q", ":kernel=linear",
                                               ":alpha=0", ":order=shuffle,seed=3"]))
def test_csv_files(data, option, tmp_path_factory):
    rows = [list(r) for r in VALID_CSV]
    if data.draw(st.booleans(), "junk"):
        rows = data.draw(st.lists(st.lists(csv_cell, max_size=5), max_size=6), "rows")
    for _ in range(data.draw(st.integers(0, 3), "mutations")):
        if rows:
            row = rows[data.draw(st.integers(0, len(rows) - 1))]
            if row:
                row[data.draw(st.integers(0, len(row) - 1))] = data.draw(csv_cell)
    path = tmp_path_factory.mktemp("csv") / "p.csv"
    path.write_text("\n".join(",".join(r) for r in rows), encoding="utf-8")
    run_case("--problem", f"{path}{option}", "--method", "sov", "--budget", "20")

