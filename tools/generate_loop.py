"""A Hugging Face GPT-2 generate loop (random weights from its config, bf16, KV cache, CUDA):
the program that found the host sampler's crashes (issue 22). Run it under dlpt with
tools/sampler_stress.sh. Usage: python tools/generate_loop.py [CALLS] (default 30)."""

import sys

import torch
import transformers

torch.manual_seed(0)
config = transformers.GPT2Config()
model = transformers.GPT2LMHeadModel(config).to("cuda", torch.bfloat16).eval()
ids = torch.randint(0, config.vocab_size, (4, 8), device="cuda")
options = dict(
    attention_mask=torch.ones_like(ids),
    max_new_tokens=64,
    min_new_tokens=64,  # random weights may pick EOS: always decode all 64 tokens
    do_sample=False,
    use_cache=True,
    pad_token_id=config.eos_token_id,
)
with torch.no_grad():
    for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 30):
        model.generate(ids, **options)
print("done")
