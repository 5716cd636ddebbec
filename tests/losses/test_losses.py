import math

import pytest
import torch

from encodr.losses import MirrorInfoNCELoss


def test_infonce_known_value_orthogonal_pairs():
    # N = 2 strings, views identical, the two strings orthogonal: for every anchor the
    # positive has cos 1 and the 2N-2 = 2 negatives cos 0.
    tau = 0.2
    a = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    loss = MirrorInfoNCELoss(tau)(a, a.clone())
    expected = -math.log(math.exp(1 / tau) / (math.exp(1 / tau) + 2))
    assert loss.item() == pytest.approx(expected, rel=1e-6)


def test_infonce_uses_all_2n_minus_2_negatives():
    # All 2N views identical: the positive and every negative tie, so the loss is
    # log(2N - 1) whatever τ is (self-similarity is excluded from the denominator).
    n = 5
    v = torch.ones(n, 3)
    for tau in (0.04, 0.2):
        assert MirrorInfoNCELoss(tau)(v, v.clone()).item() == pytest.approx(math.log(2 * n - 1), rel=1e-6)


def test_infonce_is_symmetric_in_views_and_scale_invariant():
    torch.manual_seed(0)
    a, b = torch.randn(8, 16), torch.randn(8, 16)
    loss = MirrorInfoNCELoss(0.04)
    assert loss(a, b).item() == pytest.approx(loss(b, a).item(), rel=1e-6)
    assert loss(a, b).item() == pytest.approx(loss(3 * a, 0.5 * b).item(), rel=1e-5)


def test_infonce_gradient_pulls_views_together():
    torch.manual_seed(0)
    a = torch.randn(4, 8, requires_grad=True)
    b = (a.detach() + 0.5 * torch.randn(4, 8)).requires_grad_()
    loss_fn = MirrorInfoNCELoss(0.1)
    before = loss_fn(a, b)
    before.backward()
    with torch.no_grad():
        a2, b2 = a - 0.5 * a.grad, b - 0.5 * b.grad
    assert loss_fn(a2, b2).item() < before.item()
    assert a.grad.shape == (4, 8)


def test_infonce_excluded_pairs_leave_the_denominator():
    # All 2N views identical: every logit ties. Excluding the pair (0, 1) removes two views
    # from the denominators of strings 0 and 1 (4 anchors: log(2N-3)); the other 2N-4
    # anchors keep log(2N-1). The diagonal of `exclude` is ignored (positives stay).
    n = 5
    v = torch.ones(n, 3)
    exclude = torch.eye(n, dtype=torch.bool)
    exclude[0, 1] = exclude[1, 0] = True
    expected = (4 * math.log(2 * n - 3) + (2 * n - 4) * math.log(2 * n - 1)) / (2 * n)
    assert MirrorInfoNCELoss(0.2)(v, v.clone(), exclude).item() == pytest.approx(expected, rel=1e-6)
    assert MirrorInfoNCELoss(0.2)(v, v.clone(), torch.zeros(n, n, dtype=torch.bool)).item() == pytest.approx(
        math.log(2 * n - 1), rel=1e-6
    )


def test_additive_margin_known_value():
    # Two orthogonal pairs, each translation identical to its source: the positive cosine is 1,
    # the negative 0. Each direction: −log(e^{s(1−m)} / (e^{s(1−m)} + e^0)); the loss sums both.
    from encodr.losses import AdditiveMarginLoss

    s, m = 2.0, 0.3  # a small scale keeps the exact value well above float32 resolution
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    one_way = -math.log(math.exp(s * (1 - m)) / (math.exp(s * (1 - m)) + 1.0))
    assert AdditiveMarginLoss(m, s)(x, x.clone()).item() == pytest.approx(2 * one_way, rel=1e-5)
    # with no margin and scale 1, a batch where every cosine ties gives log(B) per direction
    v = torch.ones(4, 3)
    assert AdditiveMarginLoss(0.0, 1.0)(v, v.clone()).item() == pytest.approx(2 * math.log(4), rel=1e-6)
    # the margin makes the loss larger than without it, and its gradient pulls translations together
    a = torch.randn(6, 8, requires_grad=True)
    b = (a.detach() + 0.3 * torch.randn(6, 8)).requires_grad_()
    with_margin = AdditiveMarginLoss(0.3)(a, b)
    assert with_margin.item() > AdditiveMarginLoss(0.0)(a, b).item()
    with_margin.backward()
    with torch.no_grad():
        closer = AdditiveMarginLoss(0.3)(a - 0.05 * a.grad, b - 0.05 * b.grad)
    assert closer.item() < with_margin.item()
