"""On CPU the training stages score only the labelled positions in TRL's fused log-prob head
(training.cpu_scoring): the same loss, log-probabilities and gradients as scoring every position,
for a fraction of the work when a 2,000-token Harness prompt is masked and a short completion is
labelled."""

from __future__ import annotations

import pytest
import torch

from tests.training.conftest import price_examples


@pytest.fixture()
def fused_tiny_model():
    from transformers import AutoModelForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    from harness.model_cache import tiny_model_dir

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir())
    add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))
    return model


def _scored(model, *, compact: bool, monkeypatch) -> tuple[torch.Tensor, ...]:
    import trl.trainer.utils as utils

    monkeypatch.setattr(utils, "_use_triton", lambda device: compact)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 49152, (2, 300), generator=generator)
    labels = ids.clone()
    labels[:, :270] = -100  # the prompt: only the last 30 positions of each row are trained on
    model.zero_grad()
    out = model(input_ids=ids, labels=labels, fused_lm_head=True)
    out.loss.backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    return out.loss.detach(), out.log_probs.detach(), out.entropy.detach(), grads


def test_scoring_only_the_labelled_positions_gives_the_same_loss_and_gradients(
    fused_tiny_model, monkeypatch
):
    every = _scored(fused_tiny_model, compact=False, monkeypatch=monkeypatch)  # TRL's choice on CPU
    labelled = _scored(fused_tiny_model, compact=True, monkeypatch=monkeypatch)
    for a, b in zip(every, labelled, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert float(every[0]) > 0


def test_an_sft_run_turns_it_on(tmp_path, monkeypatch):
    """SFT, like OPD and RL: TRL would score the whole 2,000-token prompt of every example on
    CPU."""
    import trl.trainer.distillation_trainer as distillation
    import trl.trainer.utils as utils

    from training import cpu_scoring
    from training.sft_config import SFTStageConfig
    from training.sft_trainer import run_sft

    cpu = torch.device("cpu")
    for module in (utils, distillation):
        monkeypatch.setattr(module, "_use_triton", lambda device: False)  # TRL's choice off Triton
    monkeypatch.setattr(cpu_scoring, "_PATCHED", False)
    run_sft(
        SFTStageConfig(model="tiny", output_dir=str(tmp_path / "sft"), max_steps=1, save_steps=1),
        examples=price_examples(2),
    )
    assert utils._use_triton(cpu) is True and distillation._use_triton(cpu) is True
