"""tools/fuzz.py's parts: the cases (`cases`) and what the server must do with them (`checks`)."""
