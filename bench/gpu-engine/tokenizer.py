"""Text <-> token ids for the GPU engine: tiktoken's cl100k_base, or o200k_base when only that one is cached.

The weights are random, so no tokenizer "matches" the model; a tiktoken encoding is used because it is real (a load
generator that sizes prompts with /tokenize gets true counts for it). The box has no network, so the encoding must
be in TIKTOKEN_CACHE_DIR (/opt/tiktoken_cache); on the H200 box only o200k_base is there (checked 2026-11-30).
Prompt ids at or above the model's vocabulary (128256; o200k_base has 200019 ids) are folded (id % 128256) by the
engine before they reach the model: the count, and so the compute, is unchanged.
Generated ids are arbitrary model ids; each is shown as the text of that id in the encoding (id % the number of
ordinary tokens when it is not one), so every generated token yields non-empty text: one token, one streamed chunk.
The model's EOS is id 100257 (shapes.EOS_TOKEN_ID, cl100k_base's <|endoftext|>) whatever the encoding.
"""

import os

from shapes import EOS_TOKEN_ID

# The box has no network: the first encoding found in TIKTOKEN_CACHE_DIR (/opt/tiktoken_cache) is used.
ENCODINGS = ("cl100k_base", "o200k_base")


class TiktokenTokenizer:
    eos_token_id = EOS_TOKEN_ID

    def __init__(self):
        if "TIKTOKEN_CACHE_DIR" not in os.environ and os.path.isdir("/opt/tiktoken_cache"):
            os.environ["TIKTOKEN_CACHE_DIR"] = "/opt/tiktoken_cache"
        import tiktoken

        self._enc = None
        last = None
        for name in ENCODINGS:
            try:
                self._enc = tiktoken.get_encoding(name)
                break
            except Exception as e:  # noqa: BLE001 -- not cached and no network: try the next one
                last = e
        if self._enc is None:
            raise RuntimeError(f"no tiktoken encoding of {ENCODINGS} is cached (TIKTOKEN_CACHE_DIR="
                               f"{os.environ.get('TIKTOKEN_CACHE_DIR')}): {last!r}")
        self.name = "tiktoken/" + self._enc.name
        self.vocab_size = self._enc.n_vocab
        self._mergeable = len(self._enc._mergeable_ranks)  # ordinary tokens are ids 0..n-1 (100256 for cl100k)
        self._special = {i: s for s, i in self._enc._special_tokens.items()}  # e.g. 100257: <|endoftext|>
        self._text_cache = {}

    def encode(self, text):
        # Special-token text in a prompt is encoded as ordinary text, never as a control token.
        return self._enc.encode(text, disallowed_special=())

    def encode_chat(self, messages):
        """ChatML, ending with the assistant header; <|im_start|>/<|im_end|> are single special tokens where the
        encoding has them (cl100k_base), else encoded as text (o200k_base)."""
        specials = self._enc._special_tokens
        start = [specials["<|im_start|>"]] if "<|im_start|>" in specials else self.encode("<|im_start|>")
        end = [specials["<|im_end|>"]] if "<|im_end|>" in specials else self.encode("<|im_end|>")
        ids = []
        for m in messages:
            ids.extend(start)
            ids.extend(self.encode(f"{m['role']}\n{m['content']}"))
            ids.extend(end)
            ids.extend(self.encode("\n"))
        ids.extend(start)
        ids.extend(self.encode("assistant\n"))
        return ids

    def token_text(self, token_id):
        text = self._text_cache.get(token_id)
        if text is None:
            if token_id in self._special:
                text = self._special[token_id]  # literal text, e.g. "<|endoftext|>"
            else:
                raw = self._enc.decode_single_token_bytes(token_id % self._mergeable)
                text = raw.decode("utf-8", errors="replace")
            self._text_cache[token_id] = text
        return text
