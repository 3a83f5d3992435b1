"""The Wyoming side: sockets, events, replies. Top layer: it talks to the engine only through `SpeechEngine`.

connections (the listener, connection limits, shutdown, hang-up), handler (one connection: its events read and
dispatched), speaker (a connection's replies spoken in order), reply (a reply's text, one-shot or streamed), sentences
(a streamed reply cut at sentence ends and pauses), utterances (a streamed reply fed to its request while it is
written), stream_deadline (how long a stream may wait for its text), playback (a reply's sentences in order, the next
one made ahead), audio_out (a reply's audio events), info (Describe), event_reader and event_writer (bounded reads,
writes bounded in time), event_data (what a synthesize event must hold), listeners (the TCP / Unix sockets, bound
before the model loads), discovery (zeroconf), reply_log (one line a reply).

The protocol as this server speaks it: one handler per connection, every connection served at once through the
shared engine.

Replies (what the client receives):
- synthesize:      audio-start, audio-chunk..., audio-stop
- synthesize-start, synthesize-chunk..., synthesize-stop:
                   audio-start, audio-chunk..., audio-stop, synthesize-stopped
  Each sentence is synthesised as soon as it is complete (the next one generating while one is sent), and their
  audio, in order, shares one audio-start..audio-stop (Home Assistant takes the format from the first audio-start only).
  A synthesize event inside a stream is Home Assistant's copy for servers without streaming: ignored.
- A reply that fails (unknown voice, empty or too long text, busy server, malformed event) gets an `error` event as
  soon as the failure is known (a sentence already being spoken is finished first), then still ends as above:
  audio-start (if not sent yet), audio-stop and, for a stream, synthesize-stopped once the client sends
  synthesize-stop (or the stream times out, below). Home Assistant ignores `error` events and has no read timeout,
  so a reply that did not end would hang it. A stream that carries no text at all is not an error: its audio is
  empty.
- An event out of order gets an `error` event: synthesize-chunk outside a stream, a second synthesize-start
  (ignored; the open stream goes on), synthesize-stop outside a stream (followed by synthesize-stopped, which the
  client waits for). Unknown event types are ignored.
- Anything else that goes wrong while speaking closes the connection, which ends the client's wait too.

Limits (config.yaml's `server` section), so that no client can tie up the server:
- An event that cannot be read (event_reader: a header of the wrong shape, sizes that are not small
  non-negative integers, more than server.max_event_bytes, invalid JSON) gets an `error` and the connection is
  closed: where the next event would start is unknown. So does an event not complete within server.event_timeout
  of its first byte, and a client that keeps sending requests after server.max_queued_replies of them were refused.
- server.max_connections, and server.max_connections_per_peer from one IP address (every local socket is one peer):
  a connection beyond them closes the longest-idle connection (of that peer; in all, of the peer holding the most)
  to make room, as load balancers do; when every such connection is busy it gets an `error` and is closed at once.
- server.stream_pause_timeout (between a stream's chunks) and server.stream_max_seconds (from its start to its
  stop): a stream past either gets an `error` ("stream-timeout") and its end (audio-stop, synthesize-stopped)
  without its synthesize-stop; its later chunks are refused like chunks outside a stream, its synthesize-stop is
  not answered (its synthesize-stopped has gone out), and the connection goes on (stream_deadline). A paused stream
  holds no batch place and no KV blocks while it waits (reply.RELEASE_AFTER), so these follow Home Assistant's own
  patience (its pipeline run's 300 s), not the engine's.
- server.idle_timeout: a connection silent for that long while none of its replies is being spoken is closed; an
  open stream is ended first, as a timed-out one is.
- server.max_queued_replies: a request beyond them is refused with an `error` and still ended in order.
- server.max_buffered_audio_seconds: a client that falls that far behind in reading its audio and does not catch
  up within as many seconds gets an `error` and is cut off; its reply is aborted (the engine never waits for it).
Whatever a client sends or however it leaves, the log gets at most a DEBUG line, never a traceback.
"""
