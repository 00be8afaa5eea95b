"""The CDLM sampled softmax: distinct log-uniform negatives drawn as TensorFlow's
``log_uniform_candidate_sampler(unique=True)`` (and the released code) draw them.

Each check is a function of the sampler, and the last test shows that every check rejects the
sampler this project shipped before (``torch.unique`` kept the smallest ids, i.e. always the
most frequent words), so the checks can fail.
"""

from __future__ import annotations

import math

import pytest
import torch

from crossner_hf.modeling.rnn import sampled_softmax as ss


def _old_sample_negatives(n: int, vocab_size: int, generator=None):
    """The defective sampler, kept here only to prove the checks can fail: 4n+16 draws, torch.unique
    (sorted on CPU whatever ``sorted`` says), the first n kept."""
    log_v = math.log(vocab_size)
    u = torch.rand(4 * n + 16, generator=generator)
    ids = (torch.exp(u * log_v).floor().long() - 1).clamp(0, vocab_size - 2)
    return torch.unique(ids, sorted=False)[:n] + 1, 4 * n + 16


def check_first_draw_is_log_uniform(sample, vocab_size=30, n=6, draws=8000, seed=0):
    """The first id of each sample (in draw order) follows P(k) exactly: chi-square far below the 0.1% point."""
    g = torch.Generator().manual_seed(seed)
    counts = torch.zeros(vocab_size - 1)
    for _ in range(draws):
        ids, _ = sample(n, vocab_size, g)
        counts[ids[0] - 1] += 1
    expected = draws * ss.log_uniform_probs(torch.arange(vocab_size - 1), vocab_size - 1).float()
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 60.0, f"chi-square {chi2:.1f} with {vocab_size - 2} degrees of freedom (0.1% point ~ 58)"


def check_inclusion_matches_expected_count(sample, vocab_size=30, n=6, draws=8000, seed=1):
    """Every id, rare ones included, is drawn about as often as the expected count used to correct its logit."""
    g = torch.Generator().manual_seed(seed)
    ranks = torch.arange(vocab_size - 1)
    seen, expected = torch.zeros(vocab_size - 1), torch.zeros(vocab_size - 1, dtype=torch.float64)
    for _ in range(draws):
        ids, tries = sample(n, vocab_size, g)
        assert len(set(ids.tolist())) == n and int(ids.min()) >= 1 and int(ids.max()) < vocab_size
        seen[ids - 1] += 1
        expected += ss.expected_count(ranks, tries, vocab_size - 1)
    ratio = seen.double() / expected
    assert seen[-1] > 0, "the rarest id was never drawn"
    assert float(ratio.min()) > 0.85 and float(ratio.max()) < 1.15, ratio


def check_gradient_approaches_full_softmax(sample, seed=2, draws=1500):
    """Averaged over many draws, the sampled-softmax gradient of the output layer points where the full one does."""
    g = torch.Generator().manual_seed(seed)
    vocab_size, hidden, n = 25, 8, 12
    weight, bias = torch.randn(vocab_size, hidden, generator=g) * 0.5, torch.zeros(vocab_size)
    states = torch.randn(32, hidden, generator=g)
    targets = torch.randint(1, vocab_size, (32,), generator=g)
    w = weight.clone().requires_grad_()
    torch.nn.functional.cross_entropy(states @ w.T + bias, targets, reduction="sum").backward()
    full = w.grad[1:].flatten()
    mean = torch.zeros_like(weight)
    real = ss.sample_negatives
    try:
        ss.sample_negatives = lambda k, v, gen=None: sample(k, v, g)
        for _ in range(draws):
            w = weight.clone().requires_grad_()
            ss.sampled_softmax_loss(w, bias, states, targets, n, vocab_size).backward()
            mean += w.grad / draws
    finally:
        ss.sample_negatives = real
    rel = float((mean[1:].flatten() - full).norm() / full.norm())
    assert rel < 0.25, f"relative error of the mean sampled gradient {rel:.3f}"


CHECKS = [check_first_draw_is_log_uniform, check_inclusion_matches_expected_count,
          check_gradient_approaches_full_softmax]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_sampler(check):
    check(ss.sample_negatives)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_checks_reject_the_old_sampler(check):
    with pytest.raises(AssertionError):
        check(_old_sample_negatives)


def test_vectorised_draw_equals_the_sequential_loop():
    """The buffered draw returns what TensorFlow's loop would on the same stream of draws."""
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    for _ in range(50):
        ids, tries = ss.log_uniform_candidates(7, 12, g1)
        u = torch.rand(4 * 7 + 16, generator=g2, dtype=torch.float64)
        stream = (torch.exp(u * math.log(13)).floor().long() - 1).clamp(0, 11).tolist()
        chosen, k = [], 0
        while len(chosen) < 7:
            if k == len(stream):  # the vectorised draw doubles its buffer; follow it
                more = torch.rand(2 * (4 * 7 + 16), generator=g2, dtype=torch.float64)
                stream += (torch.exp(more * math.log(13)).floor().long() - 1).clamp(0, 11).tolist()
            if stream[k] not in chosen:
                chosen.append(stream[k])
            k += 1
        assert ids.tolist() == chosen and tries == k
        g2.set_state(g1.get_state())


def test_accidental_hits_are_masked_and_errors_say_what_to_change():
    weight, bias = torch.randn(10, 4), torch.zeros(10)
    loss = ss.sampled_softmax_loss(weight, bias, torch.randn(3, 4), torch.tensor([1, 2, 3]), 8, 10)
    assert torch.isfinite(loss) and loss > 0
    with pytest.raises(ValueError, match="lm_negatives"):
        ss.sample_negatives(9, 10)
