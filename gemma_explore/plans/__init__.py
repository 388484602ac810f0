"""Plans: how many tokens an image, clip or video becomes, and why. Pure arithmetic: no torch, no transformers."""
