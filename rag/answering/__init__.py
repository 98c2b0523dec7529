"""Answering: a verdict into the answer's text, each claim citing [n].

In: `Gated` (the kept passages as numbered citations). Out: `Answer`: an extractive answer by default
(`answer`), or one written by a local model server the person runs (`prompt` builds the delimited prompt,
`llm` talks to the server), with the citations checked. A refusal calls no generator.
"""
