"""The one API between the protocol and the engine: `api` (Request in, Handle out: no OpenVINO, the server imports
it), `speech` (the service itself), `sharing` (identical requests share one generation)."""
