"""``gemma-explore``: token plans, dataset bills, serving flags, the demo and transcription.

Built on typer. Every command prints its answer and exits 0, or prints one line
``gemma-explore: error: …`` saying what to fix and exits 2. Anything slower than a
second shows a progress bar on stderr (tqdm; hidden when stderr is not a terminal).

    gemma-explore plan photo.jpg talk.wav --family gemma4 --budget 280
    gemma-explore bill ./dataset --budget 70,280,1120 --recursive --out bill.csv --plot bill.png
    gemma-explore bill ./shards --budget 280,1120 --text --checkpoint tiny-gemma4 --runner ray
    gemma-explore serve-args google/gemma-4-E4B-it --budget 560
    gemma-explore demo --model tiny-gemma3n --port 7861
    gemma-explore transcribe clip.wav --language fr --translate-to en

Without installing the script: ``python -m gemma_explore.cli …``.

The commands live by group (``plans``, ``bill``, ``serving``, ``conformance``, ``speech``,
``workshop``; what they share in ``common``); this module is the app: each command's
name, its line in ``--help``'s list (``short_help``: one whole sentence, where click would
cut the docstring at about 45 characters with "..."), its example, in the order ``--help``
lists them, and ``main``.
"""

from __future__ import annotations

import typer

from gemma_explore.cli import bill, conformance, plans, serving, speech, workshop

__all__ = ["app", "main"]

app = typer.Typer(
    name="gemma-explore",
    help="See what Gemma 3n, Gemma 4 and Gemma 4 Unified make of images, clips and videos, "
    "from the shell.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # plain click output: an error is one "Error: …" line
    pretty_exceptions_enable=False,
)

app.command(
    short_help="Print how each file becomes tokens, step by step.",
    epilog="Example: gemma-explore plan photo.jpg talk.wav clip.mp4 --family gemma4 --budget 280",
)(plans.plan)
app.command(
    short_help="Total a dataset's tokens at each budget, from file headers.",
    epilog="Example: gemma-explore bill ./shards --budget 280,1120 --text --checkpoint "
    "tiny-gemma4 --runner ray --out bill.parquet",
)(bill.bill)
app.command(
    "serve-args",
    short_help="Print the `vllm serve` command for a checkpoint, and why.",
    epilog="Example: gemma-explore serve-args google/gemma-4-E4B-it --budget 560 --images 2",
)(serving.serve_args)
app.command(
    short_help="Say what a vLLM error means and which value to set.",
    epilog='Example: gemma-explore explain "max_num_batched_tokens (256) must be greater than '
    'or equal to max_num_seqs (1024)." --model google/gemma-4-E4B-it',
)(serving.explain)
app.command(
    short_help="Write the conformance set other runtimes test against.",
    epilog="Example: gemma-explore golden --out golden/ "
    "--vocabulary ~/.cache/gemma_explore/vocabulary",
)(conformance.golden)
app.command(
    "probe",
    short_help="Measure a running server's counts against the reference.",
    epilog="Example: gemma-explore probe http://127.0.0.1:8000/v1 --model google/gemma-4-E4B-it "
    "--budget 70,1120 --clips none",
)(conformance.probe_server)
app.command(
    "processor-cache",
    short_help="Size vLLM's processor cache: bytes per item, items per GiB.",
    epilog="Example: gemma-explore processor-cache google/gemma-4-E4B-it",
)(serving.processor_cache_command)
app.command(
    "admit",
    short_help="Say which requests vLLM accepts, refuses or changes.",
    epilog="Example: gemma-explore admit google/gemma-4-E4B-it requests.jsonl "
    '--max-model-len 8192   (a line: {"images": [[768, 1024]], "max_tokens": 256})',
)(serving.admit_command)
app.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
    short_help="Start the web demo on 127.0.0.1.",
    epilog="Example: gemma-explore demo --model tiny-gemma3n --port 7861",
)(workshop.demo)
app.command(
    short_help="Transcribe (or translate) a clip with Gemma 3n.",
    epilog="Example: gemma-explore transcribe clip.wav --language fr --translate-to en "
    "--model tiny-gemma3n",
)(speech.transcribe)
app.command(
    short_help="Check a workshop laptop: each check says ok, or what to do.",
    epilog="Example: gemma-explore doctor --check widgets --check kernel",
)(workshop.doctor)

tokenizer_app = typer.Typer(
    help="Google's Gemma vocabulary for the tiny bundles: fetched on request, never shipped.",
    short_help="Fetch Google's Gemma vocabulary, or say where it is.",
    no_args_is_help=True,
)
app.add_typer(tokenizer_app, name="tokenizer")
tokenizer_app.command(
    "fetch",
    short_help="Download Google's Gemma tokenizer and check its SHA-256.",
    epilog="Example: gemma-explore tokenizer fetch   (then: gemma-explore doctor)",
)(workshop.tokenizer_fetch)
tokenizer_app.command(
    "status", short_help="Say which tokenizer the tiny bundles use, and where it is."
)(workshop.tokenizer_status)


def main(argv: list[str] | None = None) -> None:
    """The ``gemma-explore`` console script."""
    app(args=argv, prog_name="gemma-explore")
