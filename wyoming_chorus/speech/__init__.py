"""The one API between the protocol and the engine: `api` (Request in, Handle out: no OpenVINO, the server imports
it), `speech` (the service itself), `sharing` (identical requests share one generation). Speaking a text sentence by
sentence, for the Wyoming server and the studio alike, needs no engine: `speech_engine` (what they need of the
service), `sentences` (a text cut into sentences), `utterances` (a streamed text cut for speaking while it is
written), `sentence_audio` (the sentences' audio in order, the next one generating ahead)."""
