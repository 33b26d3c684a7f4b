"""`python -m harness gpr`: fit exact GP regression and draw its predictive band
(harness/core/gpr.py).

Fits the PRML sine example (datasets/sine.py) or a CSV file (a header; target column `t`, every
other column a feature) and writes gpr.png, gpr.svg (one feature only) and gpr.json.
"""

from __future__ import annotations

import csv
import json

import numpy as np
from threadpoolctl import threadpool_limits

from harness.cli.args import out_folder
from harness.core.errors import InputError
from harness.model.settings import parse_int

DEFAULT_OUT = "reports/gpr"


def setup(p):
    """Fit exact GP regression (the tuning reference) and draw its predictive band."""
    p.description = ("Fit exact GP regression by maximum evidence (L-BFGS-B, several starts) on "
                     "the PRML sine example or a CSV file; write gpr.png, gpr.svg and gpr.json.")
    p.add_argument("--data", default=None,
                   help="CSV with a header: target column t, every other column a feature "
                        "(default: the sine example)")
    p.add_argument("--n", default="30", help="sine example: number of points (default 30)")
    p.add_argument("--noise", type=float, default=0.3,
                   help="sine example: noise standard deviation (default 0.3)")
    p.add_argument("--seed", default="0", help="data seed and optimiser seed (default 0)")
    p.add_argument("--kernel", choices=["rbf", "prml", "matern12", "matern32", "matern52"],
                   default="rbf",
                   help="rbf: β exp(−r²/α); prml: θ0 exp(−θ1 r²/2); matern12/32/52: β M_ν(r/α), "
                        "the Matérn kernels of docs/math.md (default rbf)")
    p.add_argument("--restarts", default="4", help="random restarts after the first start")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")


def read_regression_csv(path: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(X, t, feature names) from a CSV with a header and a numeric target column `t`."""
    try:
        with open(path, newline="") as fh:
            rows = list(csv.reader(fh))
    except OSError as exc:
        raise InputError("--data", f"cannot read {path} ({exc.strerror})") from None
    if len(rows) < 2:
        raise InputError("--data", f"{path} needs a header and at least one data row")
    header = [name.strip() for name in rows[0]]
    if "t" not in header or len(header) < 2:
        raise InputError("--data", f"{path} has columns {header}",
                         "name the target column t and give at least one feature column")
    try:
        values = np.array(rows[1:], dtype=float)
    except ValueError:
        raise InputError("--data", f"{path} has non-numeric or missing values",
                         "every cell must be a number") from None
    target = header.index("t")
    return np.delete(values, target, axis=1), values[:, target], header[:target] + header[
        target + 1:]


def run(args) -> int:
    from harness.core.gpr import GaussianProcessRegressor
    from harness.core.kernels import make_kernel
    from harness.datasets.sine import PRML_RANGE, sine, sine_data
    from harness.report.gpr_figure import draw_gpr, save_figure

    seed = parse_int("--seed", args.seed, minimum=0)
    restarts = parse_int("--restarts", args.restarts, minimum=0)
    if args.data is None:
        n = parse_int("--n", args.n, minimum=1)
        X, t = sine_data(n=n, noise_sd=args.noise, seed=seed)
        data = {"source": "sine", "n": n, "noise_sd": args.noise, "seed": seed,
                "x_range": list(PRML_RANGE), "features": ["x"]}
        x_plot, truth = np.linspace(0.0, 1.0, 300), sine
    else:
        X, t, names = read_regression_csv(args.data)
        data = {"source": args.data, "n": len(t), "features": names}
        x_plot, truth = None, None
    gpr = GaussianProcessRegressor(make_kernel(args.kernel), noise=0.1, n_restarts=restarts,
                                   seed=seed)
    with threadpool_limits(1 if len(t) <= 500 else None):   # small matrices: one thread is faster
        gpr.fit(X, t)
    out = out_folder(args.out, "gpr", "gpr.png, gpr.svg and gpr.json")
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    if X.shape[1] == 1:
        paths = save_figure(draw_gpr(gpr, x_plot, truth), out)
    summary = {
        "data": data, "kernel": gpr.kernel_.name, "params": gpr.kernel_.params(),
        "noise_variance": gpr.noise_, "log_evidence": gpr.log_evidence_,
        "param_names": [*gpr.kernel_.param_names(), "noise"], "theta": gpr.theta_.tolist(),
        "evaluations": gpr.evaluations_, "fit_seconds": gpr.fit_seconds_,
        "starts": [{**s, "start": s["start"].tolist(), "theta": s["theta"].tolist(),
                    "log_evidence": s["log_evidence"] if np.isfinite(s["log_evidence"]) else None}
                   for s in gpr.starts_],   # None: a start that never had a PD covariance
    }
    paths["json"] = out / "gpr.json"
    paths["json"].write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    params = ", ".join(f"{k}={v:.4g}" for k, v in gpr.kernel_.params().items())
    print(f"{gpr.kernel_.name}({params}), noise variance {gpr.noise_:.4g}, "
          f"log evidence {gpr.log_evidence_:.6f} ({gpr.evaluations_} evaluations, "
          f"{gpr.fit_seconds_:.3f} s)")
    if X.shape[1] != 1:
        print(f"no figure: the band is drawn for one feature, the data have {X.shape[1]}")
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    return 0
