"""``python -m gemma_explore.app``: the web demo, with :mod:`gemma_explore.app.demo`'s flags."""

from gemma_explore.app.demo import main

if __name__ == "__main__":
    main()
