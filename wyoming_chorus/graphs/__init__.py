"""OpenVINO graph builders, from weights to ov.Model: written once, run by the native runner and the codec thread.

ops (small helpers), attention (RoPE, heads, repeat_kv: shared by every attention), transformer (the decoder-only
LM stack with PagedAttention or a plain cache), talker, code_predictor, text_embedding, codec_decoder (the vocoder),
codec_encoder and speaker_encoder (voice cloning). Imports nothing from the rest of the service.
"""
