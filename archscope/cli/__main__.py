"""`python -m archscope.cli`: the same as the `archscope` command."""

from archscope.cli import main

main()
