"""Prints the --prompt-tokens value that makes the seed's script 02 send TARGET-token prompts.

Script 02 sizes prompts at 1.3 tokens per word. This measures the server's own tokenizer on script
02's word list (2,000 of its words, drawn with seed 0, through the server's /tokenize) and prints the
word-based value that comes to TARGET tokens, so that script 02 and headroom send the same load.

usage: script02_words.py BASE_URL TARGET KEY
  KEY is the field /tokenize takes the text in: content (llama-server), prompt (vLLM, bench/gpu-engine).
Run from the repository root (it imports bench/seed/02_serving_sweep.py).
"""
import json
import random
import sys
import urllib.request

sys.path.insert(0, "bench/seed")
words = __import__("02_serving_sweep").WORDS
base, target, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]
random.seed(0)
text = " ".join(random.choice(words) for _ in range(2000))
req = urllib.request.Request(base + "/tokenize", data=json.dumps({key: text}).encode(),
                             headers={"Content-Type": "application/json"})
count = len(json.load(urllib.request.urlopen(req))["tokens"])
print(round(target * 1.3 * 2000 / count))
