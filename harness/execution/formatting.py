"""Records as text: what `run` and `reference` print (and a notebook Result's repr)."""

from __future__ import annotations

import math

OFF_BY = 3.0   # an error beyond this many standard errors is said in words
LONG_TEXT = 40   # diagnostics texts longer than this are shown with -v only


def with_se(value: float, se: float | None) -> str:
    """'value ± se' with the SE to two significant digits and the value to the same decimal
    place (the digits its SE supports): -20.264765, 0.029 -> '-20.265 ± 0.029'. Without a
    positive finite SE, six decimals."""
    if se is None or not math.isfinite(se) or se <= 0:
        return f"{value:.6f}"
    decimals = max(0, 1 - math.floor(math.log10(se)))
    return f"{value:.{decimals}f} ± {se:.{decimals}f}" if decimals else f"{value:.0f} ± {se:.2g}"


def readable(value) -> str:
    """A diagnostic for people: floats to three significant digits."""
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def wrapped(head: str, items: list[str], width: int = 100, indent: str = "    ",
            separator: str = ",") -> list[str]:
    """'head a, b, c' over as many lines of at most `width` characters as it needs (items
    that are words: separator="")."""
    lines, line = [], head
    for i, item in enumerate(items):
        piece = item + (separator if i < len(items) - 1 else "")
        if len(line) + 1 + len(piece) > width and line.strip() != head.strip():
            lines.append(line)
            line = indent + piece
        else:
            line = f"{line} {piece}" if line else piece
    return lines + [line]


def error_in_se(r: dict) -> float | None:
    """|log Ẑ - log Z| in standard errors: the estimate's (with its stated approximation
    error, for an approximation that states one) and the reference's combined."""
    se = r.get("log_marginal_likelihood_se")
    if r.get("abs_log_error") is None or se is None:
        return None
    combined = math.hypot(se, r.get("approximation_error") or 0.0,
                          r.get("true_log_marginal_likelihood_se") or 0.0)
    return r["abs_log_error"] / combined if combined > 0 else None


def off_line(r: dict, z: float) -> str:
    """Why an answer is more than OFF_BY standard errors from the truth, and what would help:
    for an exact method the diagnostics, another seed or a larger budget; for an approximation
    its approximation, which no budget removes, and the settings that reduce it (the record's
    closer_with) or an exact method."""
    against = "the reference" if r.get("truth_kind") == "reference" else "the truth"
    head = f"the estimate is {z:.2g} standard errors from {against}, more than {OFF_BY:g}: "
    if not r.get("approximation"):
        return head + ("its SE does not cover its error (a biased or degenerate estimate, or a "
                       "rare run): see the diagnostics, try another seed or a larger budget")
    closer = r.get("closer_with") or []
    return head + (f"{r['method_name']} is an approximation, and its error is the "
                   f"approximation's, which no budget removes: "
                   + (f"change {' or '.join(closer)} (e.g. a larger {closer[0]}) to bring it "
                      f"closer, or use an exact method" if closer else
                      "no setting removes it; for this accuracy use an exact method"))


def format_record(r: dict, verbose: bool = False) -> str:
    """A run's record for people: numbers to the digits their SEs support, the error in
    standard errors (said in words beyond OFF_BY), the diagnostics to three significant
    digits (verbose: as recorded)."""
    from harness.model.problem import describe_kernel

    lines = [f"{r['method']} on {r['problem']} (N={r['n_train']}, {r['n_test']} test points), "
             f"budget {r['budget']} {r['budget_unit']}, seed {r['seed']}"]
    if r.get("kernel"):
        lines.append(f"  kernel: {describe_kernel(r['kernel'])}")
    approx = bool(r.get("approximation"))
    if r["status"] != "ok":
        lines.append(f"  status: {r['status']}{' (approx.)' if approx else ''}: {r['reason']}")
    elif approx:
        lines.append("  status: ok (approx.): an approximation, its estimand not the model's "
                     "exact quantity"
                     + ("" if r.get("approximation_error") is None else
                        f"; approximation error about {r['approximation_error']:.2g} nats"))
    if r.get("log_marginal_likelihood") is not None:
        lines.append("  log Z estimate: " + with_se(r["log_marginal_likelihood"],
                                                    r.get("log_marginal_likelihood_se")))
    if "true_log_marginal_likelihood" in r:
        lines.append(f"  log Z truth ({r['truth_kind']}): "
                     + with_se(r["true_log_marginal_likelihood"],
                               r.get("true_log_marginal_likelihood_se")))
    if "abs_log_error" in r:
        z = error_in_se(r)
        lines.append(f"  |error| {r['abs_log_error']:.3g} nats"
                     + (f" ({z:.2g} SE)" if z is not None else "")
                     + f", MAPE {r['mape_percent']:.3g} %"
                     + (" (at reference precision)" if r.get("at_reference_precision") else ""))
        if z is not None and z > OFF_BY:
            lines += wrapped("  off:", off_line(r, z).split(), separator="")
    if "mae" in r:
        lines.append(f"  test probabilities: MAE {r['mae']:.3g}")
    if "accuracy" in r:
        lines.append(f"  held-out labels: accuracy {r['accuracy']:.3g}, log-loss "
                     f"{r['log_loss']:.3g} nats, Brier {r['brier']:.3g}")
    lines.append(f"  CPU {r['cpu_seconds']:.2f} s, wall {r['wall_seconds']:.2f} s, "
                 f"peak memory {r['peak_memory_mb']:.0f} MB")
    if r.get("setup_cpu_seconds") is not None:
        lines.append(f"  set-up (prepare) CPU {r['setup_cpu_seconds']:.2f} s, wall "
                     f"{r['setup_wall_seconds']:.2f} s"
                     + (" (cached: built by an earlier job)" if r["setup_cached"] else ""))
    if r.get("parts"):
        elapsed = r["diagnostics"].get("elapsed_seconds")
        lines.append(f"  split into {r['parts']} parts, run by {r['workers']} worker"
                     + ("s" if r["workers"] != 1 else "")
                     + (f", {elapsed:.2f} s elapsed" if elapsed is not None else ""))
    for warning in r.get("warnings") or ():
        lines += wrapped("  warning:", warning.split(), separator="")
    if r.get("diagnostics"):
        items = r["diagnostics"].items()
        if verbose:
            lines += wrapped("  diagnostics:", [f"{k}={v}" for k, v in items])
        else:   # long texts (how an SE is computed, ...) only with -v
            short = [f"{k}={readable(v)}" for k, v in items
                     if not (isinstance(v, str) and len(v) > LONG_TEXT)]
            lines += wrapped("  diagnostics:", short)
            if len(short) < len(items):
                lines[-1] += " (-v: every one, unrounded)"
    return "\n".join(lines)


def format_reference(r: dict) -> str:
    """A reference record for people: values, precision, how it stopped and its checks."""
    from harness.model.reference_values import describe

    pse = r.get("test_probabilities_se") or []
    lines = [f"reference of {r['problem']} (N={r['n_train']}, {r['n_test']} test points)",
             f"  log Z: {r['log_marginal_likelihood']:.6f} ± "
             f"{r['log_marginal_likelihood_se']:.2g}",
             f"  {describe(r)}",
             f"  stopped: {r['stopped']} after {len(r['rounds'])} round(s); CPU "
             f"{r['cpu_seconds']:.1f} s (reference {r['reference_cpu_seconds']:.1f} s), wall "
             f"{r['wall_seconds']:.1f} s"]
    if pse:
        lines.insert(2, f"  test probabilities: {len(pse)}, SE max {max(pse):.2g}, mean "
                        f"{sum(pse) / len(pse):.2g}")
    for c in r["checks"]:
        numbers = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in c.items()
                            if k not in ("name", "passed", "reason", "limits"))
        lines.append(f"  check {c['name']}: {'passed' if c['passed'] else 'FAILED'} ({numbers})"
                     + (f": {c['reason']}" if c.get("reason") else ""))
    return "\n".join(lines)
