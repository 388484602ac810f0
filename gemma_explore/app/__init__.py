"""The Gradio demo's handlers, as plain functions that tests call without a server."""
