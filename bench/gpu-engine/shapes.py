"""Model shapes served by the GPU engine, and the Hugging Face config.json for each.

Pure Python (no torch, no transformers) so that `--print-config` and the local tests work anywhere.
The weights are random; only the shape matters: it fixes the compute and the memory traffic of a
forward pass, the same idea as vLLM's `--load-format dummy`.
"""

import json

# Token ids of tiktoken's cl100k_base that the server uses. The model's vocabulary (128256) is larger
# than the tokenizer's (100277), so every prompt id is a valid model id; generated ids at or above the
# tokenizer's range are mapped back for display only (see tokenizer.py).
EOS_TOKEN_ID = 100257  # <|endoftext|>

SHAPES = {
    # Llama-3.1-8B: hidden 4096, 32 layers, 32 heads, 8 KV heads, FFN 14336, vocab 128256.
    "8b": {
        "name": "random-llama-3.1-8b-shape",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
    },
    # Llama-3.2-1B: hidden 2048, 16 layers, 32 heads, 8 KV heads, FFN 8192, vocab 128256, tied embeddings.
    "1b": {
        "name": "random-llama-3.2-1b-shape",
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 8192,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": True,
    },
}

DTYPE = "bfloat16"
DTYPE_BYTES = 2


def head_dim(shape):
    return shape["hidden_size"] // shape["num_attention_heads"]


def parameter_count(shape):
    """Number of parameters of a Llama decoder with this shape (embeddings and LM head included)."""
    h = shape["hidden_size"]
    kv = shape["num_key_value_heads"] * head_dim(shape)
    ffn = shape["intermediate_size"]
    vocab = shape["vocab_size"]
    per_layer = (
        h * h  # q_proj
        + 2 * h * kv  # k_proj, v_proj
        + h * h  # o_proj
        + 3 * h * ffn  # gate, up, down
        + 2 * h  # two RMSNorm weights
    )
    total = vocab * h + shape["num_hidden_layers"] * per_layer + h  # embeddings, layers, final norm
    if not shape["tie_word_embeddings"]:
        total += vocab * h  # lm_head
    return total


def kv_bytes_per_token(shape):
    """Bytes of K and V cache one token takes across all layers, in bf16."""
    return 2 * shape["num_hidden_layers"] * shape["num_key_value_heads"] * head_dim(shape) * DTYPE_BYTES


def llama_config_kwargs(shape):
    """Keyword arguments for transformers.LlamaConfig (also the body of config.json)."""
    return {
        "hidden_size": shape["hidden_size"],
        "num_hidden_layers": shape["num_hidden_layers"],
        "num_attention_heads": shape["num_attention_heads"],
        "num_key_value_heads": shape["num_key_value_heads"],
        "head_dim": head_dim(shape),
        "intermediate_size": shape["intermediate_size"],
        "vocab_size": shape["vocab_size"],
        "max_position_embeddings": shape["max_position_embeddings"],
        "tie_word_embeddings": shape["tie_word_embeddings"],
        "hidden_act": "silu",
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "attention_bias": False,
        "mlp_bias": False,
        "bos_token_id": None,
        "eos_token_id": EOS_TOKEN_ID,
        "pad_token_id": EOS_TOKEN_ID,
    }


def hf_config(shape_key):
    """A Hugging Face style config.json dict for the shape (what vLLM's --model directory would hold)."""
    shape = SHAPES[shape_key]
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "torch_dtype": DTYPE,
    }
    cfg.update(llama_config_kwargs(shape))
    # Not part of a Hugging Face config; marks the weights as random for whoever reads the file.
    cfg["_headroom"] = {
        "weights": "random",
        "shape": shape_key,
        "served_model_name": shape["name"],
        "parameters": parameter_count(shape),
        "tokenizer": "tiktoken cl100k_base",
    }
    return cfg


def write_hf_config(shape_key, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(hf_config(shape_key), f, indent=2, sort_keys=True)
        f.write("\n")
