"""Train/test preparation of real data: a seeded stratified split and standardisation."""

from __future__ import annotations

import numpy as np


def class_counts(y: np.ndarray, n: int) -> dict[int, int]:
    """How many of n points each class gets, proportional to its share of y (largest
    remainder, so every count is within 1 of n * share and the counts sum to n)."""
    labels, sizes = np.unique(y, return_counts=True)
    exact = n * sizes / len(y)
    counts = np.floor(exact).astype(int)
    counts[np.argsort(counts - exact, kind="stable")[: n - counts.sum()]] += 1
    return dict(zip(labels.tolist(), counts.tolist(), strict=True))


def stratified_split(y: np.ndarray, n_train: int, n_test: int,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices of a seeded stratified train/test split of n_train + n_test <= len(y) points:
    each class is shuffled and dealt to the training part, then to the test part, in
    proportion to its share of the whole set."""
    train_counts, test_counts = class_counts(y, n_train), class_counts(y, n_test)
    room = {c: int(np.sum(y == c)) - train_counts[c] for c in train_counts}
    for c in test_counts:  # rounding both parts up can overfill a class: move the excess
        excess = max(test_counts[c] - room[c], 0)
        test_counts[c] -= excess
        for other in test_counts:
            take = min(excess, room[other] - test_counts[other]) if other != c else 0
            test_counts[other] += take
            excess -= take
    train, test = [], []
    for label in train_counts:
        idx = rng.permutation(np.flatnonzero(y == label))
        a, b = train_counts[label], test_counts[label]
        train.append(idx[:a])
        test.append(idx[a:a + b])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def standardise(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centre and scale both parts by the training part's mean and sd (ddof 0); features that
    are constant on the training part are only centred."""
    mean = X_train.mean(axis=0)
    sd = X_train.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return (X_train - mean) / sd, (X_test - mean) / sd
