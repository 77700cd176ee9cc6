#!/usr/bin/env python3
"""The peer figure for scripts/cuda-check.sh: a Llama-shaped model with
random weights in Hugging Face transformers on the GPU, prefill of
--prompt tokens and greedy decode of --gen tokens with a static cache.
Prints one JSON object. The shapes are poot synth's presets of the same
names (driver/synth/presets.go)."""
import argparse
import json
import time

import torch
import transformers

SHAPES = {
    "llama3.2-1b": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                        head_dim=64, intermediate_size=8192, tie_word_embeddings=True,
                        rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
    "llama3.1-8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                        head_dim=128, intermediate_size=14336, tie_word_embeddings=False,
                        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
}


def timed(f, reps):
    best = float("inf")
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        f()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="llama3.2-1b", choices=sorted(SHAPES))
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    cfg = transformers.LlamaConfig(vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5,
                                   rope_theta=500000.0, bos_token_id=None, eos_token_id=None, pad_token_id=0,
                                   **SHAPES[a.preset])
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.LlamaForCausalLM(cfg).to(torch.float16).eval()
    ids = torch.randint(1, cfg.vocab_size, (1, a.prompt), device="cuda")
    short = ids[:, :8]
    with torch.no_grad():
        prefill = timed(lambda: model(ids), a.reps + 1)
        gen = lambda n: model.generate(short, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                                       cache_implementation="static")
        # generate's own prefill of 8 tokens and first token, timed apart
        # and subtracted, leaves the decode steps.
        one = timed(lambda: gen(1), a.reps + 1)
        full = timed(lambda: gen(a.gen + 1), a.reps)
    print(json.dumps({"peer": "transformers " + transformers.__version__, "torch": torch.__version__,
                      "preset": a.preset, "dtype": "float16",
                      "prompt_tokens": a.prompt, "prompt_tokens_per_s": a.prompt / prefill,
                      "gen_tokens": a.gen, "gen_tokens_per_s": a.gen / (full - one)}))


if __name__ == "__main__":
    main()
