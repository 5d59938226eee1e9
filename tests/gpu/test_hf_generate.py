"""Hugging Face GPT-2 ``generate()`` (random weights from its config: no download; bf16, KV
cache): the model code lives in an installed package, yet the default report must put its
kernels under ``modeling_gpt2.py`` lines, not directly under the ``model.generate(...)`` call.

Inside ``nn.Module.__call__`` a package's frames are model code and stay; generate()'s decoding
loop (transformers/generation/utils.py) runs outside any module and folds, as torch does.
"""

from __future__ import annotations

import pytest
import torch

import dlpt
from dlpt.model.metrics import METRICS
from dlpt.model.tree import Node, build_tree, walk
from dlpt.trees.folding import FoldedTable
from dlpt.trees.processors import collapse_library, collapse_lone_forward

pytestmark = pytest.mark.gpu

NEW_TOKENS = 8


def kernel_time(root: Node) -> tuple[int, int]:
    """(kernel time in the tree, kernel time beneath a frame of modeling_gpt2.py)."""
    total = under = 0
    for node, _ in walk(root):
        if node.kind != "kernel":
            continue
        ns = node.metrics.get("gpu_ns", 0)
        total += ns
        a = node.parent
        while a is not None and not (a.kind == "frame" and a.file.endswith("modeling_gpt2.py")):
            a = a.parent
        if a is not None:
            under += ns
    return total, under


def test_gpt2_generate_kernels_sit_under_modeling_gpt2_lines():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config()
    model = transformers.GPT2LMHeadModel(config).to("cuda", torch.bfloat16).eval()
    ids = torch.randint(0, config.vocab_size, (2, 8), device="cuda")
    kwargs = dict(
        attention_mask=torch.ones_like(ids),
        max_new_tokens=NEW_TOKENS,
        min_new_tokens=NEW_TOKENS,  # random weights may pick EOS: always decode all 8 tokens
        do_sample=False,
        use_cache=True,
        pad_token_id=config.eos_token_id,
    )
    with torch.no_grad():
        model.generate(ids, **kwargs)  # warm-up: cuBLAS handles, caching allocator
        torch.cuda.synchronize()
        with dlpt.profile() as prof:
            out = model.generate(ids, **kwargs)
    assert out.shape == (2, 8 + NEW_TOKENS)
    session = prof.session
    assert session.meta["gpu"]["enabled"], session.meta["gpu"]

    # The tree the default report shows (library frames folded, lone <forward> dropped) ...
    shown = FoldedTable(session, show_all=False).tree(METRICS["gpu"], None)
    total, under = kernel_time(shown)
    assert total > 0
    assert under / total >= 0.8, f"only {under / total:.1%} of kernel time under modeling_gpt2.py lines"
    # ... is the processors' folding, node for node.
    folded = collapse_lone_forward(collapse_library(build_tree(session)))
    assert kernel_time(folded) == (total, under)
    # The modeling lines are shown with their own names, beneath the user's generate() line.
    names = {n.name for n, _ in walk(shown) if n.kind == "frame" and n.file.endswith("modeling_gpt2.py")}
    assert any(name.startswith("GPT2LMHeadModel") for name in names), names
    assert any("Attention" in name for name in names), names
    # Suggestions sit on this file's generate() line, not on a transformers wrapper (issue 33),
    # and the source text of the modeling lines is kept (issue 33: "(source not stored)").
    from dlpt.analysis.inputs import analyze
    from dlpt.analysis.suggest import findings

    for f in findings(analyze(session)):
        assert not f.file or f.file == __file__, (f.rule, f.file, f.line)
    modeling = [f for f in session.meta["sources"] if f.endswith("modeling_gpt2.py")]
    assert modeling and session.meta["sources"][modeling[0]], "modeling_gpt2.py's lines are stored"
