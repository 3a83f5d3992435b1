"""A model directory, read in one place: `ModelDir` (paths, the typed `Manifest` of chorus.json, embeddings).

Every runtime component takes a ModelDir; nothing else parses chorus.json. Depends on nothing but wyoming_chorus.errors.
"""
