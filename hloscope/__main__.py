"""`python -m hloscope`: the same as the `hloscope` command."""

from hloscope.cli import main

if __name__ == "__main__":
    main()
