"""``hlox.scipy.stats``: probability distributions and sample statistics with
``jax.scipy.stats``'s names (one module per distribution), written on ``hlox.numpy`` and
``hlox.scipy.special``."""
from hlox.scipy.stats import (  # noqa: F401
    bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon, gamma, gennorm, geom,
    gumbel_l, gumbel_r, laplace, logistic, multinomial, multivariate_normal, nbinom, norm,
    pareto, poisson, t, truncnorm, uniform, vonmises, wrapcauchy)
from hlox.scipy.stats._core import ModeResult, mode, rankdata, sem  # noqa: F401
from hlox.scipy.stats.kde import gaussian_kde  # noqa: F401
