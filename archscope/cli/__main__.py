"""`python -m archscope.cli`: the same as the `archscope` command."""

from archscope.cli import main

if __name__ == "__main__":  # a spawned rank (profile --tp) imports this module again: no rerun
    main()
