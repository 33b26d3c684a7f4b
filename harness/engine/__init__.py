"""The sampling engine: orthant samplers composed of a factor, a step and a walk, and the
annealed importance sampling of the latent-function samplers.

An orthant sampler (`sampler.OrthantSampler`, docs/math.md §4-§7) estimates
Z = P(v >= 0), v ~ N(0, R), and the test probabilities by walking the variables of v = L z in
order for many particles at once. Its three parts are chosen independently:

- the factor L: dense Cholesky (`dense_factor`), tile-low-rank (`tlr_factor`) or the Vecchia
  approximation (`vecchia_factor`);
- the step, how each variable is drawn and weighted: separation of variables (`sov_step`) or
  the saddle-point tilted proposal with its look-ahead (`tilted_step`);
- the walk, how the particles are used: importance sampling over independent randomisations
  of a QMC point set (`importance_walk`) or sequential importance resampling
  (`resampled_walk`).

The randomisations' sufficient statistics and the estimate built from them are in
`randomisations`; `orthant_method.OrthantMethod` is the mixin by which a method plugin
(harness.methods) declares its settings and picks a combination. `ais` holds the annealed
importance sampling shared by the MCMC methods (docs/math.md §9).

The layer sits between the model (Problem, Method, the reliability rules) and the plugins.
"""
