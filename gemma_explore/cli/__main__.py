"""``python -m gemma_explore.cli …``: the ``gemma-explore`` script, without installing it."""

from gemma_explore.cli import main

if __name__ == "__main__":
    main()
