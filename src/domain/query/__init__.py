"""Memory and knowledge query (spec 5): tokenizer, scoring, ordering, request checks and cursors.

Pure code shared by the index projection (record terms) and the query route (request plan).
"""
