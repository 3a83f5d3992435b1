"""The tools' small library: the one Wyoming TTS client (`client`), the one way to start a server, in a child process
or on a thread of this one (`servers`), and the probes that watch it (`probes`). Entry points in tools/ stay thin and
never import each other; what two of them share lives here.

How it is found: every entry point is run as a file, `python tools/X.py`, and Python puts the script's own folder
first on sys.path, so `import chorus_tools` resolves with no path code in any script. The tests reach it through
pytest's `pythonpath = ["tools"]` (pyproject.toml). Modules here import the served package only inside
the functions that need it, so that `client`, `probes` and the subprocess launcher also work in an environment
without it (the Home Assistant check's venv).
"""
