"""A batched linear-chain CRF with start and stop transitions (Lample et al. 2016).

``CRF.forward`` returns the log-likelihood of each tag sequence (forward algorithm in log
space, masked so padded positions neither score nor transition); ``CRF.decode`` returns
the Viterbi paths. Both loop over time only, vectorised over the batch and the tags, and
accept left-aligned masks (each row a prefix of ones), the layout of padded batches.

Tested against brute-force enumeration of every tag sequence on small cases, and against
``pytorch-crf`` in ``benchmarks/cdlm.py`` (same parameterisation: ``start_transitions``,
``end_transitions``, ``transitions[i, j]`` = score of tag ``j`` after tag ``i``).

Example:
    >>> import torch
    >>> crf = CRF(3)
    >>> emissions = torch.randn(2, 4, 3)
    >>> mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)
    >>> crf(emissions, torch.zeros(2, 4, dtype=torch.long), mask).shape
    torch.Size([2])
    >>> [len(p) for p in crf.decode(emissions, mask)]
    [4, 2]
"""

from __future__ import annotations

import torch
from torch import nn


class CRF(nn.Module):
    """Linear-chain CRF over ``num_tags`` tags."""

    def __init__(self, num_tags: int):
        super().__init__()
        if num_tags < 1:
            raise ValueError(f"CRF needs at least one tag, got {num_tags}.")
        self.num_tags = num_tags
        self.start_transitions = nn.Parameter(torch.empty(num_tags))
        self.end_transitions = nn.Parameter(torch.empty(num_tags))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # pytorch-crf's initialisation, so the two are interchangeable
        for p in (self.start_transitions, self.end_transitions, self.transitions):
            nn.init.uniform_(p, -0.1, 0.1)

    def _check(self, emissions: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        if emissions.dim() != 3 or emissions.size(-1) != self.num_tags:
            raise ValueError(f"emissions must be (batch, time, {self.num_tags}), got {tuple(emissions.shape)}.")
        if mask is None:
            return torch.ones(emissions.shape[:2], dtype=torch.bool, device=emissions.device)
        mask = mask.bool()
        if mask.shape != emissions.shape[:2]:
            raise ValueError(f"mask shape {tuple(mask.shape)} does not match emissions {tuple(emissions.shape[:2])}.")
        if emissions.size(1) and not bool(mask[:, 0].all()):
            raise ValueError("The first time step must be unmasked in every row (left-aligned, non-empty sequences).")
        return mask

    def forward(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Log-likelihood ``log p(tags | emissions)`` of each row (shape ``(batch,)``)."""
        mask = self._check(emissions, mask)
        return self._score(emissions, tags, mask) - self._log_partition(emissions, mask)

    def _score(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, time = tags.shape
        maskf = mask.to(emissions.dtype)
        emit = emissions.gather(-1, tags.unsqueeze(-1)).squeeze(-1)  # (B, T)
        score = self.start_transitions[tags[:, 0]] + (emit * maskf).sum(1)
        if time > 1:
            trans = self.transitions[tags[:, :-1], tags[:, 1:]]  # (B, T-1)
            score = score + (trans * maskf[:, 1:]).sum(1)
        last = tags.gather(1, (mask.sum(1) - 1).clamp(min=0).unsqueeze(1)).squeeze(1)
        return score + self.end_transitions[last]

    def _log_partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        alpha = self.start_transitions + emissions[:, 0]  # (B, C)
        trans = self.transitions.unsqueeze(0)  # (1, C, C)
        for t in range(1, emissions.size(1)):
            nxt = torch.logsumexp(alpha.unsqueeze(2) + trans, dim=1) + emissions[:, t]
            alpha = torch.where(mask[:, t].unsqueeze(1), nxt, alpha)
        return torch.logsumexp(alpha + self.end_transitions, dim=1)

    @torch.no_grad()
    def decode(self, emissions: torch.Tensor, mask: torch.Tensor | None = None) -> list[list[int]]:
        """Viterbi: the highest-scoring tag sequence of each row, as many tags as its mask allows."""
        mask = self._check(emissions, mask)
        batch, time, _ = emissions.shape
        if time == 0:
            return [[] for _ in range(batch)]
        score = self.start_transitions + emissions[:, 0]
        history = []
        trans = self.transitions.unsqueeze(0)
        for t in range(1, time):
            best, idx = (score.unsqueeze(2) + trans).max(dim=1)  # over the previous tag
            nxt = best + emissions[:, t]
            keep = mask[:, t].unsqueeze(1)
            score = torch.where(keep, nxt, score)
            # padded steps point each tag to itself, so backtracking passes through them unchanged
            history.append(torch.where(keep, idx, torch.arange(self.num_tags, device=idx.device).expand_as(idx)))
        score = score + self.end_transitions
        best_last = score.argmax(dim=1)
        path = [best_last]
        for idx in reversed(history):
            path.append(idx.gather(1, path[-1].unsqueeze(1)).squeeze(1))
        full = torch.stack(path[::-1], dim=1).tolist()  # (B, T)
        lengths = mask.sum(1).tolist()
        return [row[:n] for row, n in zip(full, lengths)]
