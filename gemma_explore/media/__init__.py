"""Media: the one way in for images, clips and videos, and what file headers say without decoding."""
