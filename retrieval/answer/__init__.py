"""Ranked chunks -> an answer: extractive (candidates, scores, what is said and cited) or
written by an LLM and checked against its sources.

`retriever` (the search, then the answer's options from what it found, then the answer),
`candidates` (sentences and table value cells of the hits, and the chunks around them),
`scores` (by terms, then by a learned model), `citing` (each chosen candidate boxed to its lines),
`said` (what the answer says for it), `extractive` (the stages in order); `options` holds what a
caller sets. `generate` and `llm` write an answer with an LLM, `support` checks it; the sentence
cache and its filler keep the vectors the answers embed.

Its public names are in `__init__.pyi`; each is imported from its module when first used."""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
