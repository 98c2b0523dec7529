"""Searching: a question against a snapshot into ranked candidates.

In: a question (and the question before it, for a follow-up) and a `Snapshot`. Out: a `SearchResult`:
candidates in fused order with each side's rank and score, the cosine distance, and what the support test
reads of each passage (`evidence`: the question's own words, names and codes, weighed per passage).

`search` runs both sides and the fusion (`fusion`), `followup` joins a follow-up to its subject, `terms`
finds the question's words of each kind. Never says no: only the deciding stage can.
"""
