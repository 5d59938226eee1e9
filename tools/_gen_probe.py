import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
cfg = GPT2Config()
model = GPT2LMHeadModel(cfg).cuda().to(torch.bfloat16).eval()  # @build
prompt = torch.randint(0, cfg.vocab_size, (4, 16), device="cuda")
with torch.no_grad():
    for _ in range(30):
        model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=32,
            min_new_tokens=32,
            do_sample=False,
            use_cache=True,
            pad_token_id=cfg.eos_token_id,
        )
