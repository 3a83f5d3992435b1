"""tools/soak.py's parts: what a soak records of its requests and of the server (`records`) and the markdown
report it prints at the end (`report`)."""
