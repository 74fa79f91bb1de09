"""sieve as an SGLang grammar backend (`--grammar-backend sieve`).

`pip install ./ffi-c/python` registers the entry point `sieve = sieve.sglang:register` in
the group `sglang.srt.plugins`; SGLang's `load_plugins()` runs it in every process before
the server arguments are parsed, and it adds `sieve` to `--grammar-backend`'s choices and
to SGLang's backend registry (`register_grammar_backend`). Set `SGLANG_PLUGINS` to a list
without `sieve` to keep it out.

With SGLang installed, `SieveGrammarBackend` and `SieveGrammarObject` subclass SGLang's own
`BaseGrammarBackend` and `BaseGrammarObject` (`sglang/srt/constrained/base_grammar_backend.py`);
without it they are plain classes with the same methods (for engines of your own).

| SGLang                                              | sieve                                    |
|-----------------------------------------------------|------------------------------------------|
| `dispatch_json` (`"$$ANY$$"`: any object), `dispatch_regex`, `dispatch_ebnf` (GBNF or Lark), `dispatch_structural_tag` | `Grammar.json_schema`, `Grammar.regex`, `Grammar.gbnf` / `Grammar.lark`, `Grammar.structural_tag` |
| a grammar that fails to compile                     | SGLang's `InvalidGrammarObject(message)`: that request is aborted with the message, the next one is served |
| `accept_token`, `rollback(k)`, `is_terminated()`    | `Matcher.consume_token` (raises on a rejected token), `rollback`, `is_stopped` |
| `fill_vocab_mask(mask, idx)`, `fill_vocab_mask_batched(entries, mask)` | `Matcher.fill_next_token_bitmask`, `sieve.fill_next_token_bitmask_batch` (one call, thread pool, GIL released) |
| `allocate_vocab_mask`, `reset_vocab_mask`, `move_vocab_mask`, `apply_vocab_mask` | int32 `(batch, words)` CPU tensor, `fill_(-1)`, `.to(device)`, `sieve.torch.apply_token_bitmask_inplace` |
| `copy()`                                            | a new matcher on the same compiled grammar |
| `try_jump_forward`                                  | `Matcher.compute_ff_tokens` (None when nothing is forced) |
| reasoning (`--reasoning-parser`)                    | a `sieve.Gate` on the think-end token: every token is free until it, then the grammar; a request's `thinking_budget` becomes the gate's reasoning budget |
| strict thinking (`--enable-strict-thinking`)        | the parser's `think_excluded_tokens` are masked while reasoning, `SGLANG_MAX_THINK_TOKENS` is the default budget; requests without a grammar get a filter-only object (`init_strict_reasoning_grammar`) |

A registered backend bypasses SGLang's `ReasonerGrammarBackend`, so reasoning is handled
here: the backend asks SGLang's `ReasoningParser` for the parser's think-end text and needs
it to be one token of the tokenizer (true of Qwen 3, DeepSeek-R1, Kimi, GLM). A request's thinking
budget is enforced whether or not strict thinking is on (SGLang's own wrapper enforces it
only with strict thinking). Not done: jump-forward retokenization (`jump_forward_str_state`
returns no text, as SGLang's LLGuidance backend), SGLang's answer frames
(`compile_framed_grammar`) and reasoning that the grammar itself describes
(`reasoning_in_grammar`).
"""

import logging

from .tokenizers import from_any
from ._sieve import (
    fill_next_token_bitmask_draft_tree,
    Gate,
    Grammar,
    GrammarError,
    JsonOptions,
    Matcher,
    Tokenizer,
    fill_next_token_bitmask_batch,
)

try:  # SGLang's own base classes when it is installed.
    from sglang.srt.constrained.base_grammar_backend import (
        BaseGrammarBackend as _BackendBase,
        BaseGrammarObject as _ObjectBase,
        InvalidGrammarObject as _Invalid,
    )

    HAVE_SGLANG = True
except Exception:  # noqa: BLE001 -- not installed, or an import that needs a GPU
    HAVE_SGLANG = False

    class _ObjectBase:
        def __init__(self):
            self.finished = False
            self.grammar_stats = None
            self.current_token = None

    class _BackendBase:
        def __init__(self):
            self.cache = {}

    class _Invalid(_ObjectBase):
        def __init__(self, error_message="Unknown grammar error"):
            super().__init__()
            self.error_message = error_message


__all__ = ["HAVE_SGLANG", "SieveGrammarBackend", "SieveGrammarObject", "register"]

logger = logging.getLogger(__name__)

_BUDGET = "|sieve_think_budget="


class SieveGrammarObject(_ObjectBase):
    """One request's grammar state: SGLang's `BaseGrammarObject` over a `sieve.Matcher`."""

    def __init__(self, grammar: Grammar, gate: Gate = None, matcher: Matcher = None,
                 excluded=()):
        super().__init__()
        self.grammar = grammar
        self.gate = gate
        self.excluded = tuple(excluded)  # strict thinking: never allowed while reasoning
        self.eos = frozenset()  # the tokenizer's EOS ids (set by the backend)
        self.matcher = matcher if matcher is not None else Matcher(grammar)

    def _thinking(self) -> bool:
        return bool(self.excluded) and self.matcher.gate_phase() == "reasoning"

    def _exclude(self, vocab_mask, idx: int) -> None:
        """Strict thinking: clears the excluded tokens from row `idx` while reasoning."""
        if self._thinking():
            import numpy as np

            row = vocab_mask[idx]
            words = (row.numpy() if hasattr(row, "numpy") else row).view(np.uint32)
            for t in self.excluded:
                words[t // 32] &= ~np.uint32(1 << (t % 32))

    def maybe_init_reasoning(self, reasoning: bool) -> None:
        """Called by SGLang before decoding: a request that reasons first gets a matcher
        behind the backend's reasoning gate (the grammar starts after the think-end token)."""
        if reasoning and self.gate is not None:
            self.matcher = Matcher(self.grammar, gate=self.gate)
        else:
            self.matcher = Matcher(self.grammar)

    def accept_token(self, token: int) -> None:
        self.current_token = token
        if self._thinking() and token in self.excluded:
            raise ValueError(f"token {token} is excluded while reasoning (strict thinking)")
        if not self.matcher.consume_token(token):
            raise ValueError(f"token {token} rejected: {self.matcher.get_error()}")

    def rollback(self, k: int) -> None:
        self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        return self.matcher.is_stopped()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device):
        import torch

        return torch.full((batch_size, (vocab_size + 31) // 32), -1, dtype=torch.int32)

    def fill_vocab_mask(self, vocab_mask, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(vocab_mask, idx)
        self._exclude(vocab_mask, idx)

    @staticmethod
    def fill_vocab_mask_batched(entries, vocab_mask) -> None:
        """Every listed row in one call on sieve's thread pool (GIL released); rows not
        listed are left as they are. Other objects (another backend's, the filter-only
        strict-thinking ones) fill their rows one by one, through their own method."""
        mine = [e for e in entries if type(e.grammar) is SieveGrammarObject]
        if mine:
            fill_next_token_bitmask_batch([e.grammar.matcher for e in mine], vocab_mask,
                                          [e.row for e in mine])
            for e in mine:
                e.grammar._exclude(vocab_mask, e.row)
        for e in entries:
            if type(e.grammar) is not SieveGrammarObject:
                e.grammar.fill_vocab_mask(vocab_mask, e.row)

    @staticmethod
    def reset_vocab_mask(vocab_mask) -> None:
        vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask, device):
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits, vocab_mask) -> None:
        from .torch import apply_token_bitmask_inplace

        apply_token_bitmask_inplace(logits, vocab_mask)

    def copy(self) -> "SieveGrammarObject":
        c = SieveGrammarObject(self.grammar, self.gate, excluded=self.excluded)
        c.eos = self.eos
        return c

    def try_jump_forward(self, tokenizer):
        """`(forced token ids, forced text)` when the grammar forces a continuation, else
        None."""
        ff = self.matcher.compute_ff_tokens()
        if not ff:
            return None
        return ff, self.matcher.compute_ff_bytes().decode("utf-8", "replace")

    def jump_forward_str_state(self, helper):
        return "", -1

    def jump_and_retokenize(self, old_output_ids, new_output_ids, next_state) -> None:
        """Re-synchronizes after SGLang retokenized the output: roll back the tokens that
        changed and consume the new ones."""
        k = 0
        while k < min(len(old_output_ids), len(new_output_ids)) and \
                old_output_ids[k] == new_output_ids[k]:
            k += 1
        self.matcher.rollback(len(old_output_ids) - k)
        self.matcher.consume_tokens(list(new_output_ids[k:]))


class SieveGrammarBackend(_BackendBase):
    """SGLang's `BaseGrammarBackend` for sieve. `tokenizer`: a `sieve.Tokenizer` or the
    Hugging Face tokenizer SGLang passes; `vocab_size`: the logits width.

    `think_end`: token ids or special-token names ending a reasoning block (None: requests
    that reason are not supported: the grammar applies from the first token).
    `compile_cache_bytes` (default 512 MiB): turns on the tokenizer's compile cache if it is
    off (0 leaves it as it is); a request sent again compiles in microseconds."""

    def __init__(self, tokenizer, vocab_size: int = None, *, json_options: JsonOptions = None,
                 think_end=None, strict_thinking: bool = False, think_excluded=(),
                 max_think_tokens: int = None, compile_cache_bytes: int = 512 << 20):
        super().__init__()
        if strict_thinking and think_end is None:
            raise ValueError("strict thinking needs think_end (a reasoning parser)")
        self._enable_strict_thinking = strict_thinking
        self.think_excluded = tuple(think_excluded) if strict_thinking else ()
        self.max_think_tokens = max_think_tokens if strict_thinking else None
        if not isinstance(tokenizer, Tokenizer):
            tokenizer = from_any(tokenizer, n_vocab=vocab_size)
        if compile_cache_bytes and tokenizer.compile_cache_stats()["max_bytes"] == 0:
            tokenizer.set_compile_cache(compile_cache_bytes)
        self.tokenizer = tokenizer
        self.json_options = json_options
        self.think_end = None if think_end is None else list(think_end)
        self._gates = {}
        self.last_error = None

    def _gate(self, budget):
        if budget is None:
            budget = self.max_think_tokens
        if self.think_end is None:
            return None
        if budget not in self._gates:
            self._gates[budget] = Gate(self.tokenizer, reasoning_end=self.think_end,
                                       reasoning_budget=budget)
        return self._gates[budget]

    def get_request_grammar_key(self, key, *, input_ids, thinking_budget):
        """A request's thinking budget is part of its grammar (a gate per budget)."""
        if thinking_budget is None or self.think_end is None:
            return key
        return (f"{key[0]}{_BUDGET}{int(thinking_budget)}", key[1])

    def _init_value_dispatch(self, key, require_reasoning):
        key_type, key_string = key
        budget = None
        if _BUDGET in key_type:
            key_type, b = key_type.split(_BUDGET, 1)
            budget = int(b) if int(b) >= 0 else None  # SGLang: a negative budget is none
        if key_type == "json":
            obj = self.dispatch_json(key_string)
        elif key_type == "regex":
            obj = self.dispatch_regex(key_string)
        elif key_type in ("ebnf", "full_assistant_ebnf"):
            obj = self.dispatch_ebnf(key_string)
        elif key_type == "structural_tag":
            obj = self.dispatch_structural_tag(key_string)
        else:
            obj = _Invalid(f"sieve: unsupported grammar type {key_type!r}")
        if isinstance(obj, SieveGrammarObject):
            # A full-assistant EBNF describes the reasoning too: no gate in front of it.
            full = key_type == "full_assistant_ebnf"
            obj.gate = None if full else self._gate(budget)
            obj.excluded = () if full else self.think_excluded
            obj.maybe_init_reasoning(require_reasoning)
        return obj

    def init_strict_reasoning_grammar(self, reasoning: bool):
        """Strict thinking for a request without a grammar: the reasoning is filtered (the
        excluded tokens, the budget); the answer after it is free."""
        if not self._enable_strict_thinking:
            return None
        if getattr(self, "_free", None) is None:
            self._free = Grammar.regex(self.tokenizer, "(?s:.)*")
        obj = _StrictThinking(self._free, self._gate(None), self.think_excluded)
        obj.maybe_init_reasoning(reasoning)
        return obj

    def _make(self, build):
        try:
            obj = SieveGrammarObject(build())
            obj.eos = frozenset(self.tokenizer.eos_token_ids)
            return obj
        except (GrammarError, ValueError) as e:
            self.last_error = e
            logger.error("sieve: grammar failed to compile: %s", e)
            return _Invalid(str(e))

    def dispatch_json(self, key_string: str):
        schema = '{"type": "object"}' if key_string == "$$ANY$$" else key_string
        return self._make(lambda: Grammar.json_schema(self.tokenizer, schema,
                                                      options=self.json_options))

    def dispatch_regex(self, key_string: str):
        return self._make(lambda: Grammar.regex(self.tokenizer, key_string))

    def dispatch_ebnf(self, key_string: str):
        syntax = "gbnf" if "::=" in key_string else "lark"
        return self._make(lambda: Grammar(self.tokenizer, syntax, key_string,
                                          json_options=self.json_options))

    def dispatch_structural_tag(self, key_string: str):
        return self._make(lambda: Grammar.structural_tag(self.tokenizer, key_string,
                                                         json_options=self.json_options))


class _StrictThinking(SieveGrammarObject):
    """A request without a grammar under strict thinking: the gate filters the reasoning;
    once it has ended (or without reasoning) every row is left unconstrained and the tokens
    are only counted, for rollback."""

    def __init__(self, grammar, gate, excluded):
        super().__init__(grammar, gate, excluded=excluded)
        self.free = 0  # tokens accepted after the reasoning
        self.reasoning = True

    def maybe_init_reasoning(self, reasoning: bool) -> None:
        super().maybe_init_reasoning(reasoning)
        self.free, self.reasoning = 0, reasoning

    def _answering(self) -> bool:
        return not self.reasoning or self.matcher.gate_phase() != "reasoning"

    def accept_token(self, token: int) -> None:
        if self._answering():
            self.current_token = token
            self.free += 1
            return
        super().accept_token(token)

    def rollback(self, k: int) -> None:
        back = min(k, self.free)
        self.free -= back
        if k - back:
            self.matcher.rollback(k - back)

    def is_terminated(self) -> bool:
        return (not self._answering()) and self.matcher.is_stopped()

    def fill_vocab_mask(self, vocab_mask, idx: int) -> None:
        if self._answering():
            row = vocab_mask[idx]
            if hasattr(row, "fill_"):
                row.fill_(-1)
            else:
                row[...] = -1
            return
        super().fill_vocab_mask(vocab_mask, idx)

    def copy(self):
        return _StrictThinking(self.grammar, self.gate, self.excluded)


def _think_end_ids(tokenizer, parser_name):
    """The think-end token of SGLang's reasoning parser `parser_name`, as one token id."""
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    detector = ReasoningParser(model_type=parser_name, stream_reasoning=False,
                               tokenizer=tokenizer).detector
    ids = list(detector.get_think_end_token_ids(tokenizer))
    if len(ids) != 1:
        raise ValueError(
            f"sieve: the reasoning parser {parser_name!r} ends reasoning with "
            f"{detector.think_end_token!r}, {len(ids)} tokens; sieve's reasoning gate needs "
            "one token")
    return ids


def _think_excluded_ids(tokenizer, parser_name):
    """The tokens SGLang's reasoning parser forbids inside the reasoning (strict thinking)."""
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    detector = ReasoningParser(model_type=parser_name, stream_reasoning=False,
                               tokenizer=tokenizer).detector
    ids = []
    for text in detector.think_excluded_tokens or ():
        new = tokenizer.encode(text, add_special_tokens=False)
        if not new:
            raise ValueError(f"sieve: think-excluded token {text!r} does not encode")
        ids += new
    return ids


def _init_backend(server_args, tokenizer, vocab_size, eos_token_ids=None):
    """SGLang's `init_func(server_args, tokenizer, vocab_size, eos_token_ids)`."""
    from sglang.srt.runtime_context import get_serving

    serving = get_serving()
    strict = bool(getattr(serving, "enable_strict_thinking", False))
    parser = getattr(serving, "reasoning_parser", None)
    if strict and not parser:
        raise ValueError("--enable-strict-thinking needs --reasoning-parser")
    think_end = _think_end_ids(tokenizer, parser) if parser else None
    excluded, budget = (), None
    if strict:
        excluded = _think_excluded_ids(tokenizer, parser)
        from sglang.srt.environ import envs

        limit = envs.SGLANG_MAX_THINK_TOKENS.get()
        budget = limit if limit is not None and limit >= 0 else None
    return SieveGrammarBackend(tokenizer, vocab_size, think_end=think_end,
                               strict_thinking=strict, think_excluded=excluded,
                               max_think_tokens=budget)


def _tree_parents(next_token, next_sibling):
    """Parent indices from SGLang's first-child / next-sibling lists (node 0: the root);
    None where a node is unreachable or comes before its parent (then SGLang's own DFS)."""
    n = len(next_token)
    parents, stack = [None] * n, [0]
    parents[0] = -1
    while stack:
        u = stack.pop()
        c = next_token[u]
        while c != -1:
            if not 0 < c < n or parents[c] is not None or c < u:
                return None
            parents[c] = u
            stack.append(c)
            c = next_sibling[c]
    return None if any(p is None for p in parents) else parents


def _traverse_tree_around(original, retrieve_next_token, retrieve_next_sibling, draft_tokens,
                          grammar, allocate_token_bitmask, vocab_size=None):
    """An AROUND hook on SGLang's `spec_utils.traverse_tree` (the EAGLE draft-tree DFS in
    Python, one `accept_token`/`fill_vocab_mask`/`rollback` per node): for a sieve grammar
    the whole tree is one native call (`fill_next_token_bitmask_draft_tree`), shared
    prefixes walked once, GIL released. Rows SGLang's DFS would not fill (refused nodes,
    their subtrees, nodes after EOS) keep what they held, as there. Anything else (another
    backend's grammar, strict-thinking filters, a tree out of the usual shape) goes to
    SGLang's own function."""
    g = grammar
    if type(g) is not SieveGrammarObject or g.excluded or g.is_terminated():
        return original(retrieve_next_token, retrieve_next_sibling, draft_tokens, g,
                        allocate_token_bitmask, vocab_size=vocab_size)
    tokens = [int(t) for t in draft_tokens.tolist()]
    parents = _tree_parents([int(x) for x in retrieve_next_token.tolist()],
                            [int(x) for x in retrieve_next_sibling.tolist()])
    limit = g.grammar.vocab_size
    if parents is None or any(t >= limit for t in tokens[1:]):
        return original(retrieve_next_token, retrieve_next_sibling, draft_tokens, g,
                        allocate_token_bitmask, vocab_size=vocab_size)
    import numpy as np

    rows = allocate_token_bitmask.numpy() if hasattr(allocate_token_bitmask, "numpy") \
        else allocate_token_bitmask
    before = rows.copy()
    fill_next_token_bitmask_draft_tree(
        [g.matcher], [tokens[1:]], [[p - 1 if p > 0 else -1 for p in parents[1:]]],
        allocate_token_bitmask)
    # Which rows SGLang's DFS fills: a node is accepted if its parent's row was filled and
    # allows its token; its row is filled unless that token ended the output (EOS).
    eos = g.eos
    filled = [True] + [False] * (len(tokens) - 1)
    words = rows.view(np.uint32)
    for i in range(1, len(tokens)):  # parents come first (checked above)
        p, t = parents[i], tokens[i]
        ok = filled[p] and bool((words[p, t // 32] >> (t % 32)) & 1)
        filled[i] = ok and t not in eos
    for i, f in enumerate(filled):
        if not f:
            rows[i] = before[i]
    _traverse_tree_around.native_calls += 1


_traverse_tree_around.native_calls = 0


def register() -> None:
    """The `sglang.srt.plugins` entry point: `--grammar-backend sieve` becomes a choice and
    selects `SieveGrammarBackend` through SGLang's registry. Safe to run more than once."""
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES, add_grammar_backend_choices
    from sglang.srt.constrained.base_grammar_backend import register_grammar_backend

    if "sieve" not in GRAMMAR_BACKEND_CHOICES:
        add_grammar_backend_choices(["sieve"])
    register_grammar_backend("sieve", _init_backend)
    try:  # EAGLE draft trees in one native call (see `_traverse_tree_around`)
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType

        HookRegistry.register("sglang.srt.speculative.spec_utils.traverse_tree",
                              _traverse_tree_around, HookType.AROUND)
    except ImportError:  # an SGLang without hooks keeps its own DFS
        pass
