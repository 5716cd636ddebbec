"""The sentence-transformers equivalent of Mirror-BERT: MultipleNegativesRankingLoss on
(x, x) pairs, same base model, data, batch size, max length, and scale = 1/τ."""

from __future__ import annotations

import time


def train_st_equivalent(strings, recipe, out_dir, max_steps=None, step_times=None, device=None, model="minilm"):
    """Train with SentenceTransformerTrainer + MNRL; return the trained SentenceTransformer.

    Args:
        strings: distinct training strings.
        recipe: an encodr Recipe (batch_size, max_length, epochs, lr, temperature, seed).
        out_dir: scratch directory for the trainer.
        max_steps: stop after this many steps (throughput runs).
        step_times: a list to which perf_counter() is appended at each step end.
        model: base model spec (an encodr alias or a local path).
    """
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from transformers import TrainerCallback

    from encodr.models import resolve

    model = SentenceTransformer(str(resolve(model).path), device=device)
    model.max_seq_length = recipe.max_length
    data = Dataset.from_dict({"anchor": list(strings), "positive": list(strings)})
    loss = MultipleNegativesRankingLoss(model, scale=1.0 / recipe.temperature)

    class Timer(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if step_times is not None:
                step_times.append(time.perf_counter())

    import torch

    cuda = torch.cuda.is_available() and device != "cpu"
    args = SentenceTransformerTrainingArguments(
        output_dir=str(out_dir),
        per_device_train_batch_size=recipe.batch_size,
        num_train_epochs=recipe.epochs,
        max_steps=max_steps or -1,
        learning_rate=recipe.lr,
        weight_decay=recipe.weight_decay,
        lr_scheduler_type="constant",
        warmup_steps=0,
        save_strategy="no",
        logging_strategy="no",
        report_to="none",
        seed=recipe.seed,
        bf16=cuda and torch.cuda.is_bf16_supported(),
        fp16=cuda and not torch.cuda.is_bf16_supported(),
        use_cpu=not cuda,
        disable_tqdm=True,
        dataloader_drop_last=False,
    )
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss, callbacks=[Timer()])
    trainer.train()
    model.eval()
    return model
