"""``python -m mpdoctor`` runs the command-line interface."""

from mpdoctor.cli import main

if __name__ == "__main__":
    main()
