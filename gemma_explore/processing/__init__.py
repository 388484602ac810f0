"""Processing: the real processor's run, the audio features, the expanded prompt's layout and Gemma 3n's transcription prompt."""
