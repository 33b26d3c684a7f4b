"""Records as text: what `run` and `reference` print (and a notebook Result's repr)."""

from __future__ import annotations


def format_record(r: dict) -> str:
    from harness.model.problem import describe_kernel

    lines = [f"{r['method']} on {r['problem']} (N={r['n_train']}, {r['n_test']} test points), "
             f"budget {r['budget']} {r['budget_unit']}, seed {r['seed']}"]
    if r.get("kernel"):
        lines.append(f"  kernel: {describe_kernel(r['kernel'])}")
    if r["status"] != "ok":
        lines.append(f"  status: {r['status']}: {r['reason']}")
    if r.get("log_marginal_likelihood") is not None:
        se = r.get("log_marginal_likelihood_se")
        lines.append(f"  log Z estimate: {r['log_marginal_likelihood']:.6f}"
                     + (f" ± {se:.2g}" if se is not None else ""))
    if "true_log_marginal_likelihood" in r:
        lines.append(f"  log Z truth ({r['truth_kind']}): {r['true_log_marginal_likelihood']:.6f}")
    if r.get("true_log_marginal_likelihood_se"):
        lines[-1] += f" ± {r['true_log_marginal_likelihood_se']:.2g}"
    if "abs_log_error" in r:
        lines.append(f"  |error| {r['abs_log_error']:.3g} nats, MAPE {r['mape_percent']:.3g} %"
                     + (" (at reference precision)" if r.get("at_reference_precision") else ""))
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
    if r.get("diagnostics"):
        lines.append("  diagnostics: " + ", ".join(f"{k}={v}" for k, v in r["diagnostics"].items()))
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
