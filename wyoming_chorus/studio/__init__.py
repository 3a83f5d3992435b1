"""The voice studio: a web page, served on a listener of its own (studio.address, studio.port), where a household
lists its voices, hears them, clones one from a clip (Base models) or designs one from a description (VoiceDesign
models), deletes the ones it made and picks the default, without editing YAML.

- server.py: the page and its API (on metrics_http's HttpServer); page.py the page as served, listing.py what the
  page is told of the voices, bodies.py what a change sends, read within bounds, guard.py who may ask.
- voice_file.py: the studio's own voices file, which the engine re-reads (frontend/voices.py adds its voices).
- clips.py: an uploaded clip decoded within a budget, checked against the model's limits, stored as a 24 kHz WAV.
- preview.py: a voice reading a fixed sentence, made by the engine on the serving loop as a Wyoming reply is.
- static/: the page itself (plain HTML, CSS and JavaScript; nothing loaded from elsewhere).
"""
