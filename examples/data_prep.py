"""A training loop whose batches are prepared in Python, on the step's own thread: the case
where a step's time goes into plain Python (tokenising, collating, augmenting) that launches no
op, and the GPU waits for it at the start of every step.

dlpt's host sampler shows where that time goes, per line (`load_batch`, `tokenize`), and on a
GPU which of those lines the GPU waited for before each step's first kernel:

    python -m dlpt --skip-first 2 examples/data_prep.py            # GPU when there is one, else CPU
    python -m dlpt --skip-first 2 --timeline 2 --html prep.html examples/data_prep.py
"""

import argparse

import torch

VOCAB, SEQ, BATCH, WIDTH = 5000, 64, 32, 512


def tokenize(text: str) -> list[int]:
    return [hash(word) % VOCAB for word in text.split()][:SEQ]


def load_batch(step: int) -> torch.Tensor:
    """Build a batch the slow way: strings, Python lists, then one tensor."""
    rows = []
    for i in range(BATCH):
        text = " ".join(f"w{(step * 31 + i * 7 + j) % 997}" for j in range(SEQ * 8))
        ids = tokenize(text)
        rows.append(ids + [0] * (SEQ - len(ids)))
    return torch.tensor(rows)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    torch.manual_seed(0)
    emb = torch.nn.Embedding(VOCAB, WIDTH).to(args.device)
    mlp = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU(), torch.nn.Linear(WIDTH, VOCAB))
    mlp = mlp.to(args.device)
    opt = torch.optim.AdamW([*emb.parameters(), *mlp.parameters()], lr=1e-3)
    for step in range(args.steps):
        ids = load_batch(step).to(args.device)
        logits = mlp(emb(ids))
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)


if __name__ == "__main__":
    main()
