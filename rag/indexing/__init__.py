"""Indexing: canonical text into passages, vectors and BM25 terms, stored and stamped.

In: a folder and the files a person drops. Out: a Chroma store on disk (passages with both texts, their
offsets and their vectors), the library of documents with their states and stamps, and the in-memory
`Snapshot` a search reads (BM25 index, vector graphs, passages).

`chunk` cuts at boundaries, `embed` and `multilingual` make vectors, `store` and `served` hold them,
`vectors` and `bm25` are the in-memory indexes, `snapshot` is what one search reads, `library` records each
document's state, `queue` orders the work, `uploads` takes a person's files, `indexer` runs it all.
"""
