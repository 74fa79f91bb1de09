"""Structural tags for model families from an OpenAI-style tool list, and the gates their
reasoning needs.

    tag = sieve.presets.tool_calls("qwen3", tools, tool_choice="auto")
    grammar = sieve.Grammar.structural_tag(tok, tag)

Families: `qwen3`, `hermes`, `llama3`, `mistral`, `deepseek`, `harmony` (see
`core/docs/structural-presets.md` for their strings and sources). The strings follow
XGrammar's builtin structural tags where XGrammar has the family.
"""

import json

from ._sieve import Gate, preset_families, structural_tag_preset

__all__ = ["families", "tool_calls", "reasoning_gate", "REASONING_END"]

# The token that ends a reasoning block, by family (used by `reasoning_gate`).
REASONING_END = {
    "qwen3": "</think>",
    "hermes": "</think>",
    "deepseek": "</think>",
}


def families():
    """The family names `tool_calls` accepts."""
    return list(preset_families())


def tool_calls(family, tools, tool_choice=None, parallel_tool_calls=False, reasoning=False):
    """The structural tag (a dict) for `family` and `tools` (a list of
    `{"type": "function", "function": {"name", "parameters"}}`, or its JSON text).

    `tool_choice`: `"auto"` (default: free text and zero or more calls), `"required"`,
    `"none"` or a tool name. `reasoning`: the tag expects a reasoning block first. Raises
    `sieve.GrammarError` for an unknown family or a malformed list."""
    text = tools if isinstance(tools, str) else json.dumps(tools)
    return json.loads(structural_tag_preset(family, text, tool_choice, parallel_tool_calls,
                                            reasoning))


def reasoning_gate(tokenizer, family="qwen3", budget=None, end=None):
    """A `sieve.Gate` for `family`'s reasoning block: every token is allowed until the
    family's end token (`end` overrides it: token ids or special-token names), only that
    token once `budget` reasoning tokens are spent. Raises `KeyError` for a family without a
    known end token and no `end`."""
    end = end if end is not None else [REASONING_END[family]]
    if isinstance(end, (str, int)):
        end = [end]
    return Gate(tokenizer, reasoning_end=list(end), reasoning_budget=budget)
