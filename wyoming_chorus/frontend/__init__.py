"""Text to request: clean, detect the language, normalise, pick the voice, build the prompt, make a Sequence.

requests (the one entry: `RequestBuilder`), clean_text, language, normalize, voices (the catalogue from config),
prompt (the talker's input rows), clone + mel (a cloned voice's speaker embedding and clip codes).
Depends on modeldir and on engine.sequence (the request type it produces), never on the serving loop.
"""
