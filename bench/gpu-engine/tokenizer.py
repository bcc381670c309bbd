"""Text <-> token ids for the GPU engine: tiktoken's cl100k_base.

The weights are random, so no tokenizer "matches" the model; cl100k_base is used because it is real
(a load generator that sizes prompts with /tokenize gets true counts for it) and every id it produces
(< 100277) is a valid id of the model's 128256-entry vocabulary. Generated ids are arbitrary model ids:
ids the tokenizer cannot decode (>= 100256 that are not special tokens, or >= 100277) are shown as the
text of id % 100256. Every generated token yields non-empty text, so one token is one streamed chunk.
"""

import os

from shapes import EOS_TOKEN_ID

IM_START = 100264  # <|im_start|>, cl100k_base's ChatML special tokens
IM_END = 100265  # <|im_end|>


class TiktokenTokenizer:
    name = "tiktoken/cl100k_base"
    eos_token_id = EOS_TOKEN_ID

    def __init__(self):
        if "TIKTOKEN_CACHE_DIR" not in os.environ and os.path.isdir("/opt/tiktoken_cache"):
            os.environ["TIKTOKEN_CACHE_DIR"] = "/opt/tiktoken_cache"
        import tiktoken

        self._enc = tiktoken.get_encoding("cl100k_base")
        self.vocab_size = self._enc.n_vocab
        self._mergeable = len(self._enc._mergeable_ranks)  # 100256 ordinary tokens: ids 0..100255
        self._special = {i: s for s, i in self._enc._special_tokens.items()}  # e.g. 100257: <|endoftext|>
        self._text_cache = {}

    def encode(self, text):
        # Special-token text in a prompt is encoded as ordinary text, never as a control token.
        return self._enc.encode(text, disallowed_special=())

    def encode_chat(self, messages):
        """ChatML with cl100k_base's own <|im_start|>/<|im_end|> tokens, ending with the assistant header."""
        ids = []
        for m in messages:
            ids.append(IM_START)
            ids.extend(self.encode(f"{m['role']}\n{m['content']}"))
            ids.append(IM_END)
            ids.extend(self.encode("\n"))
        ids.append(IM_START)
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
