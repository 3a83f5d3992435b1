"""Producing a model directory: from a Qwen3-TTS checkpoint, a hub download, or random weights at real dimensions.

convert (checkpoint -> model dir), checkpoint (reading HF files), build (graphs + tables + chorus.json written),
compress (int8/int4 weights), presets + codec_random + tokenizer (random-weight models), builtin + hub (what
--model names resolve to). Depends on graphs and modeldir; serving imports only builtin.resolve_model.
"""
