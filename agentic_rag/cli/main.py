"""`agentic-rag`: the whole command line. Each command module registers its commands on the one
typer app (`cli.app`) when imported; this module imports them all and runs it."""

from __future__ import annotations

from agentic_rag.cli import chat, conversations, core, evaluate, serve, testset, tune  # noqa: F401 - they register their commands
from agentic_rag.cli.app import app


def main() -> None:
    app()


if __name__ == "__main__":
    main()
