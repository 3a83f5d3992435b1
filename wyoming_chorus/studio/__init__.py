"""The voice studio: a web page, served on a listener of its own (studio.address, studio.port), where a household
lists its voices, hears them, clones one from a clip (Base models) or designs one from a description (VoiceDesign
models), deletes the ones it made and picks the default, without editing YAML.

- server.py: the page and its API (on metrics_http's HttpServer), checks of what the page sends.
- voice_file.py: the studio's own voices file, which the engine re-reads (frontend/voices.py adds its voices).
- clips.py: an uploaded clip decoded, checked against the model's limits and stored as a 24 kHz WAV.
- preview.py: a voice reading a fixed sentence, made by the engine on the serving loop as a Wyoming reply is.
- static/: the page itself (plain HTML, CSS and JavaScript; nothing loaded from elsewhere).
"""
