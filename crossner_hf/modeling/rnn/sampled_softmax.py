"""Sampled softmax with log-uniform negatives, as in the released CDLM code and TensorFlow.

The CDLM language model (Jia, Liang & Zhang, ACL 2019) trains its output layer with a
sampled softmax: per step, ``n`` *distinct* word ids are drawn from the log-uniform (Zipfian)
law over frequency-ranked ids,

    P(k) = log((k + 2) / (k + 1)) / log(V + 1)      (k = 0 the most frequent word),

*without replacement* in TensorFlow's sense (``log_uniform_candidate_sampler(unique=True)``,
which the release re-implements): ids are drawn one after another until ``n`` distinct ones
have appeared, and the number of draws that took (``num_tries``) defines each id's expected
count ``-expm1(num_tries * log1p(-P(k)))``. Logits are corrected by the log of that count,
for the true word and for each negative; a negative equal to the true word is masked.

Id 0 is ``<pad>`` in :class:`~crossner_hf.modeling.rnn.vocab.WordCharVocab`: it is never a target and
never sampled (the release's ``num_words`` excluded padding too), so ranks are ``id - 1``.

The drawing is vectorised: a buffer of draws is made at once and the first occurrences of
its distinct ids are found with ``torch.unique``; the buffer grows only when it holds fewer
than ``n`` distinct ids. The result has exactly the distribution of the sequential loop.
"""

from __future__ import annotations

import math

import torch

PAD_ID = 0  # never a target, never a negative


def log_uniform_probs(ids: torch.Tensor, range_max: int) -> torch.Tensor:
    """P(rank) of the log-uniform law over ``range_max`` ranks, in float64 (``ids`` are ranks)."""
    ranks = ids.double()
    return torch.log((ranks + 2.0) / (ranks + 1.0)) / math.log(range_max + 1.0)


def log_uniform_candidates(n: int, range_max: int, generator: torch.Generator | None = None
                           ) -> tuple[torch.Tensor, int]:
    """``n`` distinct ranks in ``[0, range_max)`` in the order of first appearance, and ``num_tries``.

    Draws i.i.d. log-uniform ranks until ``n`` distinct ones have appeared; ``num_tries``
    is the number of draws that took (the index of the n-th new rank, plus one).
    """
    if not 0 < n < range_max:
        raise ValueError(f"log-uniform sampling of {n} distinct ids needs 0 < n < range ({range_max}); "
                         "lower lm_negatives or build a larger vocabulary.")
    log_range = math.log(range_max + 1.0)
    drawn = torch.empty(0, dtype=torch.long)
    size = 4 * n + 16
    while True:
        u = torch.rand(size, generator=generator, dtype=torch.float64)
        more = (torch.exp(u * log_range).floor().long() - 1).clamp_(0, range_max - 1)
        drawn = torch.cat([drawn, more])
        distinct, inverse = torch.unique(drawn, return_inverse=True)
        if len(distinct) >= n:
            positions = torch.arange(len(drawn))
            first = torch.full((len(distinct),), len(drawn), dtype=torch.long)
            first = first.scatter_reduce(0, inverse, positions, reduce="amin")
            order = first.sort().values[:n]  # positions of the first n new ranks, in draw order
            return drawn[order], int(order[-1]) + 1
        size *= 2


def expected_count(ranks: torch.Tensor, num_tries: int, range_max: int) -> torch.Tensor:
    """TensorFlow's expected count of each rank in ``num_tries`` draws: ``1 - (1 - P)^num_tries``."""
    return -torch.expm1(num_tries * torch.log1p(-log_uniform_probs(ranks, range_max)))


def sample_negatives(n: int, vocab_size: int, generator: torch.Generator | None = None
                     ) -> tuple[torch.Tensor, int]:
    """``n`` distinct word ids (never ``<pad>``) and ``num_tries``, for a vocabulary of ``vocab_size``."""
    ranks, num_tries = log_uniform_candidates(n, vocab_size - 1, generator)
    return ranks + 1, num_tries


def sampled_softmax_loss(weight: torch.Tensor, bias: torch.Tensor, states: torch.Tensor, targets: torch.Tensor,
                         n_negatives: int, vocab_size: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Summed negative log-likelihood of ``targets`` under a sampled softmax over ``n_negatives`` negatives.

    ``states`` (N, H) are the LM states, ``weight`` (V, H) and ``bias`` (V,) the output layer,
    ``targets`` (N,) word ids (never ``<pad>``). Logits are corrected by the log expected
    count (see the module docstring); accidental hits are masked.
    """
    negatives, num_tries = sample_negatives(n_negatives, vocab_size, generator)
    negatives = negatives.to(states.device)
    range_max = vocab_size - 1
    true_log_count = torch.log(expected_count(targets - 1, num_tries, range_max)).to(states.dtype)
    neg_log_count = torch.log(expected_count(negatives - 1, num_tries, range_max)).to(states.dtype)
    true_logits = (states * weight[targets]).sum(-1) + bias[targets] - true_log_count
    neg_logits = states @ weight[negatives].T + bias[negatives] - neg_log_count  # (N, S)
    neg_logits = neg_logits.masked_fill(negatives.unsqueeze(0) == targets.unsqueeze(1), float("-inf"))
    logits = torch.cat([true_logits.unsqueeze(1), neg_logits], dim=1)
    return -torch.log_softmax(logits, dim=1)[:, 0].sum()
