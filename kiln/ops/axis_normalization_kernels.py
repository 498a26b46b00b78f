"""numba kernels of the normalizations oneDNN 3.2 has no primitive for: a layer normalization
over axes that are not the last ones, Keras's `rms_scaling`, RMSNormalization,
UnitNormalization and GroupNormalization (oneDNN has group normalization only from 3.3, and no
RMS flag before 3.5).

They all see the input, in its plain Keras order, as a 4D array (A, S, G, K): one statistic
per (a, g) pair, over the S * K values of that pair. The per-feature weights (gamma, beta)
are indexed either by s (a layer normalization over middle axes: S is those axes, G what
follows them, K = 1) or by the channel (g * K + k) // per_channel (group normalization: G
groups of K = channels per group * positions after the channel axis).

    mode CENTERED          y = (x - mean) * r * gamma + beta,   r = 1 / sqrt(var + eps)
    mode VARIANCE_SCALED   y = x * r * gamma,                   r = 1 / sqrt(var + eps)
                           (Keras 3's LayerNormalization(rms_scaling=True): scaled by the
                           variance, not centred)
    mode ROOT_MEAN_SQUARE  y = x * r * gamma,                   r = 1 / sqrt(mean(x^2) + eps)
    mode UNIT              y = x * min(1 / sqrt(sum(x^2)), 1 / eps)

Forward keeps three values per statistic for backward: the centre subtracted inside the
variance (the mean, or 0), r, and the coefficient of the (x - centre) term of the input
gradient (r^3 / n, r^3, or 0 where UnitNormalization's clamp holds r constant). One pass of
the weight gradients runs in parallel over the weights' entries, so no two threads add into
one entry. Every loop is parallel over statistics or weight entries, never over samples in
Python.
"""

import numpy as np

from .numba_config import PARALLEL, njit, prange

CENTERED, VARIANCE_SCALED, ROOT_MEAN_SQUARE, UNIT = 0, 1, 2, 3
STATISTICS = 3  # centre, r, coefficient per (a, g)


@njit(inline="always")
def _weight_index(s, g, k, K, weights_on_s, per_channel):
    if weights_on_s:
        return s
    return (g * K + k) // per_channel


@njit(**PARALLEL)
def normalize_forward_kernel(x, y, gamma, beta, statistics, A, S, G, K, epsilon, mode,
                             weights_on_s, per_channel, use_gamma, use_beta):
    """y from x (flat, (A, S, G, K) row-major); statistics (A * G * 3) for backward."""
    n = S * K
    for row in prange(A * G):
        a, g = row // G, row % G
        total = 0.0
        for s in range(S):
            base = ((a * S + s) * G + g) * K
            for k in range(K):
                total += np.float64(x[base + k])
        mean = total / n if mode == CENTERED or mode == VARIANCE_SCALED else 0.0
        squares = 0.0
        for s in range(S):
            base = ((a * S + s) * G + g) * K
            for k in range(K):
                d = np.float64(x[base + k]) - mean
                squares += d * d
        coefficient = 0.0
        if mode == UNIT:
            limit = 1.0 / epsilon
            r = limit if squares * limit * limit <= 1.0 else 1.0 / np.sqrt(squares)
            if r < limit:
                coefficient = r * r * r
        else:
            r = 1.0 / np.sqrt(squares / n + epsilon)
            coefficient = r * r * r / n
        statistics[row * 3] = mean
        statistics[row * 3 + 1] = r
        statistics[row * 3 + 2] = coefficient
        shift = mean if mode == CENTERED else 0.0  # only a layer normalization centres y
        for s in range(S):
            base = ((a * S + s) * G + g) * K
            for k in range(K):
                value = (np.float64(x[base + k]) - shift) * r
                p = _weight_index(s, g, k, K, weights_on_s, per_channel)
                if use_gamma:
                    value *= gamma[p]
                if use_beta:
                    value += beta[p]
                y[base + k] = value


@njit(**PARALLEL)
def normalize_input_grad_kernel(x, dy, dx, gamma, statistics, A, S, G, K, mode, weights_on_s,
                                per_channel, use_gamma):
    """dx from dy; g_hat = dy * gamma is the gradient of the normalized value x_hat.

    CENTERED:  dx = r * (g_hat - mean(g_hat) - x_hat * mean(g_hat * x_hat))
    otherwise: dx = r * g_hat - coefficient * (x - centre) * sum(g_hat * x)
    """
    n = S * K
    for row in prange(A * G):
        a, g = row // G, row % G
        centre = statistics[row * 3]
        r = statistics[row * 3 + 1]
        coefficient = statistics[row * 3 + 2]
        sum_grad = 0.0
        sum_product = 0.0
        for s in range(S):
            base = ((a * S + s) * G + g) * K
            for k in range(K):
                grad = np.float64(dy[base + k])
                if use_gamma:
                    grad *= gamma[_weight_index(s, g, k, K, weights_on_s, per_channel)]
                value = np.float64(x[base + k])
                if mode == CENTERED:
                    value = (value - centre) * r
                sum_grad += grad
                sum_product += grad * value
        for s in range(S):
            base = ((a * S + s) * G + g) * K
            for k in range(K):
                grad = np.float64(dy[base + k])
                if use_gamma:
                    grad *= gamma[_weight_index(s, g, k, K, weights_on_s, per_channel)]
                value = np.float64(x[base + k])
                if mode == CENTERED:
                    normalized = (value - centre) * r
                    dx[base + k] = r * (grad - sum_grad / n - normalized * sum_product / n)
                else:
                    dx[base + k] = r * grad - coefficient * (value - centre) * sum_product


@njit(**PARALLEL)
def normalize_weight_grad_kernel(x, dy, statistics, gamma_grad, beta_grad, A, S, G, K, mode,
                                 weights_on_s, per_channel, use_gamma, use_beta):
    """gamma_grad = sum(dy * x_hat), beta_grad = sum(dy) per weight entry (one thread each);
    x_hat = (x - mean) * r when CENTERED, else x * r."""
    entries = S if weights_on_s else G * K // per_channel
    for p in prange(entries):
        total_scaled = 0.0
        total = 0.0
        if weights_on_s:
            for a in range(A):
                for g in range(G):
                    row = a * G + g
                    shift = statistics[row * 3] if mode == CENTERED else 0.0
                    r = statistics[row * 3 + 1]
                    base = ((a * S + p) * G + g) * K
                    for k in range(K):
                        grad = np.float64(dy[base + k])
                        total_scaled += grad * (np.float64(x[base + k]) - shift) * r
                        total += grad
        else:
            g = p * per_channel // K
            first = p * per_channel - g * K
            for a in range(A):
                row = a * G + g
                shift = statistics[row * 3] if mode == CENTERED else 0.0
                r = statistics[row * 3 + 1]
                for s in range(S):
                    base = ((a * S + s) * G + g) * K
                    for k in range(first, first + per_channel):
                        grad = np.float64(dy[base + k])
                        total_scaled += grad * (np.float64(x[base + k]) - shift) * r
                        total += grad
        if use_gamma:
            gamma_grad[p] = total_scaled
        if use_beta:
            beta_grad[p] = total
