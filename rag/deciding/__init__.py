"""Deciding: candidates into a verdict, and the words that explain it.

In: a `SearchResult` and a threshold with its rule. Out: `Gated` (`gate`): each candidate's verdict, the
kept passages as numbered citations (`citations`), or the test a refusal failed; `explain` words every
verdict and refusal in one place. `calibration` chooses the folder's thresholds from questions it should
refuse; `judge` is the cross-encoder that reads a question and a passage together; `sweep`, `diagnosis` and
`needles` measure the decision on question sets.

Does not write an answer: that is answering.
"""
