"""The Wyoming side: sockets, events, replies. Top layer: it talks to the engine only through `SpeechEngine`.

server (one connection: events in, audio out), sentences (a streamed reply cut at sentence ends and pauses),
playback (a reply's sentences in order, the next one made ahead), event_reader (bounded reads of events),
listeners (the TCP / Unix sockets, bound before the model loads), discovery (zeroconf), reply_log (one line a reply).
"""
